/**
 * A provider's misbehaviour, scripted for the fake model: what real providers do and a kind
 * fake never did (a 429 with retry-after, 529 overloaded, a stream that breaks with an error
 * event, a slow reply kept alive by pings), in the wire format of the API the agent called.
 */
import type { ServerResponse } from 'node:http';
import { anthropicEvents, type ReplyIds } from './fake-anthropic.js';
import { openaiEvents, openaiResponse } from './fake-openai.js';
import { usageOf, type FakeFault, type FakeTurn } from './fake-script.js';
import { formatSse } from './sse.js';
import { chatChunks, chatSse } from './fake-chat.js';
import { geminiResponse, geminiStatus } from './fake-gemini.js';

/** The wire format a request came in: Anthropic Messages, OpenAI Responses, or OpenAI Chat Completions. */
export type Api = 'anthropic' | 'openai' | 'chat' | 'gemini';

/** Anthropic's error type for a status (https://docs.anthropic.com/en/api/errors). */
function anthropicErrorType(status: number): string {
  const types: Record<number, string> = {
    400: 'invalid_request_error',
    401: 'authentication_error',
    403: 'permission_error',
    404: 'not_found_error',
    413: 'request_too_large',
    429: 'rate_limit_error',
    529: 'overloaded_error',
  };
  return types[status] ?? 'api_error';
}

/** The error body a provider sends with a failing status. */
export function errorBody(api: Api, status: number): unknown {
  const message = status === 429 ? 'Rate limit reached (scripted)' : status === 529 ? 'Overloaded (scripted)' : `HTTP ${status} (scripted)`;
  if (api === 'anthropic') return { type: 'error', error: { type: anthropicErrorType(status), message } };
  if (api === 'gemini') return { error: { code: status, message, status: geminiStatus(status) } };
  const code = status === 429 ? 'rate_limit_exceeded' : status === 401 ? 'invalid_api_key' : status >= 500 ? 'server_error' : 'invalid_request';
  return { error: { message, type: status >= 500 ? 'server_error' : 'invalid_request_error', param: null, code } };
}

/**
 * Answers one request as the fault says. `turn` is what the request would have been answered
 * with: a broken stream first carries its start (and bills its input, as a provider does).
 */
export async function answerFault(
  api: Api,
  fault: FakeFault,
  turn: FakeTurn,
  ids: ReplyIds,
  streaming: boolean,
  res: ServerResponse,
): Promise<'answered' | 'go-on'> {
  if (fault.status !== undefined) {
    const text = JSON.stringify(errorBody(api, fault.status));
    res.writeHead(fault.status, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(text),
      ...(fault.retry_after_seconds !== undefined ? { 'retry-after': String(fault.retry_after_seconds) } : {}),
    });
    res.end(text);
    return 'answered';
  }
  if (fault.stream_error !== undefined) {
    const error = { type: fault.stream_error, message: `${fault.stream_error} (scripted, mid-stream)` };
    if (!streaming) {
      const status = fault.stream_error === 'overloaded_error' ? 529 : 500;
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(errorBody(api, status)));
      return 'answered';
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    // What was billed before the break: the input, and one output token.
    const started: FakeTurn = { ...turn, usage: { ...usageOf(turn), output_tokens: 1 } };
    if (api === 'anthropic') {
      res.write(formatSse(...anthropicEvents(started, ids)[0]!));
      res.end(formatSse('error', { type: 'error', error }));
    } else if (api === 'gemini') {
      // Gemini's stream carries an error as an event of its own, after what was billed.
      res.write(chatSse(geminiResponse({ ...started, tool_calls: [] }, ids)));
      res.end(chatSse({ error: { code: 503, message: error.message, status: 'UNAVAILABLE' } }));
    } else if (api === 'chat') {
      // A chat stream carries an error as a chunk of its own; the usage billed comes first.
      const chunks = chatChunks(started, ids);
      res.write(chatSse(chunks[0]));
      res.write(chatSse(chunks.at(-1)));
      res.end(chatSse({ error: { message: error.message, type: 'server_error', code: fault.stream_error } }));
    } else {
      res.write(formatSse(...openaiEvents(started, ids)[0]!));
      const billed = openaiResponse(started, ids, 'completed').usage;
      const failed = {
        ...openaiResponse(started, ids, 'in_progress'),
        status: 'failed',
        usage: billed,
        error: { code: 'server_error', message: error.message },
      };
      res.end(formatSse('response.failed', { type: 'response.failed', sequence_number: 1, response: failed }));
    }
    return 'answered';
  }
  // Slow: the reply comes after delay_ms, kept alive meanwhile by pings (Anthropic's ping event;
  // OpenAI's stream has none, so an SSE comment), then goes on as scripted.
  const delay = fault.delay_ms ?? 0;
  const pings = fault.pings ?? 0;
  if (streaming) {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.flushHeaders();
  }
  for (let i = 0; i <= pings; i++) {
    await new Promise((r) => setTimeout(r, delay / (pings + 1)));
    if (streaming && i < pings) res.write(api === 'anthropic' ? formatSse('ping', { type: 'ping' }) : ': keep-alive\n\n');
  }
  return 'go-on';
}
