import { err, ok, type Result } from '../pipeline/result.js';
import { isObject } from './json.js';

/** Token usage a scripted turn reports (Anthropic's field names; input excludes cache tokens). */
export interface FakeUsage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens?: number;
  cache_read_input_tokens?: number;
  /** OpenAI only: the part of output_tokens spent reasoning. */
  reasoning_tokens?: number;
}

export interface FakeToolCall {
  name: string;
  input: Record<string, unknown>;
  /** OpenAI Responses only: the namespace of a tool offered inside one (Codex's MCP servers); `name` is then the tool's own. */
  namespace?: string;
}

/**
 * A scripted action in the agent's terms, not a tool's: the fake model carries it out with the
 * tool the attempt's agent offers for it (its adapter's declared mapping, gateway/fake-actions.ts),
 * so one script drives every agent. An action the agent offers no tool for is an infrastructure fault.
 */
export type FakeAction =
  | { action: 'shell'; command: string }
  | { action: 'read'; path: string }
  | { action: 'write'; path: string; content: string }
  | { action: 'edit'; path: string; old: string; new: string }
  /**
   * A call of an MCP server's tool, by the server's name in the arm's `mcp_servers` and the
   * tool's own name: the agent's name for it is its adapter's (Claude Code mcp__graph__flow,
   * Gemini CLI mcp_graph_flow, ...). `optional`: called only when the agent offers it (an arm
   * without the server skips it), as a model uses a tool only when it has it.
   */
  | { action: 'mcp'; server: string; tool: string; input?: Record<string, unknown>; optional?: boolean };

export const ACTIONS = ['shell', 'read', 'write', 'edit', 'mcp'] as const;

/** A scripted call: a tool by name (that agent's own), or an action any agent can carry out. */
export type ScriptedCall = FakeToolCall | FakeAction;

/** One model reply: optional text, then tool calls (stop reason tool_use when there are any). */
export interface FakeTurn {
  text?: string;
  tool_calls?: FakeToolCall[];
  usage?: FakeUsage;
}

/** A turn as the script writes it: its calls may be actions, resolved per request (fake-actions.ts). */
export interface ScriptTurn extends Omit<FakeTurn, 'tool_calls'> {
  tool_calls?: ScriptedCall[];
}

/** What the fake model answers, turn by turn; the same script drives the Anthropic and the OpenAI API. */
export interface FakeScript {
  turns: ScriptTurn[];
  /**
   * Turns for one task (or any request whose JSON a `match` is found in: the task's prompt is
   * in every request of its conversation): the first matching entry's turns answer instead of
   * `turns`, so one script can act differently per task, as a model reading the prompt would.
   */
  by_task?: { match: string; turns: ScriptTurn[] }[];
  /**
   * Answers to requests without tools (a context generator's or a judge's single call):
   * the first whose `match` (a regular expression) is found in the request body's JSON,
   * or that has no `match`. Without one, such a request is a side request ("ok").
   */
  completions?: FakeCompletion[];
  /**
   * Input tokens counted from each request (its JSON bytes / 4) instead of the turn's scripted
   * figure: what an agent's context adds to every request then shows in its cost.
   */
  usage_from_request?: boolean;
  /** Requests that offer tools answered as a provider misbehaves instead of as scripted (by their number: a retry is a new request). */
  faults?: FakeFault[];
}

/**
 * How the `request`-th request that offers tools (1-based; side requests are not counted) is answered instead:
 * exactly one of a failing status (429 with retry_after_seconds, 529, 500...), a 200 stream
 * that breaks with an error event of this type, or a reply delayed by delay_ms with pings.
 */
export interface FakeFault {
  request: number;
  status?: number;
  retry_after_seconds?: number;
  stream_error?: string;
  delay_ms?: number;
  pings?: number;
}

export interface FakeCompletion {
  match?: string;
  text: string;
  usage?: FakeUsage;
}

/** The scripted answer to a request without tools. */
export function completionFor(script: FakeScript, body: unknown): FakeTurn {
  const text = JSON.stringify(body);
  const c = script.completions?.find((x) => x.match === undefined || new RegExp(x.match).test(text));
  return c ? { text: c.text, ...(c.usage ? { usage: c.usage } : {}) } : SIDE_TURN;
}

export const DEFAULT_USAGE: Required<FakeUsage> = {
  input_tokens: 100,
  output_tokens: 20,
  cache_creation_input_tokens: 0,
  cache_read_input_tokens: 0,
  reasoning_tokens: 0,
};

/** Past the end of the script the model says it is done, so an agent always terminates. */
export const FINAL_TURN: FakeTurn = { text: 'done' };

/** The answer to a side request (no tools: a title, a summary...); it never advances the script. */
export const SIDE_TURN: FakeTurn = {
  text: 'ok',
  usage: { input_tokens: 10, output_tokens: 2 },
};

/** The index-th turn of the turns that answer this request (`by_task`'s first match, else `turns`). */
export function turnAt(script: FakeScript, index: number, body?: unknown): ScriptTurn {
  const text = script.by_task?.length && body !== undefined ? JSON.stringify(body) : '';
  const turns = script.by_task?.find((t) => new RegExp(t.match).test(text))?.turns ?? script.turns;
  return turns[index] ?? FINAL_TURN;
}

export function usageOf(turn: FakeTurn): Required<FakeUsage> {
  return { ...DEFAULT_USAGE, ...turn.usage };
}

export interface ScriptFailure {
  reason: 'invalid-script';
  /** JSON path of the offending value, e.g. `turns[1].tool_calls[0].input`. */
  path: string;
  message: string;
}

/** Checks a script read from JSON, so a typo fails at load time and not as a confused agent run. */
export function parseFakeScript(value: unknown): Result<FakeScript, ScriptFailure> {
  try {
    assertFakeScript(value);
    return ok(value);
  } catch (e) {
    if (e instanceof ScriptProblem) return err({ reason: 'invalid-script', path: e.path, message: e.message });
    throw e;
  }
}

class ScriptProblem extends Error {
  constructor(
    readonly path: string,
    message: string,
  ) {
    super(message);
  }
}

function assertFakeScript(value: unknown): asserts value is FakeScript {
  const fail: Fail = (path, message) => {
    throw new ScriptProblem(path, message);
  };
  if (!isObject(value) || !Array.isArray(value.turns)) fail('turns', 'expected an object with a "turns" array');
  assertTurns(value.turns, 'turns', fail);
  if (value.by_task !== undefined) {
    if (!Array.isArray(value.by_task)) fail('by_task', 'expected an array');
    for (const [i, t] of value.by_task.entries()) {
      const at = `by_task[${i}]`;
      if (!isObject(t)) fail(at, 'expected an object with match and turns');
      assertRegExp(t.match, `${at}.match`, fail);
      if (!Array.isArray(t.turns)) fail(`${at}.turns`, 'expected an array');
      assertTurns(t.turns, `${at}.turns`, fail);
    }
  }
  if (value.usage_from_request !== undefined && typeof value.usage_from_request !== 'boolean') fail('usage_from_request', 'expected true or false');
  if (value.faults !== undefined) {
    if (!Array.isArray(value.faults)) fail('faults', 'expected an array');
    const seen = new Set<number>();
    for (const [i, f] of value.faults.entries()) {
      const at = `faults[${i}]`;
      if (!isObject(f)) fail(at, 'expected an object');
      const count = (k: string, min: number, max = Number.MAX_SAFE_INTEGER) => {
        const v = f[k];
        if (v !== undefined && !(Number.isInteger(v) && (v as number) >= min && (v as number) <= max))
          fail(`${at}.${k}`, `expected an integer from ${min} to ${max}`);
      };
      if (f.request === undefined) fail(`${at}.request`, 'expected the number of the request to fail (1 is the first)');
      count('request', 1);
      if (seen.has(f.request as number)) fail(`${at}.request`, `request ${String(f.request)} has two faults`);
      seen.add(f.request as number);
      count('status', 400, 599);
      count('retry_after_seconds', 0, 3600);
      count('delay_ms', 0, 600_000);
      count('pings', 0, 1000);
      if (f.stream_error !== undefined && (typeof f.stream_error !== 'string' || f.stream_error === ''))
        fail(`${at}.stream_error`, 'expected an error type, e.g. overloaded_error');
      const kinds = [f.status !== undefined, f.stream_error !== undefined, f.delay_ms !== undefined || f.pings !== undefined].filter(Boolean).length;
      if (kinds !== 1) fail(at, 'expected exactly one of status, stream_error, or delay_ms (with pings)');
      if (f.retry_after_seconds !== undefined && f.status === undefined) fail(`${at}.retry_after_seconds`, 'goes with a status (a 429 or 529)');
    }
  }
  if (value.completions !== undefined) {
    if (!Array.isArray(value.completions)) fail('completions', 'expected an array');
    for (const [i, c] of value.completions.entries()) {
      const at = `completions[${i}]`;
      if (!isObject(c) || typeof c.text !== 'string') fail(`${at}.text`, 'expected a string');
      if (c.match !== undefined) assertRegExp(c.match, `${at}.match`, fail);
    }
  }
}

type Fail = (path: string, message: string) => never;

function assertRegExp(match: unknown, path: string, fail: Fail): void {
  if (typeof match !== 'string') fail(path, 'expected a regular expression (string)');
  try {
    new RegExp(match as string);
  } catch {
    fail(path, `"${match as string}" is not a regular expression`);
  }
}

function assertTurns(turns: unknown[], path: string, fail: Fail): void {
  for (const [i, turn] of turns.entries()) {
    const at = `${path}[${i}]`;
    if (!isObject(turn)) fail(at, 'expected an object');
    if (turn.text !== undefined && typeof turn.text !== 'string') fail(`${at}.text`, 'expected a string');
    if (turn.tool_calls !== undefined) {
      if (!Array.isArray(turn.tool_calls)) fail(`${at}.tool_calls`, 'expected an array');
      for (const [j, call] of turn.tool_calls.entries()) {
        const c = `${at}.tool_calls[${j}]`;
        if (isObject(call) && call.action !== undefined) {
          const action = call.action;
          if (typeof action !== 'string' || !(ACTIONS as readonly string[]).includes(action)) fail(`${c}.action`, `expected one of ${ACTIONS.join(', ')}`);
          const fields = { shell: ['command'], read: ['path'], write: ['path', 'content'], edit: ['path', 'old', 'new'], mcp: ['server', 'tool'] }[
            action as FakeAction['action']
          ];
          for (const f of fields) if (typeof call[f] !== 'string') fail(`${c}.${f}`, `a ${action} action needs ${f} (a string)`);
          if (action === 'mcp') {
            for (const f of ['server', 'tool']) if (call[f] === '') fail(`${c}.${f}`, 'expected a non-empty name');
            if (call.input !== undefined && !isObject(call.input)) fail(`${c}.input`, "expected an object (the tool's arguments)");
            if (call.optional !== undefined && typeof call.optional !== 'boolean') fail(`${c}.optional`, 'expected true or false');
          } else if (action !== 'shell' && (call.path as string) === '') fail(`${c}.path`, 'expected a path relative to the workspace');
          continue;
        }
        if (!isObject(call) || typeof call.name !== 'string' || call.name === '') fail(`${c}.name`, 'expected a non-empty string (a tool), or an action');
        if (!isObject(call.input)) fail(`${c}.input`, 'expected an object');
      }
    }
    if (turn.usage !== undefined) {
      if (!isObject(turn.usage)) fail(`${at}.usage`, 'expected an object');
      for (const k of ['input_tokens', 'output_tokens', 'cache_creation_input_tokens', 'cache_read_input_tokens', 'reasoning_tokens']) {
        const v = turn.usage[k];
        const required = k === 'input_tokens' || k === 'output_tokens';
        if ((v !== undefined || required) && !(Number.isInteger(v) && (v as number) >= 0)) {
          fail(`${at}.usage.${k}`, 'expected a non-negative integer');
        }
      }
    }
  }
}
