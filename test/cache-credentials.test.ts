/**
 * Where a config sends records and credentials, and where a pull request's job lets it. A
 * hostile config names its own cache server (a listener on 127.0.0.2 that records every
 * request) and the signing keys' variable as its credential. Run as a trusted config would be,
 * it reaches that server (the test is not vacuous); with --ignore-config-cache (what the action
 * passes on every pull request) it gets no request at all; the workflow's own remote
 * (--remote-cache, --cache-auth-env) gets only its own credential, and a read-only run writes
 * nothing there; and a config's auth_env is never sent to a remote of another origin.
 */
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Rig } from './rig.js';

interface Seen {
  method: string;
  authorization: string | undefined;
}

function listener(host: string): { server: Server; url: () => string; seen: Seen[] } {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    seen.push({ method: req.method ?? '', authorization: req.headers.authorization });
    req.resume();
    req.on('end', () => res.writeHead(404).end());
  });
  return { server, url: () => `http://${host}:${(server.address() as { port: number }).port}`, seen };
}

const KEYS = 'ci:5e1f0a9c3b7d2e48';
const config = (remote: string) => `cache: { remote: "${remote}", auth_env: PAIRBENCH_CACHE_KEYS }
steps:
  build: { kind: command, cmd: 'echo built > out.txt', outs: [out.txt] }
`;

describe("a config's cache, and a pull request's job", () => {
  const theirs = listener('127.0.0.2');
  const ours = listener('127.0.0.1');
  let rig: Rig;
  beforeAll(async () => {
    await new Promise<void>((r) => theirs.server.listen(0, '127.0.0.2', r));
    await new Promise<void>((r) => ours.server.listen(0, '127.0.0.1', r));
    rig = new Rig();
    rig.env = { PAIRBENCH_CACHE_KEYS: KEYS, WORKFLOW_CACHE_AUTH: 'Bearer workflow-credential' };
    rig.write('bench.config.yaml', config(theirs.url()));
  });
  afterAll(() => {
    theirs.server.close();
    ours.server.close();
    rig.cleanup();
  });

  it('trusted, the config reaches its server with the keys as its credential (what a pull request must not do)', async () => {
    const r = await rig.cli('run', '--store', `${rig.dir}/store-trusted`);
    expect(r.code, r.stderr).toBe(0);
    expect(theirs.seen.some((s) => s.method === 'PUT' && s.authorization === KEYS)).toBe(true);
    theirs.seen.length = 0;
  });

  it("--ignore-config-cache: the config's server gets nothing; the workflow's remote gets its own credential only, and no write", async () => {
    const bare = await rig.cli('run', '--store', `${rig.dir}/store-pr-1`, '--ignore-config-cache');
    expect(bare.code, bare.stderr).toBe(0);
    const named = await rig.cli(
      'run',
      '--store',
      `${rig.dir}/store-pr-2`,
      '--ignore-config-cache',
      '--remote-cache',
      ours.url(),
      '--cache-mode',
      'read-only',
      '--cache-auth-env',
      'WORKFLOW_CACHE_AUTH',
    );
    expect(named.code, named.stderr).toBe(0);
    expect(theirs.seen).toEqual([]);
    expect(ours.seen.length).toBeGreaterThan(0);
    expect(ours.seen.filter((s) => s.method === 'PUT')).toEqual([]);
    expect(ours.seen.every((s) => s.authorization === 'Bearer workflow-credential')).toBe(true);
  });

  it("a config's auth_env goes only to the config's own origin: --remote-cache elsewhere gets no credential", async () => {
    ours.seen.length = 0;
    const r = await rig.cli('run', '--store', `${rig.dir}/store-other`, '--remote-cache', ours.url(), '--cache-mode', 'read-only');
    expect(r.code, r.stderr).toBe(0);
    expect(ours.seen.length).toBeGreaterThan(0);
    expect(ours.seen.every((s) => s.authorization === undefined)).toBe(true);
    expect(theirs.seen).toEqual([]);
  });
});
