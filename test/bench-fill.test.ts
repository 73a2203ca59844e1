import { afterEach, beforeEach, expect, it } from 'vitest';
import { ENGINE_COMMANDS, writeConfig } from '../bench/engine-workload.js';
import { fillInProcess } from '../bench/fill-in-process.js';
import { Rig } from './rig.js';

// The engine bench fills its 20k and 100k stores in-process: what it makes must be what a run
// of the real commands makes, or the bench measures a store no user has. Its own workload, small.
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

it('a store filled in-process is the store a run makes: every node cached, the same keys and outputs', async () => {
  writeConfig(ran.dir, 3, 2);
  const fill = await fillInProcess(writeConfig(filled.dir, 3, 2), ENGINE_COMMANDS);
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
