import type http from 'node:http';
import type https from 'node:https';
import type { Readable } from 'node:stream';
import { lazyRequire } from '../lazy-require.js';

// Loaded by the first client (a run without a remote cache has none): node:http and node:https (with tls) cost
// every start ~10 ms (a tiny plan: 96 ms without them, 108 ms with them preloaded, side by side).
const httpModule = lazyRequire<typeof http>('node:http');
const httpsModule = lazyRequire<typeof https>('node:https');

/** A response whose body is a stream: read it (readBody, pipe) or discard it. */
export interface HttpResponse {
  status: number;
  ok: boolean;
  body: Readable;
  /** Drops the body (the connection goes back to the pool once it is read off). */
  discard(): void;
}

/**
 * HTTP/1.1 requests to one server over keep-alive connections, with node:http. The remote
 * cache's client: a replay asks for one small record per node, and fetch (undici) spent ~1 ms
 * of CPU on each and ~20 ms loading itself, where node:http takes a fraction of that
 * (114 records: 170-200 ms against ~70 ms, measured side by side). Idle sockets do not keep
 * the process alive (the agent unrefs them).
 */
export class HttpClient {
  private readonly transport: typeof http | typeof https;
  private readonly agent: http.Agent;

  /** `base`: the server's URL without a trailing slash; request paths are appended to it. */
  constructor(private readonly base: string) {
    this.transport = base.startsWith('https:') ? httpsModule() : httpModule();
    this.agent = new this.transport.Agent({ keepAlive: true, maxSockets: 16 });
  }

  request(method: string, path: string, options: { headers?: Record<string, string>; body?: Buffer; timeoutMs: number }): Promise<HttpResponse> {
    return new Promise((resolve, reject) => {
      const req = this.transport.request(
        new URL(this.base + path),
        {
          method,
          agent: this.agent,
          headers: { ...options.headers, ...(options.body ? { 'content-length': String(options.body.length) } : {}) },
          signal: AbortSignal.timeout(options.timeoutMs),
        },
        (res) => {
          const status = res.statusCode ?? 0;
          resolve({
            status,
            ok: status >= 200 && status < 300,
            body: res,
            discard: () => void res.resume(),
          });
        },
      );
      req.on('error', reject);
      req.end(options.body);
    });
  }
}
