import { describe, expect, it } from 'vitest';
import type { AttemptContext } from '../agents/adapter.js';
import { toAtif } from '../agents/claude-code.js';
import { parseCodex } from '../agents/codex.js';
import { atifProblems } from './atif.js';

const ctx: AttemptContext = { prompt: 'Fix add().', workdir: '/work', model: 'fake-1', flags: [], limits: { turns: 5, wallSeconds: 60 }, home: '/tmp' };

/** One `codex exec --json` stream with every item type codex emits. */
const CODEX_STREAM = [
  { type: 'thread.started', thread_id: 'th-1' },
  { type: 'turn.started' },
  { type: 'item.completed', item: { id: 'item_0', type: 'reasoning', text: 'Look at add first.' } },
  {
    type: 'item.completed',
    item: { id: 'item_1', type: 'command_execution', command: 'cat src/add.mjs', aggregated_output: 'a - b', exit_code: 0, status: 'completed' },
  },
  { type: 'item.completed', item: { id: 'item_2', type: 'file_change', changes: [{ path: 'src/add.mjs', kind: 'update' }], status: 'completed' } },
  {
    type: 'item.completed',
    item: {
      id: 'item_3',
      type: 'mcp_tool_call',
      server: 'probe',
      tool: 'ping',
      arguments: { n: 1 },
      result: { content: [{ type: 'text', text: 'pong' }] },
      status: 'completed',
    },
  },
  { type: 'item.completed', item: { id: 'item_4', type: 'web_search', query: 'javascript addition' } },
  { type: 'item.completed', item: { id: 'item_5', type: 'todo_list', items: [{ text: 'fix add', completed: true }] } },
  { type: 'item.completed', item: { id: 'item_6', type: 'error', message: 'a non-fatal error' } },
  { type: 'item.completed', item: { id: 'item_7', type: 'agent_message', text: 'Fixed.' } },
  { type: 'turn.completed', usage: { input_tokens: 1000, cached_input_tokens: 400, output_tokens: 30 } },
]
  .map((e) => JSON.stringify(e))
  .join('\n');

describe('ATIF v1.7 trajectories', () => {
  it('codex: every item type is a step, each tool (shell, apply_patch, MCP, web search) a tool call; it validates against the schema', () => {
    const run = parseCodex(CODEX_STREAM, ctx, '0.171.0');
    expect(atifProblems(run.trajectory)).toEqual([]);
    const calls = run.trajectory.steps.flatMap((s) => (s.tool_calls ?? []).map((c) => c.function_name));
    expect(calls).toEqual(['exec_command', 'apply_patch', 'mcp__probe__ping', 'web_search']);
    expect(run.toolCalls).toBe(4);
    expect(run.trajectory.steps.find((s) => s.tool_calls?.[0]?.function_name === 'mcp__probe__ping')?.tool_calls?.[0]?.arguments).toEqual({ n: 1 });
    expect(run.trajectory.steps.find((s) => s.tool_calls?.[0]?.function_name === 'exec_command')?.reasoning_content).toBe('Look at add first.');
    expect(run.trajectory.steps.map((s) => s.source)).toEqual(['user', 'agent', 'agent', 'agent', 'agent', 'agent', 'system', 'agent']);
    // OpenAI's input tokens include the cached ones, as ATIF's prompt tokens do.
    expect(run.trajectory.final_metrics).toMatchObject({ total_prompt_tokens: 1000, total_cached_tokens: 400, total_completion_tokens: 30 });
    expect(run.trajectory.session_id).toBe('th-1');
  });

  it('codex: no stub ids when the stream carries none', () => {
    const run = parseCodex(JSON.stringify({ type: 'item.completed', item: { id: 'item_0', type: 'agent_message', text: 'hi' } }), ctx, '0.171.0');
    expect(atifProblems(run.trajectory)).toEqual([]);
    expect(JSON.stringify(run.trajectory)).not.toMatch(/"(none|unknown)"/);
    expect(run.trajectory).not.toHaveProperty('session_id');
  });

  it('claude code: prompt tokens are input + cache writes + cache reads; cached tokens are the reads', () => {
    const lines = [
      { type: 'system', subtype: 'init', session_id: 'sess-1', model: 'claude-fake-1' },
      {
        type: 'assistant',
        message: {
          id: 'm1',
          model: 'claude-fake-1',
          content: [{ type: 'tool_use', id: 'toolu_1', name: 'Bash', input: { command: 'ls' } }],
          usage: { input_tokens: 100, output_tokens: 10, cache_creation_input_tokens: 300, cache_read_input_tokens: 50 },
        },
      },
      { type: 'user', message: { content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'src' }] } },
      {
        type: 'assistant',
        message: { id: 'm2', model: 'claude-fake-1', content: [{ type: 'text', text: 'Done.' }], usage: { input_tokens: 120, output_tokens: 5 } },
      },
      {
        type: 'result',
        subtype: 'success',
        num_turns: 2,
        usage: { input_tokens: 220, output_tokens: 15, cache_creation_input_tokens: 300, cache_read_input_tokens: 50 },
      },
    ];
    const { trajectory } = toAtif(lines as never, ctx, '2.1.197');
    expect(atifProblems(trajectory)).toEqual([]);
    expect(trajectory.final_metrics).toMatchObject({ total_prompt_tokens: 220 + 300 + 50, total_cached_tokens: 50, total_completion_tokens: 15 });
  });

  it('the validator rejects what Harbor rejects', () => {
    const good = { schema_version: 'ATIF-v1.7', agent: { name: 'a', version: '1' }, steps: [{ step_id: 1, source: 'user', message: 'hi' }] };
    expect(atifProblems(good)).toEqual([]);
    expect(atifProblems({ ...good, stub: 'none' }).join()).toMatch(/additional properties/);
    expect(atifProblems({ ...good, steps: [{ step_id: 2, source: 'user', message: 'hi' }] }).join()).toMatch(/step_id is 2/);
    expect(atifProblems({ ...good, steps: [{ step_id: 1, source: 'user', message: 'hi', model_name: 'x' }] }).join()).toMatch(
      /model_name is set on a user step/,
    );
    const dangling = {
      step_id: 1,
      source: 'agent',
      message: '',
      tool_calls: [{ tool_call_id: 'a', function_name: 'f', arguments: {} }],
      observation: { results: [{ source_call_id: 'b', content: 'x' }] },
    };
    expect(atifProblems({ ...good, steps: [dangling] }).join()).toMatch(/source_call_id b names no tool call/);
    expect(atifProblems({ ...good, steps: [{ step_id: 1, source: 'agent', message: '', llm_call_count: 0, metrics: { prompt_tokens: 1 } }] }).join()).toMatch(
      /llm_call_count 0/,
    );
    expect(
      atifProblems({
        ...good,
        steps: [{ step_id: 1, source: 'agent', message: '', tool_calls: [{ tool_call_id: 'a', function_name: 'f', arguments: 'ls' }] }],
      }).join(),
    ).toMatch(/arguments must be object/);
    // Timestamps pydantic cannot read as a datetime, and embedded subagents without unique ids.
    for (const timestamp of ['yesterday', '12/01/2026 10:00', '2026-13-45T99:00:00Z'])
      expect(atifProblems({ ...good, steps: [{ step_id: 1, source: 'user', message: 'hi', timestamp }] }).join(), timestamp).toMatch(
        /is not an ISO 8601 date-time/,
      );
    expect(atifProblems({ ...good, steps: [{ step_id: 1, source: 'user', message: 'hi', timestamp: '2026-12-01T10:00:00.123Z' }] })).toEqual([]);
  });
});
