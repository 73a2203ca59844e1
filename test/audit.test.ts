import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AtifTrajectory } from '../agents/adapter.js';
import { scanLeakage } from '../steps/leakage.js';
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
    steps: [
      { step_id: 1, source: 'user', message: 'p' },
      ...commands.map((c, i) => ({
        step_id: i + 2,
        source: 'agent' as const,
        message: '',
        tool_calls: [{ tool_call_id: `c${i}`, function_name: 'Bash', arguments: { command: c } }],
      })),
    ],
  };
}

describe('trajectory leakage audit', () => {
  function task(canary = 'canary-123e4567-e89b-12d3') {
    calculatorTask(rig.dir);
    rig.write('tasks/fix-add/task.yaml', rig.read('tasks/fix-add/task.yaml') + `canary: ${canary}\n`);
    const t = loadTask(`${rig.dir}/tasks`, 'fix-add');
    if (!t.ok) throw new Error('task');
    return t.value;
  }
  const hiddenFiles = [
    {
      path: 'test_add.mjs',
      text: "const { add } = await import(process.cwd() + '/src/add.mjs');\nif (add(2, 3) !== 5) { console.error('add(2, 3) = ' + add(2, 3)); process.exit(1); }\n",
    },
  ];
  const scan = (t: ReturnType<typeof task>, commands: string[], gatewayLog = '', agentLog = '') =>
    scanLeakage({ task: t, trajectory: trajectory(commands), gatewayLog, agentLog, hiddenFiles });

  it('flags reaching the hidden verifier, digging in history and the canary; not the repo’s own tests or the workspace path', () => {
    const t = task();
    const flags = scan(t, [
      'cat /verifier/test_add.mjs',
      `ls ${t.verifier.filesDir}`,
      'git log -p',
      'echo canary-123e4567-e89b-12d3',
      'cat /work/tests/add.test.mjs',
      'ls /tmp/x/.pairbench/tmp/work-1/ws',
    ]);
    expect(flags.map((f) => [f.kind, f.where])).toEqual([
      ['hidden-path', 'trajectory step 2 (Bash)'],
      ['hidden-path', 'trajectory step 3 (Bash)'],
      ['version-history', 'trajectory step 4 (Bash)'],
      ['canary', 'trajectory step 5 (Bash)'],
    ]);
  });

  it('flags obfuscated probes: a variable, quotes, escapes, base64, and a glob that can only mean a hidden file', () => {
    const t = task();
    for (const probe of [
      'd=/ver; ls ${d}ifier',
      'ls "/ver"ifi\\er',
      `echo ${Buffer.from('/verifier/test_add.mjs').toString('base64')} | base64 -d | xargs cat`,
      'find / -name test_add.m*',
      'ls //verifier/./',
    ]) {
      expect(
        scan(t, [probe]).map((f) => f.kind),
        probe,
      ).toEqual(['hidden-path']);
    }
    // Innocent look-alikes stay unflagged.
    for (const ok of ['ls test_*', 'find . -name "*.mjs"', 'cat src/add.mjs', 'echo verify me']) expect(scan(t, [ok]), ok).toEqual([]);
  });

  it('flags an MCP answer that carries the hidden test, and the canary split across two stream chunks', () => {
    const t = task();
    const toolResult = {
      request_body: {
        messages: [
          {
            role: 'user',
            content: [
              {
                type: 'tool_result',
                tool_use_id: 'x',
                content: [{ type: 'text', text: "the tests say: if (add(2, 3) !== 5) { console.error('add(2, 3) = ' + add(2, 3)); process.exit(1); }" }],
              },
            ],
          },
        ],
      },
    };
    const delta = (text: string) => ({ event: 'content_block_delta', data: { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } } });
    const split = {
      response_events: [
        { event: 'content_block_start', data: { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } } },
        delta('I know canary-123e4'),
        delta('567-e89b-12d3 here'),
      ],
    };
    const log = [toolResult, split].map((r) => JSON.stringify(r)).join('\n');
    const flags = scan(t, [], log);
    expect(flags.map((f) => [f.kind, f.where])).toEqual([
      ['canary', 'gateway exchange 2 (model text)'],
      ['hidden-content', 'gateway exchange 1 (tool result sent to the model)'],
    ]);
    // A command agent has no trajectory: its output is read instead.
    expect(scan(t, [], '', 'printing canary-123e4567-e89b-12d3 now').map((f) => f.where)).toEqual(['agent output (agent.log)']);
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
    expect(() => applyChanges({ schema_version: 1, written: { 'link/evil.txt': 'x' }, deleted: [] }, changed, tree)).toThrow(
      /refusing to write link\/evil\.txt: link is a symlink/,
    );
    expect(existsSync(join(outside, 'evil.txt'))).toBe(false);
  });
});
