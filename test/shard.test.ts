import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseShard, shardOfTask } from '../pipeline/shard.js';
import { calculatorTask, copyTask, pairedCohortConfig } from './fixtures.js';
import { Rig } from './rig.js';

// CI sharding without a queue: N jobs sharing a cache split the cohort by task.
let rig: Rig;
const TASKS = ['t1', 't2', 't3', 't4', 't5', 't6'];
beforeEach(() => {
  rig = new Rig();
  calculatorTask(rig.dir);
  for (const t of TASKS) copyTask(rig.dir, 'fix-add', t);
  rig.write('fixtures/CLAUDE.md', 'Use + in add().\n');
  rig.write('bench.config.yaml', pairedCohortConfig(TASKS));
});
afterEach(() => rig.cleanup());

type Node = { node: string; status: string; because?: string };

describe('run --shard i/N', () => {
  it('shards 1/3..3/3 then a plain run execute every node exactly once', async () => {
    const executed = new Map<string, number>();
    const count = (stdout: string) => {
      for (const n of JSON.parse(stdout).nodes as Node[]) if (n.status === 'executed') executed.set(n.node, (executed.get(n.node) ?? 0) + 1);
    };
    const perShard: string[][] = [];
    for (const i of [1, 2, 3]) {
      const r = await rig.cli('run', '--shard', `${i}/3`, '--json');
      expect(r.code, r.stderr).toBe(0); // the other shards' nodes are skipped by design
      const nodes = JSON.parse(r.stdout).nodes as Node[];
      perShard.push(nodes.filter((n) => n.status === 'executed').map((n) => n.node));
      // A shard runs whole task chains: every node of a task it owns, none of another's.
      for (const n of nodes.filter((x) => x.status === 'executed')) expect(shardOfTask(n.node.split('/')[1]!, 3)).toBe(i);
      expect(nodes.find((n) => n.node === 'analyze')).toMatchObject({ status: 'skipped' });
      // The last shard finds every task's chain cached: what it leaves is only what gathers them.
      if (i === 3)
        expect(nodes.find((n) => n.node === 'analyze')!.because).toBe('not in shard 3/3: it gathers every task: the final run without --shard builds it');
      count(r.stdout);
    }
    expect(perShard.every((s) => s.length > 0)).toBe(true);
    const final = await rig.cli('run', '--json');
    expect(final.code, final.stderr).toBe(0);
    count(final.stdout);
    const all = JSON.parse(final.stdout).nodes as Node[];
    expect(all.map((n) => n.node).sort()).toEqual([...executed.keys()].sort());
    expect([...executed.values()].every((n) => n === 1)).toBe(true);
    expect((JSON.parse(final.stdout).nodes as Node[]).filter((n) => n.status === 'executed').map((n) => n.node)).toEqual(['analyze']);
  });

  it('refuses a malformed shard', async () => {
    expect(parseShard('0/3').ok).toBe(false);
    expect(parseShard('4/3').ok).toBe(false);
    const r = await rig.cli('run', '--shard', '2of3');
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--shard takes i/N with 1 <= i <= N (e.g. --shard 2/3), not "2of3"');
  });
});
