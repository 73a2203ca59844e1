/** How the fake model answers the OpenAI Responses API, streaming or not. */
import { usageOf, type FakeTurn } from './fake-script.js';
import { isObject } from './json.js';
import type { ReplyIds } from './fake-anthropic.js';

/** Input items the model itself produced in an earlier turn. */
const MODEL_ITEM_TYPES = new Set(['function_call', 'custom_tool_call', 'local_shell_call', 'reasoning', 'web_search_call']);

function isModelItem(item: unknown): boolean {
  if (!isObject(item)) return false;
  if (item.role === 'assistant') return true;
  return typeof item.type === 'string' && MODEL_ITEM_TYPES.has(item.type);
}

/**
 * Turn = earlier model replies found in `input`. One reply is a run of consecutive model items
 * (its message and function calls), so a turn with two tool calls still counts once; with one
 * call per turn this equals the number of function_call_output items.
 */
export function openaiTurnIndex(body: unknown): number {
  const input = isObject(body) && Array.isArray(body.input) ? body.input : [];
  let turns = 0;
  let inRun = false;
  for (const item of input) {
    const model = isModelItem(item);
    if (model && !inRun) turns++;
    inRun = model;
  }
  return turns;
}

export function openaiOutput(turn: FakeTurn, ids: ReplyIds): Record<string, unknown>[] {
  const calls = turn.tool_calls ?? [];
  const out: Record<string, unknown>[] = [];
  if (turn.text !== undefined || calls.length === 0) {
    out.push({
      type: 'message',
      id: `msg_fake_${ids.seq}`,
      role: 'assistant',
      status: 'completed',
      content: [{ type: 'output_text', text: turn.text ?? '', annotations: [] }],
    });
  }
  calls.forEach((c, i) =>
    out.push({
      type: 'function_call',
      id: `fc_fake_${ids.turn}_${i}`,
      call_id: `call_fake_${ids.turn}_${i}`,
      name: c.name,
      ...(c.namespace ? { namespace: c.namespace } : {}),
      arguments: JSON.stringify(c.input),
      status: 'completed',
    }),
  );
  return out;
}

/**
 * OpenAI's input_tokens include cached ones and it has no cache-write count, so the script's
 * cache writes are billed as input and cache reads become cached_tokens. A gateway computing
 * input = input_tokens - cached_tokens then sees the same token total as on the Anthropic path.
 */
export function openaiUsage(turn: FakeTurn): Record<string, unknown> {
  const u = usageOf(turn);
  const input = u.input_tokens + u.cache_creation_input_tokens + u.cache_read_input_tokens;
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: u.cache_read_input_tokens },
    output_tokens: u.output_tokens,
    output_tokens_details: { reasoning_tokens: turn.usage?.reasoning_tokens ?? 0 },
    total_tokens: input + u.output_tokens,
  };
}

/** The full response object (the non-streaming reply, and the payload of response.completed). */
export function openaiResponse(turn: FakeTurn, ids: ReplyIds, status: 'in_progress' | 'completed'): Record<string, unknown> {
  const done = status === 'completed';
  return {
    id: `resp_fake_${ids.seq}`,
    object: 'response',
    created_at: 0,
    status,
    model: ids.model,
    output: done ? openaiOutput(turn, ids) : [],
    usage: done ? openaiUsage(turn) : null,
  };
}

/** The streaming reply as (event name, data) pairs: created, one output_item.done per item, completed. */
export function openaiEvents(turn: FakeTurn, ids: ReplyIds): [string, unknown][] {
  const out: [string, unknown][] = [];
  const push = (type: string, data: Record<string, unknown>) => out.push([type, { type, sequence_number: out.length, ...data }]);
  push('response.created', { response: openaiResponse(turn, ids, 'in_progress') });
  openaiOutput(turn, ids).forEach((item, output_index) => push('response.output_item.done', { output_index, item }));
  push('response.completed', { response: openaiResponse(turn, ids, 'completed') });
  return out;
}

/**
 * The turn with each call of a tool the request offers inside a namespace (listed as
 * `<namespace>__<tool>`, gateway/markers.ts toolNames) split into the tool's own name and its
 * namespace, as the Responses API calls one.
 */
export function inNamespaces(turn: FakeTurn, body: unknown): FakeTurn {
  if (!turn.tool_calls?.length || !isObject(body) || !Array.isArray(body.tools)) return turn;
  const spaced = new Map<string, { namespace: string; name: string }>();
  for (const t of body.tools)
    if (isObject(t) && t.type === 'namespace' && typeof t.name === 'string' && Array.isArray(t.tools))
      for (const inner of t.tools)
        if (isObject(inner) && typeof inner.name === 'string') spaced.set(`${t.name}__${inner.name}`, { namespace: t.name, name: inner.name });
  return { ...turn, tool_calls: turn.tool_calls.map((c) => ({ ...c, ...spaced.get(c.name) })) };
}
