import { execa } from 'execa';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { dockerBackend } from '../sandboxes/docker.js';

// The docker client loads dockerode without gRPC and ssh2, which it needs only for BuildKit
// sessions and an ssh:// engine: each is loaded when first used, and still works then.
const availability = await dockerBackend().available();
const required = process.env['PAIRBENCH_REQUIRE_SANDBOXES'] === '1';
const client = join(process.cwd(), 'dist', 'sandboxes', 'docker-client.js');

/** Runs `body` in a fresh Node process (its own module cache) with the built client imported; its JSON output. */
async function inFreshProcess(body: string, env: Record<string, string> = {}): Promise<any> {
  const script = `
    import { createRequire } from 'node:module';
    const { dockerClient, dockerEndpoint } = await import(${JSON.stringify(client)});
    const require = createRequire(${JSON.stringify(client)});
    /** Files of a package the process has really loaded (its entry alone is where a stand-in sits). */
    const loaded = (pkg) => Object.entries(require.cache).filter(([p, m]) => p.includes('/node_modules/' + pkg + '/') && m.children?.length).map(([p]) => p);
    ${body}`;
  const r = await execa(process.execPath, ['--input-type=module', '-e', script], {
    env: { PATH: process.env['PATH'], ...env },
    extendEnv: false,
    reject: false,
  });
  expect(r.exitCode, r.stderr).toBe(0);
  return JSON.parse(r.stdout);
}

describe.skipIf(!availability.ok && !required)('the docker client', () => {
  it('talks to the engine without loading gRPC, protobufjs or ssh2', async () => {
    const out = await inFreshProcess(`
      const images = await dockerClient(dockerEndpoint(process.env)).listImages();
      console.log(JSON.stringify({ images: images.length, heavy: ['@grpc/grpc-js', '@grpc/proto-loader', 'protobufjs', 'ssh2'].flatMap(loaded) }));`);
    expect(out.images).toBeGreaterThan(0);
    expect(out.heavy).toEqual([]);
  });
});

it('an ssh:// engine still gets the real ssh2 (a closed loopback port is refused by it), and gRPC its real exports', async () => {
  const out = await inFreshProcess(
    `
      let error = '';
      try { await dockerClient(dockerEndpoint(process.env)).ping(); } catch (e) { error = e.message; }
      const grpc = require(require.resolve('@grpc/grpc-js', { paths: [require.resolve('dockerode')] }));
      console.log(JSON.stringify({ error, ssh2: loaded('ssh2').length > 0, server: typeof grpc.Server, grpc: loaded('@grpc/grpc-js').length > 0 }));`,
    { DOCKER_HOST: 'ssh://nobody@127.0.0.1:1', NODE_NO_WARNINGS: '1' },
  );
  expect(out.error).toMatch(/ECONNREFUSED 127\.0\.0\.1:1/);
  expect(out.ssh2).toBe(true);
  expect(out.server).toBe('function');
  expect(out.grpc).toBe(true);
});
