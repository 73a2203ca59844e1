/**
 * The model gateway: a recording proxy between one attempt's agent and its model. Agents reach
 * the model only through it, so usage, cost, caps and context delivery come from what actually
 * crossed the wire, identically in every arm, whatever the agent prints.
 */
import { Agent as HttpAgent, createServer, request as httpRequest, type IncomingHttpHeaders, type IncomingMessage, type OutgoingHttpHeaders, type ServerResponse } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { errorMessage } from '../pipeline/result.js';
import { ExchangeLog, type ExchangeRecord } from './exchange-log.js';
import { decodeBody, readBody } from './http-body.js';
import { isObject } from './json.js';
import { closeServer, listen, type ListenOn } from './listen.js';
import { Meter, type GatewayCaps, type GatewaySummary } from './meter.js';
import type { Price, Prices } from './cost.js';
import { Redactor } from './redact.js';
import { SseParser, type SseEvent } from './sse.js';
import { factsFromEvents, factsFromJson } from './usage.js';

export type { CapHit, ExchangeRecord } from './exchange-log.js';
export type { GatewayCaps, GatewaySummary } from './meter.js';
export { DEFAULT_PRICE, type CostConfidence, type Price, type Prices } from './cost.js';
export type { TokenUsage } from './usage.js';
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
  /** name -> text whose presence in a forwarded request proves delivery (e.g. the CLAUDE.md content). */
  markers?: Record<string, string>;
  /** Appends every exchange as a JSON line (credentials redacted). */
  logFile?: string;
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
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'proxy-authenticate', 'proxy-authorization', 'proxy-connection']);

export async function startGateway(options: GatewayOptions): Promise<Gateway> {
  const upstream = new URL(options.upstream);
  const secure = upstream.protocol === 'https:';
  const agent = secure ? new HttpsAgent({ keepAlive: true }) : new HttpAgent({ keepAlive: true });
  const meter = new Meter(options);
  const log = await ExchangeLog.open(options.logFile);
  let seq = 0;

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
    const finish = (patch: Partial<ExchangeRecord>) => log.add({ ...record, ...patch, duration_ms: Date.now() - started });

    // Caps are enforced here, before anything is forwarded, so a run cannot overspend whatever the agent does.
    const cap = method === 'HEAD' ? null : meter.capReached();
    if (cap) {
      const error = { type: 'error', error: { type: 'budget_exceeded', message: `pairbench gateway: ${cap} reached; request refused` } };
      // x-should-retry: false tells the provider SDKs (Claude Code included) not to retry a 429.
      const headers = { 'content-type': 'application/json', 'x-should-retry': 'false' };
      res.writeHead(429, headers).end(JSON.stringify(error));
      return finish({ status: 429, refused: cap, response_headers: headers, response_body: error });
    }

    const markers = meter.sawRequest(body);
    const requestModel = isObject(body) && typeof body.model === 'string' ? body.model : null;
    const outcome = await forward(req, raw, res);
    if (outcome.upstreamError !== undefined) meter.upstreamError();
    const facts = outcome.events ? factsFromEvents(outcome.events) : factsFromJson(outcome.body);
    meter.sawReply(facts, requestModel);
    finish({
      status: outcome.status,
      response_headers: redactor.headers(outcome.headers),
      ...(outcome.events ? { response_events: redactor.json(outcome.events) as SseEvent[] } : { response_body: redactor.json(outcome.body) }),
      ...(outcome.upstreamError !== undefined ? { upstream_error: outcome.upstreamError } : {}),
      model: facts.model ?? requestModel,
      usage: facts.usage,
      tool_calls: facts.tool_calls,
      markers,
    });
  }

  interface Outcome {
    status: number;
    headers: IncomingHttpHeaders;
    /** Set for an SSE reply: the events seen (all of them unless the stream broke). */
    events?: SseEvent[];
    body?: unknown;
    upstreamError?: string;
  }

  /** Forwards one request and streams the reply back chunk by chunk as it arrives, parsing a copy. */
  function forward(req: IncomingMessage, raw: Buffer, res: ServerResponse): Promise<Outcome> {
    return new Promise((resolve) => {
      let settled = false;
      const done = (o: Outcome) => {
        if (!settled) (settled = true), resolve(o);
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
      // The agent hung up (or timed out): stop the upstream too.
      res.on('close', () => {
        if (!res.writableFinished) up.destroy();
      });
      up.on('error', (e) => {
        const message = errorMessage(e);
        if (!res.headersSent) {
          const error = { type: 'error', error: { type: 'upstream_error', message: `pairbench gateway: upstream unreachable: ${message}` } };
          res.writeHead(502, { 'content-type': 'application/json' }).end(JSON.stringify(error));
          done({ status: 502, headers: {}, body: error, upstreamError: message });
        } else {
          res.destroy();
          done({ status: res.statusCode, headers: {}, upstreamError: message });
        }
      });
      up.on('response', (upRes) => {
        const status = upRes.statusCode ?? 502;
        res.writeHead(status, clientHeaders(upRes.headers));
        res.flushHeaders();
        const sse = /text\/event-stream/i.test(String(upRes.headers['content-type'] ?? ''));
        const parser = sse ? new SseParser() : null;
        const events: SseEvent[] = [];
        const parts: Buffer[] = [];
        upRes.on('data', (chunk: Buffer) => {
          // Backpressure: never hold more than the agent can take.
          if (!res.write(chunk)) {
            upRes.pause();
            res.once('drain', () => upRes.resume());
          }
          if (parser) events.push(...parser.feed(chunk));
          else parts.push(chunk);
        });
        const result = (upstreamError?: string): Outcome => {
          if (parser) events.push(...parser.end());
          return {
            status,
            headers: upRes.headers,
            ...(parser ? { events } : { body: decodeBody(Buffer.concat(parts)) }),
            ...(upstreamError !== undefined ? { upstreamError } : {}),
          };
        };
        upRes.on('end', () => {
          res.end();
          done(result());
        });
        // A reset mid-reply surfaces as 'error' then 'close'; 'close' accounts for it.
        upRes.on('error', () => {});
        upRes.on('close', () => {
          if (upRes.complete) return;
          // Broken off mid-reply: an infrastructure error unless the agent itself hung up.
          const clientGone = res.destroyed && !res.writableFinished;
          res.destroy();
          done(clientGone ? result() : result('upstream closed the connection mid-response'));
        });
      });
      up.end(raw);
    });
  }

  const bound = await listen(server, options.listen);
  let closing: Promise<void> | null = null;
  return {
    ...bound,
    summary: () => meter.summary(),
    records: () => log.records(),
    close: () =>
      (closing ??= (async () => {
        await closeServer(server);
        agent.destroy();
        await log.close();
      })()),
  };
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

function clientHeaders(headers: IncomingHttpHeaders): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined && !HOP_BY_HOP.has(name)) out[name] = value;
  }
  return out;
}
