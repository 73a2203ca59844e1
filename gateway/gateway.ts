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
import { errorMessage } from '../pipeline/result.js';
import { ExchangeLog, type ExchangeRecord } from './exchange-log.js';
import { decodeBody } from './http-body.js';
import { readBody } from '../pipeline/read-body.js';
import { isObject } from './json.js';
import { closeServer, listen, type ListenOn } from './listen.js';
import type { Marker } from './markers.js';
import { Meter, type GatewayCaps, type GatewaySummary, type Reservation } from './meter.js';
import type { Price, Prices } from './cost.js';
import { Redactor, SecretScrub } from './redact.js';
import { SseParser, type SseEvent } from './sse.js';
import { factsFromEvents, factsFromJson } from './usage.js';

export type { CapHit, ExchangeRecord } from './exchange-log.js';
export type { GatewayCaps, GatewaySummary } from './meter.js';
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
  /** Appends every exchange as a JSON line (credentials redacted). */
  logFile?: string;
  /** Whose model endpoints are forwarded (default `any`: Anthropic's and OpenAI's); every other path is refused. */
  provider?: Provider;
  /**
   * Headers the gateway sets on every upstream request, replacing the agent's (e.g. the real
   * `x-api-key` or `authorization`): the credential stays on the host, the agent only ever holds a placeholder.
   */
  upstreamAuth?: Record<string, string>;
}

export interface Gateway {
  /** `http://127.0.0.1:PORT` for TCP; nominal `http://localhost` for a socket. */
  url: string;
  socket?: string;
  summary(): GatewaySummary;
  records(): ExchangeRecord[];
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

/** The model endpoints forwarded for each provider; anything else is refused and logged (`any`: both). */
export type Provider = 'anthropic' | 'openai' | 'any';
const MODEL_ENDPOINTS: Record<Exclude<Provider, 'any'>, string[]> = {
  anthropic: ['/v1/messages', '/v1/messages/count_tokens'],
  openai: ['/v1/responses', '/v1/chat/completions'],
};

function isModelEndpoint(provider: Provider, method: string, path: string): boolean {
  // The raw path, compared exactly: no normalisation an encoded `..` or `//` could slip through.
  const pathname = path.split('?')[0]!;
  const allowed = provider === 'any' ? [...MODEL_ENDPOINTS.anthropic, ...MODEL_ENDPOINTS.openai] : MODEL_ENDPOINTS[provider];
  return method === 'POST' && allowed.includes(pathname);
}

/** How long a reply the agent hung up on may still be read, to account what it cost. */
const DRAIN_AFTER_HANGUP_MS = 120_000;
/** On close, how long in-flight exchanges get to finish before they are recorded as they stand. */
const CLOSE_GRACE_MS = 2_000;

export async function startGateway(options: GatewayOptions): Promise<Gateway> {
  const upstream = new URL(options.upstream);
  const secure = upstream.protocol === 'https:';
  const agent = secure ? new HttpsAgent({ keepAlive: true }) : new HttpAgent({ keepAlive: true });
  const meter = new Meter(options);
  const log = await ExchangeLog.open(options.logFile);
  const provider = options.provider ?? 'any';
  // The host's credential must never reach the agent, even if the upstream echoes it.
  const scrub = new SecretScrub(Object.values(options.upstreamAuth ?? {}));
  let seq = 0;
  /** Exchanges still under way: close() records each of them, finished or not. */
  const inFlight = new Set<{ finish: (patch: Partial<ExchangeRecord>) => void; partial: () => Partial<ExchangeRecord>; settled: Promise<void> }>();

  const server = createServer((req, res) => {
    void handle(req, res).catch(() => res.destroy());
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const started = Date.now();
    const at = new Date(started).toISOString();
    const mine = seq++;
    meter.countRequest();
    const raw = await readBody(req);
    const body = decodeBody(raw);
    const method = req.method ?? 'GET';
    const redactor = new Redactor();
    scrub.teach(redactor);
    const record: ExchangeRecord = {
      seq: mine,
      at,
      duration_ms: 0,
      method,
      // Headers first: they teach the redactor the credential values to scrub elsewhere.
      request_headers: redactor.headers(req.headers),
      path: '',
      request_body: null,
      status: 0,
      response_headers: {},
      model: null,
      usage: null,
      tool_calls: 0,
      markers: [],
    };
    record.path = redactor.path(req.url ?? '/');
    record.request_body = redactor.json(body);
    let recorded = false;
    const finish = (patch: Partial<ExchangeRecord>) => {
      if (recorded) return;
      recorded = true;
      log.add({ ...record, ...patch, duration_ms: Date.now() - started });
    };
    const path = req.url ?? '/';

    // Claude Code probes `HEAD /` before its first request: answered here, never forwarded.
    if ((method === 'HEAD' || method === 'GET') && path.split('?')[0] === '/') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end(method === 'HEAD' ? undefined : 'pairbench gateway\n');
      return finish({ status: 200, local: true });
    }
    // Only the provider's model endpoints go upstream with the host's credential.
    if (!isModelEndpoint(provider, method, path)) {
      const error = {
        type: 'error',
        error: {
          type: 'permission_error',
          message: `pairbench gateway: ${method} ${record.path} is not a model endpoint of ${provider === 'any' ? 'the model API' : provider}; refused`,
        },
      };
      res.writeHead(403, { 'content-type': 'application/json' }).end(JSON.stringify(error));
      return finish({ status: 403, refused: 'endpoint', response_body: error });
    }

    // Caps are enforced here, before anything is forwarded, so a run cannot overspend whatever the agent does.
    const requestModel = isObject(body) && typeof body.model === 'string' ? body.model : null;
    const admitted = await meter.admit(reservationFor(body, raw.length, meter.priceOf(requestModel)));
    if ('hit' in admitted) {
      const error = { type: 'error', error: { type: 'budget_exceeded', message: `pairbench gateway: ${admitted.hit} reached; request refused` } };
      // x-should-retry: false tells the provider SDKs (Claude Code included) not to retry a 429.
      const headers = { 'content-type': 'application/json', 'x-should-retry': 'false' };
      if (!res.destroyed) res.writeHead(429, headers).end(JSON.stringify(error));
      return finish({ status: 429, refused: admitted.hit, response_headers: headers, response_body: error });
    }

    const markers = meter.sawRequest(body);
    let accounted = false;
    const account = (o: Outcome): Partial<ExchangeRecord> => {
      const facts = o.events ? factsFromEvents(o.events) : factsFromJson(o.body);
      if (!accounted) {
        accounted = true;
        if (o.upstreamError !== undefined) meter.upstreamError();
        meter.sawReply(facts, requestModel);
      }
      return {
        status: o.status,
        response_headers: redactor.headers(o.headers),
        ...(o.events ? { response_events: redactor.json(o.events) as SseEvent[] } : { response_body: redactor.json(o.body) }),
        ...(o.upstreamError !== undefined ? { upstream_error: o.upstreamError } : {}),
        ...(o.clientAborted ? { client_aborted: true } : {}),
        model: facts.model ?? requestModel,
        usage: facts.usage,
        tool_calls: facts.tool_calls,
        markers,
      };
    };
    const exchange = forward(req, raw, res);
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

  interface Outcome {
    status: number;
    headers: IncomingHttpHeaders;
    /** Set for an SSE reply: the events seen (all of them unless the stream broke). */
    events?: SseEvent[];
    body?: unknown;
    upstreamError?: string;
    /** The agent hung up before the reply ended; the reply was still read to its end to account it. */
    clientAborted?: boolean;
  }

  /**
   * Forwards one request and streams the reply back chunk by chunk as it arrives, parsing a
   * copy. If the agent hangs up, the reply is still read to its end (the provider bills it):
   * its usage is accounted all the same.
   */
  function forward(req: IncomingMessage, raw: Buffer, res: ServerResponse): { done: Promise<Outcome>; soFar: () => Outcome } {
    let soFar: () => Outcome = () => ({ status: 0, headers: {}, events: [] });
    const done = new Promise<Outcome>((resolve) => {
      let settled = false;
      let clientGone = false;
      const done = (o: Outcome) => {
        if (settled) return;
        settled = true;
        resolve(clientGone ? { ...o, clientAborted: true } : o);
      };
      const up = (secure ? httpsRequest : httpRequest)({
        protocol: upstream.protocol,
        hostname: upstream.hostname,
        port: upstream.port || undefined,
        ...(options.upstreamSocket ? { socketPath: options.upstreamSocket } : {}),
        method: req.method,
        path: upstream.pathname.replace(/\/$/, '') + (req.url ?? '/'),
        headers: upstreamHeaders(req.headers, upstream.host, raw.length, options.upstreamAuth),
        agent,
      });
      res.on('close', () => {
        if (res.writableFinished) return;
        clientGone = true;
        // Read on, bounded: what the provider generates is billed whether or not the agent listens.
        setTimeout(() => up.destroy(new Error('the agent hung up and the reply did not end')), DRAIN_AFTER_HANGUP_MS).unref();
      });
      up.on('error', (e) => {
        const message = errorMessage(e);
        if (!res.headersSent && !clientGone) {
          const error = { type: 'error', error: { type: 'upstream_error', message: `pairbench gateway: upstream unreachable: ${message}` } };
          res.writeHead(502, { 'content-type': 'application/json' }).end(JSON.stringify(error));
          done({ status: 502, headers: {}, body: error, upstreamError: message });
        } else {
          res.destroy();
          done({ ...soFar(), upstreamError: message });
        }
      });
      up.on('response', (upRes) => {
        const status = upRes.statusCode ?? 502;
        const scrubbing = scrub.active();
        const headers = clientHeaders(upRes.headers, scrub);
        if (!clientGone) {
          res.writeHead(status, headers);
          res.flushHeaders();
        }
        const sse = /text\/event-stream/i.test(String(upRes.headers['content-type'] ?? ''));
        const parser = sse ? new SseParser() : null;
        const events: SseEvent[] = [];
        const parts: Buffer[] = [];
        const toClient = scrubbing ? scrub.stream() : null;
        const send = (chunk: Buffer) => {
          if (clientGone || res.destroyed) return;
          // Backpressure: never hold more than the agent can take (and never wait on an agent that left).
          if (!res.write(chunk)) {
            upRes.pause();
            const resume = () => upRes.resume();
            res.once('drain', resume);
            res.once('close', resume);
          }
        };
        soFar = () => {
          return { status, headers: upRes.headers, ...(parser ? { events: [...events] } : { body: decodeBody(Buffer.concat(parts)) }) };
        };
        upRes.on('data', (chunk: Buffer) => {
          send(toClient ? toClient.push(chunk) : chunk);
          if (parser) events.push(...parser.feed(chunk));
          else parts.push(chunk);
        });
        const result = (upstreamError?: string): Outcome => {
          if (parser) events.push(...parser.end());
          return { ...soFar(), ...(upstreamError !== undefined ? { upstreamError } : {}) };
        };
        upRes.on('end', () => {
          if (toClient) send(toClient.end());
          if (!clientGone) res.end();
          done(result());
        });
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
    records: () => log.records(),
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

/**
 * The most a request can spend, for the caps: its body's bytes as input tokens (a
 * token is at least one byte of text) plus its output limit. Without an output limit
 * it is unbounded, so it runs alone.
 */
function reservationFor(body: unknown, bytes: number, price: Price): Reservation {
  const limit = isObject(body) ? [body.max_tokens, body.max_output_tokens, body.max_completion_tokens].find((v) => typeof v === 'number' && v > 0) : undefined;
  const output = typeof limit === 'number' ? limit : Number.POSITIVE_INFINITY;
  return { tokens: bytes + output, costUsd: (bytes * Math.max(price.input, price.cache_write) + output * price.output) / 1e6 };
}

/**
 * What goes upstream: the agent's headers minus hop-by-hop ones, with the upstream's host, the
 * exact body length, and no compression (the gateway must read the reply to account for it).
 */
function upstreamHeaders(headers: IncomingHttpHeaders, host: string, length: number, auth: Record<string, string> = {}): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  const replaced = new Set(Object.keys(auth).map((k) => k.toLowerCase()));
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || HOP_BY_HOP.has(name) || name === 'host' || name === 'content-length' || name === 'accept-encoding') continue;
    if (replaced.has(name) || (replaced.size && (name === 'x-api-key' || name === 'authorization'))) continue;
    out[name] = value;
  }
  for (const [name, value] of Object.entries(auth)) out[name.toLowerCase()] = value;
  out.host = host;
  out['accept-encoding'] = 'identity';
  if (length > 0 || headers['content-length'] !== undefined) out['content-length'] = length;
  return out;
}

function clientHeaders(headers: IncomingHttpHeaders, scrub: SecretScrub): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || HOP_BY_HOP.has(name)) continue;
    // A scrubbed body may change length: it goes chunked.
    if (name === 'content-length' && scrub.active()) continue;
    out[name] = Array.isArray(value) ? value.map((v) => scrub.text(v)) : scrub.text(value);
  }
  return out;
}
