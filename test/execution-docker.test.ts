import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { dockerBackend } from '../sandboxes/docker.js';
import { ensureTestImage } from './docker-image.js';
import { calculatorTask } from './fixtures.js';
import { Rig } from './rig.js';

// run and verify through the docker backend: a fresh container per node, pinned by image ID.
const availability = await dockerBackend().available();
const required = process.env['PAIRBENCH_REQUIRE_SANDBOXES'] === '1';

let rig: Rig;
beforeEach(() => {
  rig = new Rig();
  calculatorTask(rig.dir);
});
afterEach(() => rig.cleanup());

describe.skipIf(!availability.ok && !required)('run and verify in docker', () => {
  it('oracle passes and nop fails; the image ID is in the receipt; no container is left', async () => {
    const image = await ensureTestImage();
    for (const [adapter, pass] of [
      ['oracle', true],
      ['nop', false],
    ] as const) {
      rig.write(
        'bench.config.yaml',
        `steps:
  materialize: { kind: materialize, matrix: { task: [fix-add] } }
  attempts:
    kind: run
    needs: [materialize]
    matrix: { task: [fix-add], arm: [control], rep: 1 }
    agent: { adapter: ${adapter} }
    arms: { control: {} }
    sandbox: { backend: docker, egress: none, image: "${image}", resources: { cpus: 1, memory_mb: 256, pids: 128 } }
  verify:
    kind: verify
    needs: [materialize, attempts]
    matrix: { task: [fix-add], arm: [control], rep: 1 }
    sandbox: { backend: docker, egress: none, image: "${image}" }
`,
      );
      const r = await rig.cli('run');
      expect(r.code, r.stderr).toBe(0);
      const verdict = await rig.outputJson('verify/fix-add/control/1', 'verdict.json');
      expect(verdict.pass).toBe(pass);
      expect(verdict.sandbox).toMatchObject({ backend: 'docker', isolation: 'container', image_id: image });
      const result = await rig.outputJson('attempts/fix-add/control/1', 'result.json');
      expect(result.sandbox).toMatchObject({
        backend: 'docker',
        image_id: image,
        egress_mode: 'none',
        egress_enforced: true,
        resources: { cpus: 1, memory_mb: 256, pids: 128 },
      });
    }
    for (const node of ['attempts/fix-add/control/1', 'verify/fix-add/control/1']) {
      // This process's (the CLI ran in it): another test file's run of the same node is not this one's leftover.
      const left = await execa('docker', ['ps', '-aq', '--filter', `label=pairbench.node=${node}`, '--filter', `label=pairbench.pid=${process.pid}`]);
      expect(left.stdout.trim()).toBe('');
    }
  });

  it('SIGTERM mid-verify: the run exits with every container of its own already removed', async () => {
    const image = await ensureTestImage();
    // A verifier that never ends by itself: the run is stopped while it runs.
    const task = join(rig.dir, 'tasks', 'fix-add', 'task.yaml');
    writeFileSync(
      task,
      readFileSync(task, 'utf8').replace('add_works: node "$VERIFIER_DIR/test_add.mjs"', 'add_works: sleep 600').replace('timeout: 30', 'timeout: 900'),
    );
    rig.write(
      'bench.config.yaml',
      `steps:
  materialize: { kind: materialize, matrix: { task: [fix-add] } }
  attempts:
    kind: run
    needs: [materialize]
    matrix: { task: [fix-add], arm: [control], rep: 1 }
    agent: { adapter: oracle }
    arms: { control: {} }
  verify:
    kind: verify
    needs: [materialize, attempts]
    matrix: { task: [fix-add], arm: [control], rep: 1 }
    repeats: 1
    sandbox: { backend: docker, egress: none, image: "${image}" }
`,
    );
    // Docker's own event stream (from before the run started) says when a verifier's command of this run has started.
    const since = String(Math.floor(Date.now() / 1000) - 1);
    const run = rig.spawn('run');
    const mine = ['--filter', `label=pairbench.pid=${run.pid}`];
    const events = execa('docker', [
      'events',
      '--since',
      since,
      ...mine,
      '--filter',
      'label=pairbench.role=verifier',
      '--filter',
      'event=exec_start',
      '--format',
      '{{.Action}}',
    ]);
    const verifying = new Promise<void>((resolve) => events.stdout!.on('data', (d: Buffer) => d.toString().includes('sleep 600') && resolve()));
    await Promise.race([verifying, run.done.then((r) => Promise.reject(new Error(`the run ended before its verifier started: ${r.code}\n${r.stderr}`)))]);
    events.kill();
    await events.catch(() => undefined);
    expect((await execa('docker', ['ps', '-aq', ...mine])).stdout.trim()).not.toBe('');
    run.kill('SIGTERM');
    const r = await run.done;
    expect(r.code, r.stderr).toBe(130);
    expect(r.stderr).toContain('interrupted');
    // At its exit, not some seconds later: nothing of this run is left for a reaper.
    expect((await execa('docker', ['ps', '-aq', ...mine])).stdout.trim()).toBe('');
  });

  it('wall time is the agent process alone: container start and the harness around it are reported apart, under concurrency', async () => {
    const image = await ensureTestImage();
    // Eight attempts of an agent that sleeps 0.3 s, four at a time: each container start (hundreds of
    // ms, slower when four start together) is the harness's time, never the agent's.
    rig.write(
      'bench.config.yaml',
      `concurrency: { global: 4 }
steps:
  materialize: { kind: materialize, matrix: { task: [fix-add] } }
  attempts:
    kind: run
    needs: [materialize]
    matrix: { task: [fix-add], arm: [control], rep: 8 }
    agent: { adapter: command, command: 'sleep 0.3' }
    arms: { control: {} }
    sandbox: { backend: docker, egress: none, image: "${image}" }
`,
    );
    const r = await rig.cli('run', '--json');
    expect(r.code, r.stderr).toBe(0);
    const nodes = (JSON.parse(r.stdout).nodes as { node: string; key: string }[]).filter((n) => n.node.startsWith('attempts/'));
    expect(nodes).toHaveLength(8);
    for (const n of nodes) {
      const result = rig.recordOutputJson(n.key, 'result.json') as { wall_ms: number; harness_ms: number; started_at: string; ended_at: string };
      expect(result.wall_ms, n.node).toBeGreaterThanOrEqual(300);
      expect(result.wall_ms, n.node).toBeLessThan(3_000); // its own 0.3 s, never the container's start (harness_ms, below)
      // The container's start and removal are there, apart.
      expect(result.harness_ms, n.node).toBeGreaterThan(200);
      expect(Date.parse(result.ended_at) - Date.parse(result.started_at)).toBeGreaterThanOrEqual(result.wall_ms + result.harness_ms - 5);
    }
  });
});
