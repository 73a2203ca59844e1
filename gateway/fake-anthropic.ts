/** How the fake model answers the Anthropic Messages API, streaming or not. */
import { usageOf, type FakeTurn } from './fake-script.js';
import { isObject } from './json.js';

export interface ReplyIds {
  /** Unique per request, so message ids never repeat. */
  seq: number;
  /** The script index answered (tool ids are derived from it). */
  turn: number;
  model: string;
}

/** Turn = assistant entries in `messages` (Claude Code may also put `role: "system"` entries there). */
export function anthropicTurnIndex(body: unknown): number {
  const messages = isObject(body) && Array.isArray(body.messages) ? body.messages : [];
  return messages.filter((m) => isObject(m) && m.role === 'assistant').length;
}

interface Block {
  type: 'text' | 'tool_use';
  text?: string;
  id?: string;
  name?: string;
  input?: Record<string, unknown>;
}

function blocksOf(turn: FakeTurn, ids: ReplyIds): Block[] {
  const calls = turn.tool_calls ?? [];
  const blocks: Block[] = [];
  // Text first, then tool calls: the order a real model produces them in.
  if (turn.text !== undefined || calls.length === 0) blocks.push({ type: 'text', text: turn.text ?? '' });
  calls.forEach((c, i) => blocks.push({ type: 'tool_use', id: `toolu_fake_${ids.turn}_${i}`, name: c.name, input: c.input }));
  return blocks;
}

function stopReason(turn: FakeTurn): 'tool_use' | 'end_turn' {
  return (turn.tool_calls ?? []).length > 0 ? 'tool_use' : 'end_turn';
}

/** The non-streaming reply: a plain JSON message. */
export function anthropicMessage(turn: FakeTurn, ids: ReplyIds): Record<string, unknown> {
  const { reasoning_tokens: _reasoning, ...u } = usageOf(turn); // Anthropic reports no reasoning count
  return {
    id: `msg_fake_${ids.seq}`,
    type: 'message',
    role: 'assistant',
    model: ids.model,
    content: blocksOf(turn, ids),
    stop_reason: stopReason(turn),
    stop_sequence: null,
    usage: u,
  };
}

/** The streaming reply as (event name, data) pairs, in the order the real API sends them. */
export function anthropicEvents(turn: FakeTurn, ids: ReplyIds): [string, unknown][] {
  const { reasoning_tokens: _reasoning, ...u } = usageOf(turn); // Anthropic reports no reasoning count
  const out: [string, unknown][] = [];
  out.push([
    'message_start',
    {
      type: 'message_start',
      message: {
        id: `msg_fake_${ids.seq}`,
        type: 'message',
        role: 'assistant',
        model: ids.model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        // As the real API: output_tokens starts at 1; message_delta carries the final (cumulative) count.
        usage: {
          input_tokens: u.input_tokens,
          output_tokens: 1,
          cache_creation_input_tokens: u.cache_creation_input_tokens,
          cache_read_input_tokens: u.cache_read_input_tokens,
        },
      },
    },
  ]);
  blocksOf(turn, ids).forEach((b, index) => {
    if (b.type === 'text') {
      out.push(['content_block_start', { type: 'content_block_start', index, content_block: { type: 'text', text: '' } }]);
      for (const text of chunks(b.text ?? '', 32)) {
        out.push(['content_block_delta', { type: 'content_block_delta', index, delta: { type: 'text_delta', text } }]);
      }
    } else {
      out.push(['content_block_start', { type: 'content_block_start', index, content_block: { type: 'tool_use', id: b.id, name: b.name, input: {} } }]);
      for (const partial_json of chunks(JSON.stringify(b.input ?? {}), 24)) {
        out.push(['content_block_delta', { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json } }]);
      }
    }
    out.push(['content_block_stop', { type: 'content_block_stop', index }]);
  });
  out.push([
    'message_delta',
    { type: 'message_delta', delta: { stop_reason: stopReason(turn), stop_sequence: null }, usage: { output_tokens: u.output_tokens } },
  ]);
  out.push(['message_stop', { type: 'message_stop' }]);
  return out;
}

/** Splits into pieces of at most `size` code points (none for ""), so clients see real streaming. */
export function chunks(s: string, size: number): string[] {
  const points = Array.from(s); // never splits a surrogate pair
  const out: string[] = [];
  for (let i = 0; i < points.length; i += size) out.push(points.slice(i, i + size).join(''));
  return out;
}
