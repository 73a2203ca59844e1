import { rm } from 'node:fs/promises';
import { listen } from '../gateway/listen.js';
import http from 'node:http';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import type { EgressEvent } from './sandbox.js';

/**
 * The allowlist egress proxy: an HTTP proxy on a host unix socket that a sandbox
 * without a network reaches through a forwarder (127.0.0.1:3128 inside).
 *
 * It understands the two forms clients use through `HTTP(S)_PROXY`:
 * `CONNECT host:port` (https, tunnelled as bytes) and absolute-URI requests
 * (`GET http://host/path`). Deny by default: a target is allowed only if its host
 * or its host:port is listed. Every attempt is logged, allowed or not, because the
 * log is what a receipt shows as evidence of what an agent tried to reach.
 */

export interface EgressProxyOptions {
  /** Path of the unix socket to listen on; its directory must exist and the path must be free. */
  socket: string;
  /** Host names or host:port (IPv6 as `[::1]:443`) that may be reached; everything else gets 403. */
  allow: string[];
}

export interface EgressProxy {
  readonly socket: string;
  /** Every attempt so far, oldest first (a copy). */
  events(): EgressEvent[];
  /** Stops listening, drops open tunnels and removes the socket. Idempotent. */
  close(): Promise<void>;
}

/** A request target, as the proxy decides on and connects to it. */
interface Target {
  /** Lower-case host name or IP, IPv6 without brackets. */
  host: string;
  port: number;
}

export async function startEgressProxy(options: EgressProxyOptions): Promise<EgressProxy> {
  const allowed = new Set(options.allow.map((a) => a.trim().toLowerCase()).filter(Boolean));
  const events: EgressEvent[] = [];
  const open = new Set<Duplex>();

  const record = (method: string, target: Target, decision: EgressEvent['decision']) => {
    events.push({ at: new Date().toISOString(), method, host: target.host, port: target.port, decision });
    return decision;
  };
  const decide = (method: string, target: Target) => record(method, target, isAllowed(allowed, target) ? 'allowed' : 'blocked');

  const server = http.createServer((req, res) => forwardRequest(req, res, decide, open));
  // A client may half-close right after its request (`printf 'GET ...' | nc`). By
  // default node's HTTP server then aborts the request and answers nothing; with
  // this (long-standing, undocumented) flag it answers, then closes.
  (server as http.Server & { httpAllowHalfOpen: boolean }).httpAllowHalfOpen = true;
  server.on('connect', (req: http.IncomingMessage, client: Duplex, head: Buffer) => {
    track(open, client);
    tunnel(req, client, head, decide, open);
  });
  // A protocol upgrade (websockets) through the proxy is not supported: blocked whatever the host.
  server.on('upgrade', (req: http.IncomingMessage, client: Duplex) => {
    record(req.method ?? 'GET', targetOfUrl(req.url ?? '') ?? { host: hostHeader(req), port: 0 }, 'blocked');
    client.end('HTTP/1.1 501 Not Implemented\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
  });
  server.on('connection', (socket: net.Socket) => track(open, socket));

  // Mode 0666: sandboxed clients connect as another uid (docker's forwarder runs as 65534).
  await listen(server, { socket: options.socket });

  let closing: Promise<void> | undefined;
  return {
    socket: options.socket,
    events: () => events.map((e) => ({ ...e })),
    close: () =>
      (closing ??= (async () => {
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        for (const s of open) s.destroy();
        await closed;
        await rm(options.socket, { force: true });
      })()),
  };
}

function track(open: Set<Duplex>, socket: Duplex): void {
  open.add(socket);
  socket.once('close', () => open.delete(socket));
}

function isAllowed(allowed: Set<string>, target: Target): boolean {
  const host = target.host.includes(':') ? `[${target.host}]` : target.host;
  return allowed.has(host) || allowed.has(`${host}:${target.port}`);
}

/** `host:port` of a CONNECT request (authority form). The port is required. */
export function targetOfAuthority(authority: string): Target | undefined {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:\s/[\]]+)):(\d{1,5})$/.exec(authority);
  if (!m) return undefined;
  const port = Number(m[3]);
  if (port < 1 || port > 65535) return undefined;
  return { host: (m[1] ?? m[2]!).toLowerCase(), port };
}

/** Host and port of an absolute `http://` URI; undefined for anything else (a relative path, https://, ...). */
export function targetOfUrl(url: string): Target | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return undefined;
  }
  // URL also parses `http:host` (no slashes); only the absolute form `http://host/...` is a proxy request.
  if (parsed.protocol !== 'http:' || !/^http:\/\//i.test(url)) return undefined;
  return { host: parsed.hostname.replace(/^\[|\]$/g, '').toLowerCase(), port: parsed.port ? Number(parsed.port) : 80 };
}

type Decide = (method: string, target: Target) => EgressEvent['decision'];

/** CONNECT: on allow, answer 200 once the target accepts, then pipe bytes both ways. */
function tunnel(req: http.IncomingMessage, client: Duplex, head: Buffer, decide: Decide, open: Set<Duplex>): void {
  const target = targetOfAuthority(req.url ?? '');
  if (!target) {
    decide('CONNECT', { host: req.url ?? '', port: 0 });
    client.end(statusLine(400, 'CONNECT needs host:port'));
    return;
  }
  if (decide('CONNECT', target) === 'blocked') {
    client.end(statusLine(403, `egress to ${req.url} is not on the allowlist`));
    return;
  }
  const upstream = net.connect(target.port, target.host);
  track(open, upstream);
  let established = false;
  upstream.once('connect', () => {
    established = true;
    client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    if (head.length > 0) upstream.write(head);
    upstream.pipe(client);
    client.pipe(upstream);
  });
  upstream.once('error', (e) => {
    // Before the 200 the client can still be told why; afterwards just drop the tunnel.
    if (!established && client.writable) client.end(statusLine(502, `cannot reach ${req.url}: ${e.message}`));
    else client.destroy();
  });
  client.once('error', () => upstream.destroy());
  client.once('close', () => upstream.destroy());
}

/** Headers that describe one hop and must not be forwarded (RFC 9110 §7.6.1), plus the proxy's own. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

/** An absolute-URI request: on allow, replay it to the target and stream the response back. */
function forwardRequest(req: http.IncomingMessage, res: http.ServerResponse, decide: Decide, open: Set<Duplex>): void {
  const method = req.method ?? 'GET';
  const target = targetOfUrl(req.url ?? '');
  if (!target) {
    decide(method, { host: hostHeader(req), port: 0 });
    res.writeHead(400, { 'content-type': 'text/plain', connection: 'close' });
    res.end('pairbench egress proxy: only absolute http:// URIs and CONNECT host:port are proxied\n');
    return;
  }
  if (decide(method, target) === 'blocked') {
    res.writeHead(403, { 'content-type': 'text/plain', connection: 'close' });
    res.end(`pairbench egress proxy: ${target.host}:${target.port} is not on the allowlist\n`);
    return;
  }
  const url = new URL(req.url!);
  const headers = Object.fromEntries(Object.entries(req.headers).filter(([k]) => !HOP_BY_HOP.has(k)));
  const upstream = http.request({ host: target.host, port: target.port, method, path: url.pathname + url.search, headers, agent: false }, (up) => {
    const back = Object.fromEntries(Object.entries(up.headers).filter(([k]) => !HOP_BY_HOP.has(k)));
    res.writeHead(up.statusCode ?? 502, up.statusMessage, back);
    up.pipe(res);
  });
  upstream.on('socket', (socket) => track(open, socket));
  upstream.on('error', (e) => {
    if (!res.headersSent) {
      res.writeHead(502, { 'content-type': 'text/plain', connection: 'close' });
      res.end(`pairbench egress proxy: cannot reach ${target.host}:${target.port}: ${e.message}\n`);
    } else res.destroy();
  });
  req.pipe(upstream);
}

function hostHeader(req: http.IncomingMessage): string {
  return (req.headers.host ?? '').toLowerCase();
}

function statusLine(code: 400 | 403 | 502, message: string): string {
  const reason = { 400: 'Bad Request', 403: 'Forbidden', 502: 'Bad Gateway' }[code];
  const body = `pairbench egress proxy: ${message}\n`;
  return `HTTP/1.1 ${code} ${reason}\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
}
