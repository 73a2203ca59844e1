import { describe, expect, it } from 'vitest';
import type { AttemptContext } from '../agents/adapter.js';
import { claudeCodeAgent } from '../agents/claude-code.js';
import { codexAgent } from '../agents/codex.js';
import { atifProblems } from './atif.js';

// An agent's stdout is written by the agent: a hostile one prints whatever it likes. Its
// stream is validated line by line before use, so a forged line can neither crash the
// attempt (turning a fail into an excluded infra error) nor smuggle in numbers that are
// not numbers; a line that does not match is dropped, and the rest of the stream counts.
const ctx = { prompt: 'fix it', model: 'test-model' } as AttemptContext;
const run = (stdout: string) => ({ stdout, stderr: '', exitCode: 0, signal: null, timedOut: false, durationMs: 1 });

describe('untrusted agent streams are validated before use', () => {
  it('Claude Code: forged stream-json lines are dropped, the well-formed ones still count', () => {
    const lines = [
      { type: 'system', subtype: 'init', session_id: 's1', tools: ['Bash', 7], model: 'm' },
      { type: 'assistant', message: { content: [null, 'text', { type: 'tool_use', id: 5, name: 'Bash' }, { type: 'text', text: 'ok' }] } },
      { type: 'assistant', message: { content: 'not blocks' } },
      { type: 'user', message: { content: [{ type: 'tool_result', tool_use_id: { $gt: '' }, content: 'x' }] } },
      { type: 42 },
      null,
      [1, 2],
      { type: 'result', subtype: 'success', num_turns: '9999', usage: { input_tokens: '1e9', output_tokens: 12, cache_read_input_tokens: -5 } },
    ];
    const parsed = claudeCodeAgent.parse(run(lines.map((l) => JSON.stringify(l)).join('\n')), ctx, '1.0.0');
    expect(parsed.trajectory.steps.map((s) => s.message)).toEqual(['fix it', 'ok']);
    expect(parsed.toolCalls).toBe(0);
    // num_turns was a string: the agent steps are counted instead.
    expect(parsed.turns).toBe(1);
    expect(parsed.trajectory.final_metrics?.total_prompt_tokens).toBe(0);
    expect(parsed.trajectory.final_metrics?.total_completion_tokens).toBe(12);
    expect(parsed.trajectory.agent.extra).toEqual({ tools: ['Bash'] });
    expect(atifProblems(parsed.trajectory)).toEqual([]);
  });

  it('Codex: forged exec events are dropped, the well-formed ones still count', () => {
    const lines = [
      { type: 'thread.started', thread_id: ['t'] },
      { type: 'item.completed', item: null },
      { type: 'item.completed', item: { id: 'i1', type: 'file_change', changes: [null, { path: 'a.js', kind: 'update' }, { path: 3 }] } },
      { type: 'item.completed', item: { id: 'i2', type: 'todo_list', items: [null, { text: 'x', completed: 'yes' }, { text: 'y', completed: true }] } },
      { type: 'item.completed', item: { type: 'agent_message', text: 'no id' } },
      { type: 'item.completed', item: { id: 'i3', type: 'command_execution', command: ['rm', '-rf'], exit_code: 'zero' } },
      { type: 'turn.completed', usage: { input_tokens: 'many', cached_input_tokens: 2, output_tokens: 3 } },
      { type: 'turn.completed', usage: 'lots' },
    ];
    const parsed = codexAgent.parse(run(lines.map((l) => JSON.stringify(l)).join('\n')), ctx, '1.0.0');
    expect(parsed.turns).toBe(2);
    expect(parsed.trajectory.session_id).toBeUndefined();
    expect(parsed.trajectory.final_metrics).toMatchObject({ total_prompt_tokens: 0, total_cached_tokens: 2, total_completion_tokens: 3 });
    const calls = parsed.trajectory.steps.flatMap((s) => s.tool_calls ?? []);
    expect(calls.map((c) => c.function_name)).toEqual(['apply_patch', 'exec_command']);
    expect(calls[0]!.arguments).toEqual({ changes: [{ path: 'a.js', kind: 'update' }] });
    expect(calls[1]!.arguments).toEqual({ cmd: '' });
    expect(atifProblems(parsed.trajectory)).toEqual([]);
  });
});
