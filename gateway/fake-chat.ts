/** How the fake model answers OpenAI's Chat Completions API (the one OpenAI-compatible agents speak), streaming or not. */
import { usageOf, type FakeTurn } from './fake-script.js';
import { isObject } from './json.js';
import type { ReplyIds } from './fake-anthropic.js';

/**
 * Turn = the assistant messages since the last user message: the task's own loop (assistant,
 * tool results, assistant...). An agent may open the conversation with a scripted exchange of
 * its own (Qwen Code: its context as a user message, "Got it." as the assistant), which is not
 * a turn of the task.
 */
export function chatTurnIndex(body: unknown): number {
  const messages = isObject(body) && Array.isArray(body.messages) ? body.messages : [];
  const lastUser = messages.findLastIndex((m) => isObject(m) && m.role === 'user');
  return messages.slice(lastUser + 1).filter((m) => isObject(m) && m.role === 'assistant').length;
}

/** Chat usage: prompt_tokens include the cached ones (reported in prompt_tokens_details), as the Responses API's input does. */
function chatUsage(turn: FakeTurn): Record<string, unknown> {
  const u = usageOf(turn);
  const prompt = u.input_tokens + u.cache_creation_input_tokens + u.cache_read_input_tokens;
  return {
    prompt_tokens: prompt,
    completion_tokens: u.output_tokens,
    total_tokens: prompt + u.output_tokens,
    prompt_tokens_details: { cached_tokens: u.cache_read_input_tokens },
    completion_tokens_details: { reasoning_tokens: turn.usage?.reasoning_tokens ?? 0 },
  };
}

function toolCalls(turn: FakeTurn, ids: ReplyIds): Record<string, unknown>[] {
  return (turn.tool_calls ?? []).map((c, i) => ({
    id: `call_fake_${ids.turn}_${i}`,
    type: 'function',
    function: { name: c.name, arguments: JSON.stringify(c.input) },
  }));
}

const finishReason = (turn: FakeTurn) => ((turn.tool_calls ?? []).length > 0 ? 'tool_calls' : 'stop');

/** The non-streaming reply. */
export function chatCompletion(turn: FakeTurn, ids: ReplyIds): Record<string, unknown> {
  const calls = toolCalls(turn, ids);
  return {
    id: `chatcmpl_fake_${ids.seq}`,
    object: 'chat.completion',
    created: 0,
    model: ids.model,
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: turn.text ?? (calls.length ? null : ''), ...(calls.length ? { tool_calls: calls } : {}) },
        finish_reason: finishReason(turn),
      },
    ],
    usage: chatUsage(turn),
  };
}

/**
 * The streaming reply's chunks: the text, each tool call whole, the finish reason, then the
 * usage chunk (sent whether or not the request asked for it with stream_options.include_usage:
 * the gateway needs it, and clients ignore a chunk with no choices).
 */
export function chatChunks(turn: FakeTurn, ids: ReplyIds): Record<string, unknown>[] {
  const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) => ({
    id: `chatcmpl_fake_${ids.seq}`,
    object: 'chat.completion.chunk',
    created: 0,
    model: ids.model,
    choices,
    ...extra,
  });
  const out = [chunk([{ index: 0, delta: { role: 'assistant', content: turn.text ?? '' }, finish_reason: null }])];
  toolCalls(turn, ids).forEach((c, i) => out.push(chunk([{ index: 0, delta: { tool_calls: [{ index: i, ...c }] }, finish_reason: null }])));
  out.push(chunk([{ index: 0, delta: {}, finish_reason: finishReason(turn) }]));
  out.push(chunk([], { usage: chatUsage(turn) }));
  return out;
}

/** One Chat Completions stream event (data only, no event name), and the stream's end. */
export const chatSse = (data: unknown): string => `data: ${JSON.stringify(data)}\n\n`;
export const CHAT_DONE = 'data: [DONE]\n\n';
