/**
 * A scripted model server speaking just enough of the Anthropic Messages and OpenAI Responses
 * APIs for the real agent CLIs to run end to end with no network and no keys.
 */
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import { isObject } from './json.js';
import { anthropicEvents, anthropicMessage, anthropicTurnIndex, type ReplyIds } from './fake-anthropic.js';
import { inNamespaces, openaiEvents, openaiResponse, openaiTurnIndex } from './fake-openai.js';
import { completionFor, turnAt, usageOf, type FakeScript, type FakeTurn } from './fake-script.js';
import { decodeBody } from './http-body.js';
import { readBody } from '../pipeline/read-body.js';
import { closeServer, listen, type ListenOn } from './listen.js';
import { formatSse } from './sse.js';
import { answerFault, type Api } from './fake-faults.js';
import { CHAT_DONE, chatChunks, chatCompletion, chatSse, chatTurnIndex } from './fake-chat.js';
import { GEMINI_PATH, geminiResponse, geminiTurnIndex } from './fake-gemini.js';
import { offersTools } from './request-bounds.js';
import { toolNames } from './markers.js';
import { resolveTurn, type AgentTools } from './fake-actions.js';

export type { FakeAction, FakeFault, FakeScript, FakeTurn, FakeToolCall, FakeUsage, ScriptTurn } from './fake-script.js';

export interface RecordedRequest {
  method: string;
  /** Path with its query string, e.g. `/v1/messages?beta=true`. */
  path: string;
  headers: IncomingHttpHeaders;
  /** Decoded JSON, or the raw text when the body is not JSON; null when empty. */
  body: unknown;
}

export interface FakeModel {
  url: string;
  socket?: string;
  /** Every request received, in arrival order (live: grows while the server runs). */
  requests: RecordedRequest[];
  /** Scripted calls the agent offered no tool for (each refused with a 400 saying so). */
  problems: string[];
  close(): Promise<void>;
}

export interface FakeModelOptions {
  /** The attempt's agent's shell tool and MCP tool names (its adapter's declared mapping): what the script's actions run through. */
  tools?: AgentTools;
}

export async function startFakeModel(script: FakeScript, on: ListenOn, options: FakeModelOptions = {}): Promise<FakeModel> {
  const requests: RecordedRequest[] = [];
  const problems: string[] = [];
  let seq = 0;
  let turnRequests = 0;

  const server = createServer((req, res) => {
    void readBody(req).then(
      (buf) => {
        const path = req.url ?? '/';
        const body = decodeBody(buf);
        requests.push({ method: req.method ?? 'GET', path, headers: req.headers, body });
        const pathname = path.split('?')[0];
        // Claude Code probes `HEAD /` first; a 404 is what the real API answers and is fine.
        if (req.method === 'POST' && pathname === '/v1/messages') return void reply('anthropic', body, res).catch(() => res.destroy());
        if (req.method === 'POST' && pathname === '/v1/responses') return void reply('openai', body, res).catch(() => res.destroy());
        if (req.method === 'POST' && pathname === '/v1/chat/completions') return void reply('chat', body, res).catch(() => res.destroy());
        const gemini = GEMINI_PATH.exec(pathname ?? '');
        if (req.method === 'POST' && gemini)
          return void reply('gemini', { ...(isObject(body) ? body : {}), model: gemini[1], stream: gemini[2] === 'streamGenerateContent' }, res).catch(() =>
            res.destroy(),
          );
        sendJson(res, 404, { type: 'error', error: { type: 'not_found_error', message: `no route ${req.method} ${pathname}` } }, req.method === 'HEAD');
      },
      () => res.destroy(),
    );
  });

  async function reply(api: Api, body: unknown, res: ServerResponse): Promise<void> {
    if (!isObject(body)) {
      return sendJson(res, 400, { type: 'error', error: { type: 'invalid_request_error', message: 'body must be a JSON object' } });
    }
    const side = !offersTools(body);
    const format = WIRE[api];
    const turn = side ? 0 : format.turnIndex(body);
    let scripted: FakeTurn;
    if (side) scripted = completionFor(script, body);
    else {
      const resolved = resolveTurn(turnAt(script, turn, body), toolNames(body), options.tools ?? {});
      if ('problem' in resolved) {
        // The attempt cannot do what the script says: refused at once, and said (run makes it an infrastructure fault).
        problems.push(resolved.problem);
        return sendJson(res, 400, { type: 'error', error: { type: 'invalid_request_error', message: `pairbench's scripted model: ${resolved.problem}` } });
      }
      // Codex offers MCP tools in namespaces: a call of one names its namespace.
      scripted = api === 'openai' ? inNamespaces(resolved.turn, body) : resolved.turn;
    }
    const answer: FakeTurn = script.usage_from_request
      ? {
          ...scripted,
          usage: {
            ...usageOf(scripted),
            input_tokens: Math.ceil(Buffer.byteLength(JSON.stringify(body)) / 4),
            cache_creation_input_tokens: 0,
            cache_read_input_tokens: 0,
          },
        }
      : scripted;
    const ids: ReplyIds = { seq: seq++, turn, model: typeof body.model === 'string' ? body.model : 'fake-model' };
    // The n-th request that offers tools may be scripted to fail as a provider's do; a retry is
    // another request. Side requests are not counted (an agent sends them alongside, in any order).
    const n = side ? 0 : ++turnRequests;
    const fault = script.faults?.find((f) => f.request === n);
    if (fault && (await answerFault(api, fault, answer, ids, body.stream === true, res)) === 'answered') return;
    if (body.stream !== true) {
      return sendJson(res, 200, format.reply(answer, ids));
    }
    if (!res.headersSent) res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.end(format.stream(answer, ids));
  }

  const bound = await listen(server, on);
  return {
    ...bound,
    requests,
    problems,
    close: () => closeServer(server),
  };
}

/** Each wire format's turn count, whole reply and stream (its SSE text). */
const WIRE: Record<Api, { turnIndex(body: unknown): number; reply(turn: FakeTurn, ids: ReplyIds): unknown; stream(turn: FakeTurn, ids: ReplyIds): string }> = {
  anthropic: {
    turnIndex: anthropicTurnIndex,
    reply: anthropicMessage,
    stream: (t, ids) =>
      anthropicEvents(t, ids)
        .map(([name, data]) => formatSse(name, data))
        .join(''),
  },
  openai: {
    turnIndex: openaiTurnIndex,
    reply: (t, ids) => openaiResponse(t, ids, 'completed'),
    stream: (t, ids) =>
      openaiEvents(t, ids)
        .map(([name, data]) => formatSse(name, data))
        .join(''),
  },
  chat: { turnIndex: chatTurnIndex, reply: chatCompletion, stream: (t, ids) => chatChunks(t, ids).map(chatSse).join('') + CHAT_DONE },
  // Gemini streams data-only events, the whole reply in one here.
  gemini: { turnIndex: geminiTurnIndex, reply: geminiResponse, stream: (t, ids) => chatSse(geminiResponse(t, ids)) },
};

function sendJson(res: ServerResponse, status: number, value: unknown, headOnly = false): void {
  const text = JSON.stringify(value);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(headOnly ? undefined : text);
}
