/**
 * The model gateway: a recording proxy between one attempt's agent and its model. Agents reach
 * the model only through it, so usage, cost, caps and context delivery come from what actually
 * crossed the wire, identically in every arm, whatever the agent prints.
 */
import {
  Agent as HttpAgent,
  createServer,
  request as httpRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type OutgoingHttpHeaders,
  type ServerResponse,
} from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { Readable } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import { errorMessage } from '../pipeline/result.js';
import { ExchangeLog, type ExchangeRecord } from './exchange-log.js';
import { decodeBody } from './http-body.js';
import { errorExcerpt, isProviderFault, MODEL_PROVIDERS, type ProviderName } from './providers.js';
import { isObject } from './json.js';
import { closeServer, listen, type ListenOn } from './listen.js';
import type { Marker } from './markers.js';
import { Meter, REMAINING, type GatewayCaps, type GatewaySummary, type Reservation } from './meter.js';
import { apiOf, boundRequest, offersTools, withoutServerTools } from './request-bounds.js';
import type { Price, Prices } from './cost.js';
import { Redactor, SecretScrub } from './redact.js';
import { SseParser, type SseEvent } from './sse.js';
import { factsFromEvents, factsFromJson } from './usage.js';

export type { CapHit, ExchangeRecord } from './exchange-log.js';
export type { GatewayCaps, GatewaySummary, ProviderError } from './meter.js';
export { DEFAULT_PRICE, type CostConfidence, type Price, type Prices } from './cost.js';
export type { TokenUsage } from './usage.js';
export type { Marker, MarkerScope } from './markers.js';
export type { ListenOn } from './listen.js';

export interface GatewayOptions {
  listen: ListenOn;
  /** Base URL of the model API (e.g. the fake model's `http://127.0.0.1:PORT`); request paths are appended. */
  upstream: string;
  /** Reach the upstream through this unix socket instead of its host and port. */
  upstreamSocket?: string;
  caps?: GatewayCaps;
  /** USD per million tokens by model name; `*` prices any other model (estimated). */
  prices?: Prices;
  /** Price for unpriced models when `prices` has no `*`; default DEFAULT_PRICE; null leaves them unpriced. */
  defaultPrice?: Price | null;
  /** name -> the fingerprint and scope whose presence in a forwarded request proves delivery (markers.ts). */
  markers?: Record<string, Marker>;
  /** name -> the tools (an MCP server's) that must be offered in the attempt's first turn (GatewaySummary.not_ready_at_first_turn). */
  ready?: Record<string, Marker>;
  /** Appends every exchange as a JSON line (credentials redacted). */
  logFile?: string;
  /** Whose model endpoints are forwarded (default `any`: Anthropic's and OpenAI's); every other path is refused. */
  provider?: Provider;
  /**
   * Headers the gateway sets on every upstream request, replacing the agent's (e.g. the real
   * `x-api-key` or `authorization`): the credential stays on the host, the agent only ever holds a placeholder.
   */
  upstreamAuth?: Record<string, string>;
  /**
   * A request whose cost cannot be bounded before it is sent (server-side state, a source named by
   * URL or file id, a field pairbench does not know): `refuse` answers 400 and logs why (default);
   * `serialize` forwards it alone, holding all that is left of the budget, settled from its usage.
   * Server-side tools are taken out of a request under `refuse` (the rest of it goes on).
   */
  unboundedRequests?: UnboundedPolicy;
  /** A request body larger than this is refused with 413 before it is read (default 32 MiB). */
  maxRequestBytes?: number;
  /** A reply larger than this (after decompression) is cut off and recorded as an upstream error (default 64 MiB). */
  maxReplyBytes?: number;
  /** The log's budget in bytes: past it, further requests are refused (default 256 MiB). */
  maxLogBytes?: number;
  /**
   * How long an agent's connection may sit with no request before it is closed (default Node's,
   * 5 s; 0: kept until close()). A wall-clock bound: on a starved machine one long turn of the
   * event loop can outlast it while requests already wait on the connection, which is then cut.
   */
  keepAliveTimeoutMs?: number;
}

export type UnboundedPolicy = 'refuse' | 'serialize';

/** The defaults of the size limits, in bytes (documented in the README). */
export const GATEWAY_LIMITS = { maxRequestBytes: 32 * 1024 * 1024, maxReplyBytes: 64 * 1024 * 1024, maxLogBytes: 256 * 1024 * 1024 } as const;

export interface Gateway {
  /** `http://127.0.0.1:PORT` for TCP; nominal `http://localhost` for a socket. */
  url: string;
  socket?: string;
  summary(): GatewaySummary;
  /**
   * Aborted when the provider refuses the host's credential (its 401 or 403): no retry of the
   * agent's can succeed, so the attempt may end now instead of at its wall cap.
   */
  providerRefused: AbortSignal;
  records(): ExchangeRecord[];
  /** Resolves once every exchange received so far is recorded (an event to wait on, not a time). */
  idle(): Promise<void>;
  /** Stops listening, cuts open connections and flushes the log. */
  close(): Promise<void>;
}

/** Connection-level headers, meaningful for one hop only. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
]);

/** Whose model endpoints are forwarded (MODEL_PROVIDERS); anything else is refused and logged (`any`: every provider's). */
export type Provider = ProviderName | 'any';

/** The error a provider's stream carried (Anthropic's `error` event, OpenAI's `error` or `response.failed`), or undefined. */
function streamedError(events: readonly SseEvent[]): unknown {
  for (const e of events) {
    if (!isObject(e.data)) continue;
    if (e.event === 'error' || e.data.type === 'error') return e.data;
    // A Chat Completions stream carries its error as a chunk of its own.
    if (isObject(e.data.error) && e.data.object === undefined) return e.data;
    if (e.data.type === 'response.failed' && isObject(e.data.response)) return e.data.response;
  }
  return undefined;
}

/** Why a request may not go upstream with the host's credential, or null when it may. */
function endpointProblem(provider: Provider, method: string, path: string): string | null {
  // The raw path, compared exactly: no normalisation an encoded `..` or `//` could slip through.
  const q = path.indexOf('?');
  const pathname = q < 0 ? path : path.slice(0, q);
  const allowed = provider === 'any' ? Object.values(MODEL_PROVIDERS) : [MODEL_PROVIDERS[provider]];
  if (method !== 'POST' || !allowed.some((p) => p.isEndpoint(pathname))) return `is not a model endpoint of ${provider === 'any' ? 'the model API' : provider}`;
  if (q >= 0 && !QUERY_ALLOWED.has(path.slice(q + 1)))
    return `carries a query the model endpoint does not take (only ${[...QUERY_ALLOWED].map((v) => `?${v}`).join(', ')})`;
  return null;
}

/** The whole query strings a model endpoint is sent with (Anthropic's SDK adds `?beta=true`; Gemini streams with `?alt=sse`). */
const QUERY_ALLOWED = new Set(['beta=true', 'alt=sse']);

/**
 * The request headers forwarded upstream: what the providers' APIs and SDKs read. Everything
 * else (method overrides, forwarding and cookie headers, anything new) stays here.
 */
const FORWARDED_HEADERS = new Set([
  'content-type',
  'accept',
  'user-agent',
  'anthropic-version',
  'anthropic-beta',
  'anthropic-dangerous-direct-browser-access',
  'x-app',
  'x-goog-api-client',
  'x-claude-code-session-id',
  'openai-beta',
  'originator',
  'session_id',
  'session-id',
  'thread-id',
  'conversation_id',
  'version',
  'idempotency-key',
  'x-client-request-id',
]);
const FORWARDED_PREFIXES = ['x-stainless-', 'x-codex-'];
/** The agent's own credential headers: forwarded only when the gateway does not set the host's. */
const CREDENTIAL_HEADERS = new Set(['x-api-key', 'authorization', 'x-goog-api-key']);

function forwarded(name: string): boolean {
  return FORWARDED_HEADERS.has(name) || FORWARDED_PREFIXES.some((p) => name.startsWith(p));
}

/** How long a reply the agent hung up on may still be read, to account what it cost. */
const DRAIN_AFTER_HANGUP_MS = 120_000;
/** On close, how long in-flight exchanges get to finish before they are recorded as they stand. */
const CLOSE_GRACE_MS = 2_000;

// eslint-disable-next-line max-lines-per-function -- 341 lines, to be split into named phases (issue 63)
export async function startGateway(options: GatewayOptions): Promise<Gateway> {
  const upstream = new URL(options.upstream);
  const secure = upstream.protocol === 'https:';
  const agent = secure ? new HttpsAgent({ keepAlive: true }) : new HttpAgent({ keepAlive: true });
  const meter = new Meter(options);
  const refusal = new AbortController();
  const limits = {
    ...GATEWAY_LIMITS,
    ...definedOnly({ maxRequestBytes: options.maxRequestBytes, maxReplyBytes: options.maxReplyBytes, maxLogBytes: options.maxLogBytes }),
  };
  const log = await ExchangeLog.open(options.logFile, limits.maxLogBytes);
  const provider = options.provider ?? 'any';
  const policy = options.unboundedRequests ?? 'refuse';
  // The host's credential must never reach the agent, even if the upstream echoes it.
  const scrub = new SecretScrub(Object.values(options.upstreamAuth ?? {}));
  let seq = 0;
  /** Exchanges still under way: close() records each of them, finished or not. */
  const inFlight = new Set<{ finish: (patch: Partial<ExchangeRecord>) => void; partial: () => Partial<ExchangeRecord>; settled: Promise<void> }>();
  /** Requests received and not yet recorded, and who waits for there to be none. */
  let open = 0;
  let idleWaiters: (() => void)[] = [];
  const settledOne = () => {
    if (--open > 0) return;
    const waiting = idleWaiters;
    idleWaiters = [];
    for (const w of waiting) w();
  };

  const server = createServer((req, res) => {
    open++;
    void handle(req, res)
      .catch(() => res.destroy())
      .finally(settledOne);
  });
  if (options.keepAliveTimeoutMs !== undefined) server.keepAliveTimeout = options.keepAliveTimeoutMs;

  // eslint-disable-next-line max-lines-per-function -- 154 lines, to be split into named phases (issue 63)
  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const started = Date.now();
    const at = new Date(started).toISOString();
    const mine = seq++;
    meter.countRequest();
    const method = req.method ?? 'GET';
    const path = req.url ?? '/';
    // Past the log's budget nothing more is recorded, so nothing more is forwarded.
    if (log.exhausted()) return refuseUnrecorded(req, res);
    const redactor = new Redactor();
    scrub.teach(redactor);
    const record: ExchangeRecord = {
      seq: mine,
      at,
      duration_ms: 0,
      method,
      // Headers first: they teach the redactor the credential values to scrub elsewhere.
      request_headers: redactor.headers(req.headers),
      path: redactor.path(path),
      request_body: null,
      status: 0,
      response_headers: {},
      model: null,
      usage: null,
      tool_calls: 0,
      markers: [],
    };
    let recorded = false;
    const finish = (patch: Partial<ExchangeRecord>) => {
      if (recorded) return;
      recorded = true;
      if (!log.add({ ...record, ...patch, duration_ms: Date.now() - started })) meter.logFull();
    };
    const answer = (status: number, body: unknown, patch: Partial<ExchangeRecord>, headers: Record<string, string> = {}) => {
      const all = { 'content-type': 'application/json', ...headers };
      if (!res.destroyed && !res.headersSent) res.writeHead(status, all).end(JSON.stringify(body));
      finish({ status, response_headers: all, response_body: body, ...patch });
    };

    // Claude Code probes `HEAD /` before its first request: answered here, never forwarded.
    if ((method === 'HEAD' || method === 'GET') && path.split('?')[0] === '/') {
      req.resume();
      res.writeHead(200, { 'content-type': 'text/plain' }).end(method === 'HEAD' ? undefined : 'pairbench gateway\n');
      return finish({ status: 200, local: true });
    }
    // Only the provider's model endpoints go upstream with the host's credential.
    const problem = endpointProblem(provider, method, path);
    if (problem) {
      closeAfter(req, res);
      return answer(403, errorBody('permission_error', `pairbench gateway: ${method} ${record.path} ${problem}; refused`), { refused: 'endpoint' });
    }
    // The body is read only up to its limit: an agent cannot grow the process that runs every attempt.
    const read = await readBounded(req, limits.maxRequestBytes);
    if (!read.ok) {
      closeAfter(req, res);
      const message = `pairbench gateway: the request body is over the limit of ${limits.maxRequestBytes} bytes (model.max_request_mb); refused`;
      return answer(413, errorBody('request_too_large', message), { refused: 'body-too-large' });
    }
    const raw = read.body;
    let body = decodeBody(raw);
    record.request_body = redactor.json(body);
    const pathname = path.split('?')[0]!;
    const api = apiOf(pathname)!;

    // What the request can bill, from its structure: the caps hold for any shape of request.
    let outgoing = raw;
    let removed: string[] = [];
    if (policy === 'refuse') {
      const stripped = withoutServerTools(api, body);
      if (stripped) {
        ({ body, removed } = stripped);
        outgoing = Buffer.from(JSON.stringify(body));
      }
    }
    const bound = boundRequest(
      api,
      body,
      outgoing.length,
      meter.knownResponses(),
      pathname === '/v1/messages/count_tokens' || pathname.endsWith(':countTokens'),
    );
    if (!bound.bounded && (bound.foreign || policy === 'refuse')) {
      const why = bound.reasons.join('; ');
      const hint = bound.foreign
        ? ''
        : " To allow such requests (forwarded one at a time, with what is left of the budget), set `unbounded_requests: serialize` in the run step's model.";
      return answer(
        400,
        errorBody('invalid_request_error', `pairbench gateway: what this request can bill cannot be bounded before it is sent (${why}); refused.${hint}`),
        {
          refused: 'unbounded',
          ...(removed.length ? { removed } : {}),
        },
      );
    }
    const requestModel = isObject(body) && typeof body.model === 'string' ? body.model : null;
    const price = meter.priceOf(requestModel);
    const estimate: Reservation | typeof REMAINING = !bound.bounded
      ? REMAINING
      : bound.free
        ? { tokens: 0, costUsd: 0 }
        : {
            tokens: bound.inputTokens + bound.outputTokens,
            costUsd: (bound.inputTokens * Math.max(price.input, price.cache_write) + bound.outputTokens * price.output) / 1e6,
          };
    // Caps are enforced here, before anything is forwarded, so a run cannot overspend whatever the agent does.
    const turn = offersTools(body);
    const admitted = await meter.admit(estimate, turn);
    if ('hit' in admitted) {
      // Past the turn cap: a request error, which no SDK retries (OpenCode's retries a 429 with backoff whatever the headers say).
      if (admitted.hit === 'turn-cap')
        return answer(400, errorBody('invalid_request_error', 'pairbench gateway: turn-cap reached (limits.turns); request refused'), { refused: 'turn-cap' });
      // x-should-retry: false tells the provider SDKs (Claude Code included) not to retry a 429.
      return answer(
        429,
        errorBody('budget_exceeded', `pairbench gateway: ${admitted.hit} reached; request refused`),
        { refused: admitted.hit },
        { 'x-should-retry': 'false' },
      );
    }
    const r = admitted.reservation;
    record.reservation = { tokens: r.tokens, cost_usd: r.costUsd, ...(r.unbounded ? { unbounded: true as const } : {}) };
    if (removed.length) record.removed = removed;

    const markers = meter.sawRequest(body);
    let accounted = false;
    const account = (o: Outcome): Partial<ExchangeRecord> => {
      const facts = o.events ? factsFromEvents(o.events) : factsFromJson(o.body);
      // What the upstream sent is scrubbed of the host's key in every form before it is logged or quoted.
      const fromUpstream = (v: unknown) => (scrub.active() ? scrub.json(redactor.json(v)) : redactor.json(v));
      if (!accounted) {
        accounted = true;
        if (o.upstreamError !== undefined) meter.upstreamError(o.upstreamError);
        if (o.fromUpstream) meter.upstreamStatus(o.status);
        const streamError = o.events ? streamedError(o.events) : undefined;
        if (o.fromUpstream && isProviderFault(o.status)) meter.providerFault(o.status, errorExcerpt(fromUpstream(o.body ?? streamError)));
        // A stream that began well and then carried the provider's error (overloaded, a server error).
        else if (o.fromUpstream && streamError !== undefined)
          meter.providerFault(o.status, `error event mid-stream: ${errorExcerpt(fromUpstream(streamError))}`);
        if (o.fromUpstream && (o.status === 401 || o.status === 403)) refusal.abort(new Error(`the provider refused the credential: HTTP ${o.status}`));
        meter.sawReply(facts, requestModel, turn);
      }
      return {
        status: o.status,
        response_headers: fromUpstream(redactor.headers(o.headers)) as Record<string, string | string[]>,
        ...(o.events ? { response_events: fromUpstream(o.events) as SseEvent[] } : { response_body: fromUpstream(o.body) }),
        ...(o.upstreamError !== undefined ? { upstream_error: o.upstreamError } : {}),
        ...(o.clientAborted ? { client_aborted: true } : {}),
        model: facts.model ?? requestModel,
        usage: facts.usage,
        tool_calls: facts.tool_calls,
        markers,
      };
    };
    const exchange = forward(req, outgoing, res);
    const entry = {
      finish,
      // What was seen so far, for close() when the reply has not ended.
      partial: () => account({ ...exchange.soFar(), upstreamError: 'the attempt ended before the reply did' }),
      settled: exchange.done.then(() => undefined),
    };
    inFlight.add(entry);
    try {
      finish(account(await exchange.done));
    } finally {
      inFlight.delete(entry);
      admitted.release();
    }
  }

  /** Past the log's budget: a refusal that is counted, not recorded (the attempt has already failed on it). */
  function refuseUnrecorded(req: IncomingMessage, res: ServerResponse): void {
    closeAfter(req, res);
    const message = `pairbench gateway: this attempt's exchange log reached its budget of ${limits.maxLogBytes} bytes (limits.max_log_mb); request refused`;
    res.writeHead(429, { 'content-type': 'application/json', 'x-should-retry': 'false' }).end(JSON.stringify(errorBody('budget_exceeded', message)));
  }

  interface Outcome {
    status: number;
    headers: IncomingHttpHeaders;
    /** Set for an SSE reply: the events seen (all of them unless the stream broke). */
    events?: SseEvent[];
    body?: unknown;
    upstreamError?: string;
    /** The agent hung up before the reply ended; the reply was still read to its end to account it. */
    clientAborted?: boolean;
    /** The status is the upstream's (not the gateway's own 502). */
    fromUpstream?: boolean;
  }

  /**
   * Forwards one request and streams the reply back as it arrives (decompressed, and scrubbed of
   * the host's key event by event or, for a JSON reply, whole), parsing a copy. If the agent
   * hangs up, the reply is still read to its end (the provider bills it): its usage is accounted
   * all the same. A reply over its size limit is cut off there.
   */
  // eslint-disable-next-line max-lines-per-function -- 123 lines, to be split into named phases (issue 63)
  function forward(req: IncomingMessage, raw: Buffer, res: ServerResponse): { done: Promise<Outcome>; soFar: () => Outcome } {
    let clientGone = false;
    let soFar: () => Outcome = () => ({ status: 0, headers: {}, events: [] });
    // eslint-disable-next-line max-lines-per-function -- 118 lines, to be split into named phases (issue 63)
    const done = new Promise<Outcome>((resolve) => {
      let settled = false;
      // The agent's connection, watched for its hang-up until the reply is settled.
      const socket = res.socket;
      const done = (o: Outcome) => {
        if (settled) return;
        settled = true;
        socket?.off('end', hangUp).off('error', hangUp);
        resolve(clientGone ? { ...o, clientAborted: true } : o);
      };
      const up = (secure ? httpsRequest : httpRequest)({
        protocol: upstream.protocol,
        hostname: upstream.hostname,
        port: upstream.port || undefined,
        ...(options.upstreamSocket ? { socketPath: options.upstreamSocket } : {}),
        method: 'POST',
        path: upstream.pathname.replace(/\/$/, '') + (req.url ?? '/'),
        headers: upstreamHeaders(req.headers, upstream.host, raw.length, options.upstreamAuth),
        agent,
      });
      function hangUp(): void {
        if (clientGone || res.writableFinished) return;
        clientGone = true;
        // Read on, bounded: what the provider generates is billed whether or not the agent listens.
        setTimeout(() => up.destroy(new Error('the agent hung up and the reply did not end')), DRAIN_AFTER_HANGUP_MS).unref();
      }
      // The agent hung up: known as soon as its end of the connection is read (a FIN or a reset),
      // which the reply can no longer reach; the response's own 'close' comes turns later, once
      // the socket is shut down, by when the rest of the reply may have been read and recorded as delivered.
      socket?.once('end', hangUp).once('error', hangUp);
      res.on('close', hangUp);
      const fail = (status: number, message: string, upstreamError: string) => {
        if (!res.headersSent && !clientGone) {
          const error = errorBody('upstream_error', message);
          res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(error));
          done({ status, headers: {}, body: error, upstreamError });
        } else {
          res.destroy();
          done({ ...soFar(), upstreamError });
        }
      };
      up.on('error', (e) => fail(502, `pairbench gateway: upstream unreachable: ${errorMessage(e)}`, errorMessage(e)));
      up.on('response', (upRes) => {
        const status = upRes.statusCode ?? 502;
        const encoding = String(upRes.headers['content-encoding'] ?? 'identity')
          .trim()
          .toLowerCase();
        const decoder = decoderFor(encoding);
        if (decoder === undefined) {
          upRes.destroy();
          return fail(
            502,
            `pairbench gateway: the upstream answered in content-encoding "${encoding}", which the gateway cannot read (it asked for identity)`,
            `unreadable content-encoding ${encoding}`,
          );
        }
        const source: Readable = decoder ? upRes.pipe(decoder) : upRes;
        const scrubbing = scrub.active();
        const sse = /text\/event-stream/i.test(String(upRes.headers['content-type'] ?? ''));
        // A JSON or text reply that must be scrubbed is sent whole; an SSE stream event by event.
        const whole = scrubbing && !sse;
        const headers = clientHeaders(upRes.headers, scrub, Boolean(decoder) || scrubbing);
        if (!clientGone && !whole) {
          res.writeHead(status, headers);
          res.flushHeaders();
        }
        const parser = sse ? new SseParser() : null;
        const events: SseEvent[] = [];
        const parts: Buffer[] = [];
        let bytes = 0;
        const toClient = scrubbing && sse ? scrub.events() : null;
        const send = (chunk: Buffer) => {
          if (clientGone || res.destroyed || chunk.length === 0) return;
          // Backpressure: never hold more than the agent can take (and never wait on an agent that left).
          if (!res.write(chunk)) {
            source.pause();
            const resume = () => source.resume();
            res.once('drain', resume);
            res.once('close', resume);
          }
        };
        soFar = () => ({
          status,
          headers: upRes.headers,
          fromUpstream: true,
          ...(parser ? { events: [...events] } : { body: decodeBody(Buffer.concat(parts)) }),
          ...(clientGone ? { clientAborted: true } : {}),
        });
        const result = (upstreamError?: string): Outcome => {
          if (parser) events.push(...parser.end());
          return { ...soFar(), ...(upstreamError !== undefined ? { upstreamError } : {}) };
        };
        source.on('data', (chunk: Buffer) => {
          if (settled) return;
          bytes += chunk.length;
          if (bytes > limits.maxReplyBytes) {
            upRes.destroy();
            res.destroy();
            return done(result(`the reply is over the limit of ${limits.maxReplyBytes} bytes (model.max_reply_mb): cut off`));
          }
          if (!whole) send(toClient ? toClient.push(chunk) : chunk);
          if (parser) events.push(...parser.feed(chunk));
          else parts.push(chunk);
        });
        source.on('end', () => {
          if (settled) return;
          if (whole) {
            const body = scrub.body(Buffer.concat(parts));
            if (!clientGone && !res.destroyed) res.writeHead(status, { ...headers, 'content-length': body.length }).end(body);
          } else {
            if (toClient) send(toClient.end());
            if (!clientGone) res.end();
          }
          done(result());
        });
        if (decoder) decoder.on('error', (e) => (res.destroy(), done(result(`the reply could not be decoded (${encoding}): ${errorMessage(e)}`))));
        // A reset mid-reply surfaces as 'error' then 'close'; 'close' accounts for it.
        upRes.on('error', () => {});
        upRes.on('close', () => {
          if (upRes.complete) return;
          res.destroy();
          done(result(clientGone ? 'the agent hung up and the reply did not end' : 'upstream closed the connection mid-response'));
        });
      });
      up.end(raw);
    });
    return { done, soFar: () => soFar() };
  }

  const bound = await listen(server, options.listen);
  let closing: Promise<void> | null = null;
  return {
    ...bound,
    summary: () => meter.summary(),
    providerRefused: refusal.signal,
    records: () => log.records(),
    idle: () => (open === 0 ? Promise.resolve() : new Promise<void>((resolve) => idleWaiters.push(resolve))),
    close: () =>
      (closing ??= (async () => {
        // Exchanges still under way get a moment, then are recorded with what they carried.
        const pending = [...inFlight];
        await Promise.race([Promise.all(pending.map((p) => p.settled)), new Promise((r) => setTimeout(r, CLOSE_GRACE_MS).unref())]);
        for (const p of inFlight) p.finish(p.partial());
        await closeServer(server);
        agent.destroy();
        await log.close();
      })()),
  };
}

/** The error shape both providers' SDKs read (`error.type`, `error.message`). */
function errorBody(type: string, message: string): Record<string, unknown> {
  return { type: 'error', error: { type, message } };
}

/** The request body, read up to `max` bytes; over it (announced or sent), nothing more is read. */
function readBounded(req: IncomingMessage, max: number): Promise<{ ok: true; body: Buffer } | { ok: false }> {
  const announced = Number(req.headers['content-length']);
  if (Number.isFinite(announced) && announced > max) return Promise.resolve({ ok: false });
  return new Promise((resolve) => {
    const parts: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > max) {
        req.off('data', onData);
        req.pause();
        parts.length = 0;
        return resolve({ ok: false });
      }
      parts.push(chunk);
    };
    req.on('data', onData);
    req.on('end', () => resolve({ ok: true, body: Buffer.concat(parts) }));
    req.on('error', () => resolve({ ok: false }));
  });
}

/**
 * A refused request's body is never read: when it has one, the connection is closed once the
 * answer is sent (a request without a body keeps its connection, pipelined or not).
 */
function closeAfter(req: IncomingMessage, res: ServerResponse): void {
  const length = Number(req.headers['content-length'] ?? 0);
  if (req.complete || (!req.headers['transfer-encoding'] && !(length > 0))) {
    req.resume();
    return;
  }
  res.shouldKeepAlive = false;
  res.on('finish', () => req.socket.destroy());
}

/** A decompressor for a content-encoding, null for identity, undefined for one the gateway cannot read. */
function decoderFor(encoding: string): ReturnType<typeof createGunzip> | null | undefined {
  if (encoding === 'identity' || encoding === '') return null;
  if (encoding === 'gzip' || encoding === 'x-gzip') return createGunzip();
  if (encoding === 'deflate') return createInflate();
  if (encoding === 'br') return createBrotliDecompress();
  return undefined;
}

function definedOnly<T extends Record<string, number | undefined>>(o: T): Partial<Record<keyof T, number>> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<Record<keyof T, number>>;
}

/**
 * What goes upstream: only the headers a model endpoint reads (FORWARDED_HEADERS), the host's
 * credential in place of the agent's placeholder, the upstream's host, the exact body length, and
 * no compression (the gateway must read the reply to account for it and scrub it).
 */
function upstreamHeaders(headers: IncomingHttpHeaders, host: string, length: number, auth: Record<string, string> = {}): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  const hostCredential = Object.keys(auth).length > 0;
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    if (forwarded(name) || (!hostCredential && CREDENTIAL_HEADERS.has(name))) out[name] = value;
  }
  for (const [name, value] of Object.entries(auth)) out[name.toLowerCase()] = value;
  out.host = host;
  out['accept-encoding'] = 'identity';
  out['content-length'] = length;
  return out;
}

/** The reply's headers for the agent: hop-by-hop ones dropped, values scrubbed, and no length or encoding once the body is rewritten. */
function clientHeaders(headers: IncomingHttpHeaders, scrub: SecretScrub, rewritten: boolean): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || HOP_BY_HOP.has(name)) continue;
    if (rewritten && (name === 'content-length' || name === 'content-encoding')) continue;
    out[name] = Array.isArray(value) ? value.map((v) => scrub.text(v)) : scrub.text(value);
  }
  return out;
}
