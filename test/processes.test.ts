import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Rig } from './rig.js';

// These tests drive the built CLI (dist/, made by `npm test`) as separate processes.
let rig: Rig;
beforeEach(() => (rig = new Rig()));
afterEach(() => rig.cleanup());

function config(n: number, sleep: number, jobs: number): string {
  return `concurrency: { global: ${jobs} }
steps:
  work:
    kind: command
    matrix: { i: ${n} }
    cmd: sleep ${sleep}; echo "$PAIRBENCH_NODE" >> ${rig.execLog}; echo $PAIRBENCH_MATRIX_I > o
    outs: [o]
  total:
    kind: command
    needs: [work]
    cmd: echo "$PAIRBENCH_NODE" >> ${rig.execLog}; cat "$PAIRBENCH_IN"/work/*/o | sort -n | tr '\\n' ' ' > total
    outs: [total]
`;
}

async function until(cond: () => boolean, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('crash safety', () => {
  it('kill -9 in the middle of a run: completed nodes are not redone and nothing is corrupt', async () => {
    rig.write('bench.config.yaml', config(8, 0.4, 2));
    const first = rig.spawn('run');
    await until(() => rig.executions().length >= 3);
    first.kill('SIGKILL');
    await first.done;
    const finishedBefore = new Set(rig.executions());

    const plan = JSON.parse((await rig.cli('plan', '--json')).stdout) as { nodes: { node: string; status: string; reasons?: string[] }[] };
    const cached = plan.nodes.filter((n) => n.status === 'cached').map((n) => n.node);
    // Every node that recorded a result before the kill is cached; nothing reads as corrupt.
    expect(cached.length).toBeGreaterThanOrEqual(2);
    for (const c of cached) expect(finishedBefore.has(c)).toBe(true);
    expect(plan.nodes.flatMap((n) => n.reasons ?? []).join('\n')).not.toMatch(/corrupt|does not match/);

    rig.clearExecutions();
    const second = rig.spawn('run');
    const r = await second.done;
    expect(r.code).toBe(0);
    expect(r.stderr).not.toContain('warning');
    expect(r.stderr).not.toContain('waiting'); // the killed run's locks are recovered at once (its pid is gone)
    const redone = rig.executions();
    for (const c of cached) expect(redone).not.toContain(c);
    expect(redone).toContain('total');
    expect((await rig.cli('plan')).stdout).toContain('nothing to run: all 9 nodes are cached');
    // The killed run's temp files are collected by gc.
    const gc = JSON.parse((await rig.cli('gc', '--json')).stdout);
    expect(gc.removed_temp.length).toBeGreaterThanOrEqual(1); // the killed run's work directories
    const tmp = join(rig.dir, '.pairbench', 'tmp');
    expect(existsSync(tmp) ? readdirSync(tmp) : []).toEqual([]);
  });
});

describe('two concurrent runs on one store', () => {
  it('execute every node exactly once, and the waiter says it is waiting', async () => {
    rig.write('bench.config.yaml', config(6, 0.3, 3));
    const a = rig.spawn('run');
    const b = rig.spawn('run');
    const [ra, rb] = await Promise.all([a.done, b.done]);
    expect(ra.code).toBe(0);
    expect(rb.code).toBe(0);
    const ran = rig.executions();
    expect(ran.sort()).toEqual(['total', 'work/1', 'work/2', 'work/3', 'work/4', 'work/5', 'work/6']);
    const both = ra.stderr + rb.stderr;
    expect(both).toMatch(/waiting work\/\d: another run is building it \(pid \d+ on .* since .*\)|cached {2}\S+ \(built by a concurrent run\)/);
    const total = JSON.parse((await rig.cli('explain', 'total', '--json')).stdout);
    expect(total.status).toBe('cached');
    expect(readFileSync(join(rig.dir, '.pairbench', 'STORE'), 'utf8')).toContain('pairbench_store');
  });
});
