import { mkdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startFakeModel, type FakeModel } from '../gateway/fake-model.js';
import { runDoctor, type DoctorCheck } from '../cli/doctor.js';
import type { LoadedConfig } from '../cli/command-context.js';
import { buildGraph } from '../pipeline/dag.js';
import { loadConfig } from '../pipeline/config/load.js';
import { resolveInputs, type EngineContext } from '../pipeline/engine.js';
import { Store } from '../pipeline/store/store.js';
import { findOnPath } from '../sandboxes/bubblewrap.js';
import Docker from 'dockerode';
import { dockerBackend } from '../sandboxes/docker.js';
import { builtinStepKinds } from '../steps/index.js';
import { ensureTestImage } from './docker-image.js';
import { calculatorTask } from './fixtures.js';
import { Rig } from './rig.js';

/** The config loaded the way cli/main.ts's load() does. */
function load(configFile: string): LoadedConfig {
  const config = loadConfig(configFile);
  if (!config.ok) throw new Error(JSON.stringify(config.error));
  const graph = buildGraph(config.value, builtinStepKinds);
  if (!graph.ok) throw new Error(JSON.stringify(graph.error));
  const ctx: EngineContext = { config: config.value, graph: graph.value, store: new Store(config.value.storeDir) };
  const inputs = resolveInputs(ctx, graph.value.nodes);
  if (!inputs.ok) throw new Error(JSON.stringify(inputs.error));
  return { config: config.value, graph: graph.value, ctx, inputs: inputs.value };
}

async function doctor(
  rig: Rig,
  env: Record<string, string | undefined>,
  json: boolean,
  floors?: Parameters<typeof runDoctor>[3],
  options?: Parameters<typeof runDoctor>[4],
) {
  let stdout = '';
  let stderr = '';
  const code = await runDoctor(
    load(join(rig.dir, 'bench.config.yaml')),
    { stdout: { write: (s: string) => (stdout += s) }, stderr: { write: (s: string) => (stderr += s) }, env },
    json,
    floors,
    options,
  );
  return { code, stdout, stderr };
}

const MISSING_IMAGE = `sha256:${'ab'.repeat(32)}`;
const NO_COMMIT = 'f'.repeat(40);
const SECRET = 'sk-ant-doctor-test-7d1c9e-never-print-me';

function brokenConfig(): string {
  return `steps:
  materialize: { kind: materialize, matrix: { task: [fix-add] } }
  attempts:
    kind: run
    needs: [materialize]
    matrix: { task: [fix-add], arm: [control], rep: 1 }
    agent: { adapter: claude-code, model: claude-sonnet-4-6 }
    arms: { control: {} }
    sandbox: { backend: docker, egress: none, image: "${MISSING_IMAGE}" }
    model: { upstream: "https://api.anthropic.com" }
  verify:
    kind: verify
    needs: [materialize, attempts]
    matrix: { task: [fix-add], arm: [control], rep: 1 }
    sandbox: { backend: bubblewrap, egress: none }
`;
}

/** A model server on this machine that needs no key (a scripted one): what a local upstream is. */
let localModel: FakeModel;
beforeAll(async () => {
  localModel = await startFakeModel({ turns: [] }, { port: 0 });
});
afterAll(() => localModel.close());

function cleanConfig(upstream = localModel.url, keyVariable?: string): string {
  return `steps:
  materialize: { kind: materialize, matrix: { task: [fix-add] } }
  attempts:
    kind: run
    needs: [materialize]
    matrix: { task: [fix-add], arm: [control, treatment], rep: 2 }
    agent: { adapter: claude-code, model: claude-sonnet-4-6 }
    arms: { control: {}, treatment: {} }
    sandbox: { backend: local, egress: open }
    model: { upstream: "${upstream}"${keyVariable ? `, api_key_env: ${keyVariable}` : ''} }
  verify:
    kind: verify
    needs: [materialize, attempts]
    matrix: { task: [fix-add], arm: [control, treatment], rep: 2 }
    sandbox: { backend: local, egress: open }
`;
}

const engineUp = (await dockerBackend().available()).ok;

let rig: Rig;
/** A PATH with git and tar but no bwrap. */
let pathWithoutBwrap: string;
beforeEach(() => {
  rig = new Rig();
  pathWithoutBwrap = join(rig.dir, 'bin');
  mkdirSync(pathWithoutBwrap);
  for (const tool of ['git', 'tar']) symlinkSync(findOnPath(tool)!, join(pathWithoutBwrap, tool));
});
afterEach(() => rig.cleanup());

const byName = (checks: DoctorCheck[], prefix: string) => checks.filter((c) => c.name.startsWith(prefix));

describe('pairbench doctor', () => {
  it('names every missing prerequisite with its fix, not only the first, and exits 1', async () => {
    calculatorTask(rig.dir, { commit: NO_COMMIT });
    rig.write('bench.config.yaml', brokenConfig());
    const env = { PATH: pathWithoutBwrap, DOCKER_HOST: `unix://${join(rig.dir, 'no-such-docker.sock')}` };

    const r = await doctor(rig, env, true);
    expect(r.code).toBe(1);
    const out = JSON.parse(r.stdout) as { ok: boolean; checks: DoctorCheck[] };
    expect(out.ok).toBe(false);
    const failed = out.checks.filter((c) => !c.ok);
    for (const c of failed) expect(c.fix, c.name).toBeTruthy();
    for (const c of out.checks.filter((c) => c.ok)) expect(c.fix).toBeNull();

    // The docker engine (socket missing) and therefore the image, which cannot be looked up.
    const engine = byName(out.checks, 'sandbox docker (step attempts)')[0]!;
    expect(engine).toMatchObject({ ok: false });
    expect(engine.detail).toContain('no-such-docker.sock');
    expect(engine.fix).toMatch(/start/);
    const image = byName(out.checks, `docker image ${MISSING_IMAGE}`)[0]!;
    expect(image.ok).toBe(false);
    // bwrap is not on this PATH.
    const bwrap = byName(out.checks, 'sandbox bubblewrap (step verify)')[0]!;
    expect(bwrap).toMatchObject({ ok: false, detail: 'bubblewrap (bwrap) is not on PATH' });
    expect(bwrap.fix).toContain('apt-get install bubblewrap');
    // The task's commit is not in its repository.
    const repo = byName(out.checks, 'task repository ')[0]!;
    expect(repo.ok).toBe(false);
    expect(repo.detail).toBe(`commit ${NO_COMMIT} is not in ${join(rig.dir, 'repos', 'calc')}`);
    expect(repo.fix).toContain('tasks/fix-add/task.yaml');
    // A remote upstream without its key.
    const key = byName(out.checks, 'credential ANTHROPIC_API_KEY')[0]!;
    expect(key).toMatchObject({ ok: false });
    expect(key.detail).toContain('https://api.anthropic.com');
    expect(key.fix).toContain('export ANTHROPIC_API_KEY=');
    // And what is there is reported as there.
    expect(byName(out.checks, 'git on PATH')[0]).toMatchObject({ ok: true, detail: join(pathWithoutBwrap, 'git') });
    expect(byName(out.checks, 'tar on PATH')[0]).toMatchObject({ ok: true });
    expect(byName(out.checks, 'free disk for the store')[0]!.ok).toBe(true);
    expect(failed.map((c) => c.name.split(' (')[0]).sort()).toEqual(
      [
        'credential ANTHROPIC_API_KEY',
        `docker image ${MISSING_IMAGE}`,
        'sandbox bubblewrap',
        'sandbox docker',
        `task repository ${join(rig.dir, 'repos', 'calc')} @ ffffffffffff`,
      ].sort(),
    );

    // The text form: one line per check, every MISSING one followed by its fix.
    const text = await doctor(rig, env, false);
    expect(text.code).toBe(1);
    const lines = text.stdout.trimEnd().split('\n');
    expect(lines.filter((l) => l.startsWith('MISSING')).length).toBe(5);
    lines.forEach((l, i) => {
      if (l.startsWith('MISSING')) expect(lines[i + 1]).toMatch(/^ {9}fix: /);
    });
    expect(lines).toContain(
      `MISSING  task repository ${join(rig.dir, 'repos', 'calc')} @ ffffffffffff (task fix-add): commit ${NO_COMMIT} is not in ${join(rig.dir, 'repos', 'calc')}`,
    );
    expect(lines.at(-1)).toBe(`doctor: 5 of ${out.checks.length} prerequisites missing; no attempt was started (the agent canary runs once the rest passes)`);
  });

  it.skipIf(!engineUp)('with a running engine: an image ID it does not hold is named, with how to get it', async () => {
    calculatorTask(rig.dir);
    rig.write('bench.config.yaml', brokenConfig());
    const r = await doctor(rig, { PATH: process.env['PATH'], ANTHROPIC_API_KEY: SECRET }, true);
    expect(r.code).toBe(1);
    const checks = (JSON.parse(r.stdout) as { checks: DoctorCheck[] }).checks;
    expect(byName(checks, 'sandbox docker')[0]!.ok).toBe(true);
    const image = byName(checks, `docker image ${MISSING_IMAGE}`)[0]!;
    expect(image.ok).toBe(false);
    expect(image.detail).toContain('is not in the engine');
    expect(image.fix).toContain('docker load');
    // Memory subtracts what running containers may still claim; it never reads MemTotal.
    const memory = byName(checks, 'free memory for 1 concurrent agent run')[0]!;
    expect(memory.detail).toContain('MemAvailable');
    expect(memory.detail).not.toContain('MemTotal');
    // And the key: set in the environment, but no model.api_key_env names it, so no attempt would send it.
    expect(checks.filter((c) => !c.ok).map((c) => c.name)).toEqual([image.name, 'credential ANTHROPIC_API_KEY (step attempts)']);
  });

  it.skipIf(!engineUp)('with a running engine: a present image passes, and memory a running container may still claim is subtracted', async () => {
    const imageId = await ensureTestImage();
    calculatorTask(rig.dir);
    rig.write('bench.config.yaml', brokenConfig().replace(MISSING_IMAGE, imageId).replace('https://api.anthropic.com', localModel.url));
    const docker = new Docker();
    const limit = 2 * 1024 ** 3;
    const container = await docker.createContainer({
      Image: imageId,
      Cmd: ['/bin/sleep', '300'],
      Labels: { 'pairbench.test': 'doctor' },
      HostConfig: { Memory: limit, NetworkMode: 'none' },
    });
    try {
      await container.start();
      // Prerequisites only: Claude Code cannot start in this test image (it lacks librt.so.1), which
      // the canary names -- test/infra-vs-agent.test.ts covers that.
      const r = await doctor(rig, { PATH: process.env['PATH'] }, true, undefined, { canary: false });
      const checks = (JSON.parse(r.stdout) as { checks: DoctorCheck[] }).checks;
      expect(checks.filter((c) => !c.ok)).toEqual([]);
      expect(r.code).toBe(0);
      expect(byName(checks, `docker image ${imageId}`)[0]!.detail).toMatch(/^present in the engine \((amd64|arm64), [\d.]+ [GM]iB\)$/);
      const memory = byName(checks, 'free memory for 1 concurrent agent run')[0]!.detail;
      const m =
        /^([\d.]+) GiB free after what is committed \(MemAvailable ([\d.]+) GiB; minus ([\d.]+) GiB that (\d+) running containers? may still claim/.exec(
          memory,
        );
      expect(m, memory).not.toBeNull();
      const [free, available, reserved, count] = m!.slice(1).map(Number) as [number, number, number, number];
      expect(count).toBeGreaterThanOrEqual(1);
      expect(reserved).toBeGreaterThanOrEqual(1.9); // our container's 2 GiB limit, minus the little sleep uses
      expect(Math.abs(free - (available - reserved))).toBeLessThanOrEqual(0.15);
    } finally {
      await container.remove({ force: true });
    }
  });

  it('a clean local-backend config passes every check (exit 0)', async () => {
    calculatorTask(rig.dir);
    rig.write('bench.config.yaml', cleanConfig());
    const r = await doctor(rig, { PATH: process.env['PATH'] }, false);
    expect(r.stdout.split('\n').filter((l) => l.startsWith('MISSING'))).toEqual([]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^ok {7}sandbox local \(steps attempts, verify\): /m);
    expect(r.stdout).toMatch(/^ok {7}agent claude-code \(step attempts\): @anthropic-ai\/claude-code 2\.1\.197 installed \(the pinned version\)$/m);
    expect(r.stdout).toMatch(/^ok {7}task repository .* @ [0-9a-f]{12} \(task fix-add\): commit present$/m);
    // 4 concurrent runs (the global default) x 1 GiB.
    expect(r.stdout).toMatch(
      /^ok {7}free memory for 4 concurrent agent runs: .* free after what is committed \(MemAvailable .*\); need 4\.0 GiB \(4 x 1\.0 GiB\)$/m,
    );
    expect(r.stdout).not.toContain('credential'); // a local upstream needs no key
    expect(r.stdout.trimEnd().split('\n').at(-1)).toMatch(/^doctor: all \d+ prerequisites ok$/);
  });

  it("a provider key is proven by one request through the gateway: a refused key fails doctor naming its variable and the provider's words", async () => {
    const { createServer } = await import('node:http');
    const seen: { path: string; key: string; body: string }[] = [];
    // A provider on loopback: it knows one key, and answers count_tokens as Anthropic's API does.
    const provider = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        const key = String(req.headers['x-api-key'] ?? '');
        seen.push({ path: req.url ?? '', key, body });
        if (key !== SECRET)
          return res
            .writeHead(401, { 'content-type': 'application/json' })
            .end('{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}');
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"input_tokens":8}');
      });
    });
    await new Promise<void>((r) => provider.listen(0, '127.0.0.1', r));
    const upstream = `http://127.0.0.1:${(provider.address() as { port: number }).port}`;
    try {
      calculatorTask(rig.dir);
      rig.write('bench.config.yaml', cleanConfig(upstream, 'ANTHROPIC_API_KEY'));
      for (const json of [false, true]) {
        const r = await doctor(rig, { PATH: process.env['PATH'], ANTHROPIC_API_KEY: SECRET }, json, undefined, { canary: false });
        expect(r.code, r.stdout).toBe(0);
        expect(r.stdout + r.stderr).not.toContain(SECRET);
        expect(r.stdout).toContain('ANTHROPIC_API_KEY');
        expect(r.stdout).toContain(`accepted by ${upstream}`);
      }
      // One request per doctor, the cheapest there is (free), carrying the key the gateway added.
      expect(seen).toHaveLength(2);
      for (const x of seen) {
        expect(x).toMatchObject({ path: '/v1/messages/count_tokens', key: SECRET });
        expect(JSON.parse(x.body)).toMatchObject({ model: 'claude-sonnet-4-6' });
      }

      // A key the provider refuses: exit 1, the variable and the provider's own words named, in one request.
      seen.length = 0;
      const wrong = 'sk-ant-wrong-key-for-doctor';
      const r = await doctor(rig, { PATH: process.env['PATH'], ANTHROPIC_API_KEY: wrong }, true);
      expect(r.code).toBe(1);
      expect(seen.map((x) => x.key)).toEqual([wrong]);
      const check = byName((JSON.parse(r.stdout) as { checks: DoctorCheck[] }).checks, 'credential ANTHROPIC_API_KEY')[0]!;
      expect(check).toMatchObject({ ok: false });
      expect(check.detail).toBe(`${upstream} refused the key in ANTHROPIC_API_KEY: HTTP 401: authentication_error: invalid x-api-key`);
      expect(check.fix).toContain('export ANTHROPIC_API_KEY=');
      expect(r.stdout).not.toContain(wrong);
      // The canary (real agents) does not start while a prerequisite is missing.
      expect(r.stdout).not.toContain('agent canary');

      // A step that names no variable sends no key at all: doctor says so before any request.
      seen.length = 0;
      rig.write('bench.config.yaml', cleanConfig('https://api.anthropic.com'));
      const none = await doctor(rig, { PATH: process.env['PATH'], ANTHROPIC_API_KEY: SECRET }, false, undefined, { canary: false });
      expect(none.code).toBe(1);
      expect(none.stdout).toMatch(/^MISSING {2}credential ANTHROPIC_API_KEY \(step attempts\): no model\.api_key_env/m);
      expect(none.stdout).toContain('set model.api_key_env: ANTHROPIC_API_KEY');
      expect(seen).toEqual([]);
    } finally {
      provider.close();
    }
  });

  it('an upstream and no api_key_env: a provider is refused naming the field; a model on this machine is probed without a key, and one that is not there is named', async () => {
    calculatorTask(rig.dir);
    rig.write('bench.config.yaml', cleanConfig('https://api.anthropic.com'));
    const provider = await doctor(rig, { PATH: process.env['PATH'] }, false, undefined, { canary: false });
    expect(provider.code).toBe(1);
    expect(provider.stdout).toContain('MISSING  credential ANTHROPIC_API_KEY (step attempts): no model.api_key_env');
    expect(provider.stdout).toContain('fix: set model.api_key_env: ANTHROPIC_API_KEY in step attempts');
    rig.write('bench.config.yaml', cleanConfig(localModel.url));
    const local = await doctor(rig, { PATH: process.env['PATH'] }, false, undefined, { canary: false });
    expect(local.code, local.stdout).toBe(0);
    expect(local.stdout).toMatch(
      /^ok {7}model at http:\/\/127\.0\.0\.1:\d+ \(step attempts: no model\.api_key_env, a model on this machine\): reached without a key/m,
    );
    rig.write('bench.config.yaml', cleanConfig('http://127.0.0.1:9'));
    const gone = await doctor(rig, { PATH: process.env['PATH'] }, false, undefined, { canary: false });
    expect(gone.code).toBe(1);
    expect(gone.stdout).toContain(
      'MISSING  model at http://127.0.0.1:9 (step attempts: no model.api_key_env, a model on this machine): http://127.0.0.1:9 was not reached',
    );
    expect(gone.stdout).toContain('fix: start the model server, or correct model.upstream in step attempts');
  });

  it('free disk and memory below their floors: says how much is free and how much is needed', async () => {
    calculatorTask(rig.dir);
    rig.write('bench.config.yaml', cleanConfig());
    const r = await doctor(rig, { PATH: process.env['PATH'] }, true, { diskBytes: 2 ** 60, memoryPerRunBytes: 2 ** 58 });
    expect(r.code).toBe(1);
    const checks = (JSON.parse(r.stdout) as { checks: DoctorCheck[] }).checks;
    const disk = byName(checks, 'free disk for the store')[0]!;
    expect(disk.ok).toBe(false);
    expect(disk.detail).toMatch(/^[\d.]+ [GM]iB free on the file system of .*\.pairbench; need 1073741824\.0 GiB$/);
    expect(disk.fix).toContain('pairbench gc');
    const memory = byName(checks, 'free memory for 4 concurrent agent runs')[0]!;
    expect(memory.ok).toBe(false);
    expect(memory.fix).toContain('concurrency.kinds.run');
  });
});
