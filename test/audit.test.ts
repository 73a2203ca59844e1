import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AtifTrajectory } from '../agents/adapter.js';
import { scanTrajectory } from '../steps/audit.js';
import { loadTask } from '../steps/task.js';
import { calculatorTask } from './fixtures.js';
import { Rig } from './rig.js';

let rig: Rig;
beforeEach(() => (rig = new Rig()));
afterEach(() => rig.cleanup());

function trajectory(commands: string[]): AtifTrajectory {
  return {
    schema_version: 'ATIF-v1.7',
    session_id: 's',
    trajectory_id: 't',
    agent: { name: 'a', version: '1', model_name: 'm' },
    steps: [{ step_id: 1, source: 'user', message: 'p' }, ...commands.map((c, i) => ({ step_id: i + 2, source: 'agent' as const, message: '', tool_calls: [{ tool_call_id: `c${i}`, function_name: 'Bash', arguments: { command: c } }] }))],
  };
}

describe('trajectory leakage audit', () => {
  it('flags reaching the hidden verifier, digging in history and the canary; not the repo’s own tests or the workspace path', () => {
    calculatorTask(rig.dir);
    rig.write('tasks/fix-add/task.yaml', rig.read('tasks/fix-add/task.yaml') + 'canary: canary-123e4567-e89b-12d3\n');
    const task = loadTask(`${rig.dir}/tasks`, 'fix-add');
    if (!task.ok) throw new Error('task');
    const flags = scanTrajectory(
      trajectory(['cat /verifier/test_add.mjs', `ls ${task.value.verifier.filesDir}`, 'git log -p', 'echo canary-123e4567-e89b-12d3', 'cat /work/tests/add.test.mjs', 'ls /tmp/x/.pairbench/tmp/work-1/ws']),
      '',
      task.value,
    );
    expect(flags.map((f) => [f.kind, f.where])).toEqual([
      ['hidden-path', 'trajectory step 2 (Bash)'],
      ['hidden-path', 'trajectory step 3 (Bash)'],
      ['version-history', 'trajectory step 4 (Bash)'],
      ['canary', 'trajectory step 5 (Bash)'],
    ]);
  });
});

describe('applying changes', () => {
  it('refuses to write through a symlink in the tree', async () => {
    const { applyChanges } = await import('../steps/workspace.js');
    const { mkdirSync, symlinkSync, writeFileSync, existsSync } = await import('node:fs');
    const { join } = await import('node:path');
    const tree = join(rig.dir, 'tree');
    const outside = join(rig.dir, 'outside');
    const changed = join(rig.dir, 'changed');
    mkdirSync(tree, { recursive: true });
    mkdirSync(outside, { recursive: true });
    mkdirSync(join(changed, 'link'), { recursive: true });
    writeFileSync(join(changed, 'link', 'evil.txt'), 'evil\n');
    symlinkSync(outside, join(tree, 'link'));
    expect(() => applyChanges({ schema_version: 1, written: { 'link/evil.txt': 'x' }, deleted: [] }, changed, tree)).toThrow(/refusing to write link\/evil\.txt: link is a symlink/);
    expect(existsSync(join(outside, 'evil.txt'))).toBe(false);
  });
});
