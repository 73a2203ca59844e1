import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { fillInProcess } from '../bench/fill-in-process.js';
import { Rig } from './rig.js';

// The engine bench fills its 20k and 100k stores in-process: what it makes must be what a run
// of the real commands makes, or the bench measures a store no user has.
let filled: Rig;
let ran: Rig;
beforeEach(() => {
  filled = new Rig();
  ran = new Rig();
});
afterEach(() => {
  filled.cleanup();
  ran.cleanup();
});

const config = `concurrency: { global: 4 }
steps:
  attempt:
    kind: command
    matrix: { task: 3, arm: [control, treatment], rep: 2 }
    deps: [input.txt]
    cmd: echo "$PAIRBENCH_NODE" > o
    outs: [o]
  score:
    kind: command
    needs: [attempt]
    matrix: { task: 3, arm: [control, treatment], rep: 2 }
    cmd: cat "$PAIRBENCH_IN/attempt/{{matrix.task}}/{{matrix.arm}}/{{matrix.rep}}/o" > s
    outs: [s]
`;

it('a store filled in-process is the store a run makes: every node cached, the same keys and outputs', async () => {
  for (const r of [filled, ran]) {
    r.write('bench.config.yaml', config);
    r.write('input.txt', 'shared input\n');
  }
  const fill = await fillInProcess(join(filled.dir, 'bench.config.yaml'), {
    attempt: (nodeId) => ({ out: 'o', bytes: Buffer.from(`${nodeId}\n`) }),
    score: (nodeId, outputOf) => ({ out: 's', bytes: outputOf(nodeId.replace(/^score\//, 'attempt/')) }),
  });
  expect(fill.executed).toBe(24);
  expect((await ran.cli('run')).code).toBe(0);
  const nodes = async (r: Rig) =>
    (JSON.parse((await r.cli('plan', '--json')).stdout) as { nodes: { node: string; status: string; key: string }[] }).nodes.map((n) => [
      n.node,
      n.status,
      n.key,
    ]);
  const made = await nodes(filled);
  expect(made.every(([, status]) => status === 'cached')).toBe(true);
  expect(made).toEqual(await nodes(ran));
  expect(await filled.outputText('score/2/treatment/1', 's')).toBe('attempt/2/treatment/1\n');
});
