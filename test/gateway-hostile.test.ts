import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, request, type IncomingHttpHeaders, type IncomingMessage, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { startGateway, type Gateway, type GatewayOptions } from '../gateway/gateway.js';
import { decodedVariants } from '../text/decode.js';

// A hostile client and a hostile upstream, on real sockets: the caps, the memory and the
// host's key must hold whatever either side sends.

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function gateway(options: Omit<GatewayOptions, 'listen'>): Promise<Gateway> {
  const g = await startGateway({ listen: { port: 0 }, ...options });
  cleanups.push(() => g.close());
  return g;
}

async function serve(handler: (req: IncomingMessage, body: Buffer, res: import('node:http').ServerResponse) => void): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => handler(req, Buffer.concat(parts), res));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  cleanups.push(() => new Promise<void>((r) => server.close(() => r())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  raw: Buffer;
}

function post(gw: Gateway, path: string, body: unknown, headers: Record<string, string> = {}): Promise<Reply> {
  const data = typeof body === 'string' ? body : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      { hostname: '127.0.0.1', port: new URL(gw.url).port, method: 'POST', path, headers: { 'content-type': 'application/json', ...headers } },
      (res) => {
        const parts: Buffer[] = [];
        res.on('data', (c: Buffer) => parts.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, raw: Buffer.concat(parts) }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(data);
  });
}

/**
 * An upstream that bills the most the Responses API allows: every byte of input a token, each
 * continued response's whole context again, each image at its largest, and the full output limit.
 * It keeps server-side state, as the real one does.
 */
async function billingUpstream(hostile: { continuation?: number; holdMs?: number } = {}) {
  const context = new Map<string, number>();
  const bills: number[] = [];
  let seq = 0;
  let inFlight = 0;
  let maxInFlight = 0;
  let billed = 0;
  /** Requests that reached it while one with a server-side tool was in flight, or the other way round. */
  let overlapsUnbounded = 0;
  let unboundedInFlight = 0;
  const seen: Record<string, unknown>[] = [];
  const up = await serve((req, body, res) => {
    const r = JSON.parse(body.toString('utf8')) as Record<string, unknown>;
    seen.push(r);
    const unbounded = JSON.stringify(r.tools ?? []).includes('web_search');
    if (unboundedInFlight > 0 || (unbounded && inFlight > 0)) overlapsUnbounded++;
    inFlight++;
    if (unbounded) unboundedInFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    const earlier = typeof r.previous_response_id === 'string' ? (hostile.continuation ?? context.get(r.previous_response_id) ?? 0) : 0;
    const images = (body.toString('utf8').match(/"input_image"/g) ?? []).length;
    const serverTools = Array.isArray(r.tools) ? r.tools.filter((t) => (t as { type?: string }).type === 'web_search').length : 0;
    const input = body.length + earlier + images * 48_200 + serverTools * 30_000;
    const output = typeof r.max_output_tokens === 'number' ? r.max_output_tokens : 5_000;
    const id = `resp_${seq++}`;
    context.set(id, input + output);
    billed += input + output;
    bills.push(input + output);
    // Answer after a turn of the event loop (or a while, as a slow provider does), so concurrent requests overlap.
    const answer = (fn: () => void) => (hostile.holdMs ? setTimeout(fn, hostile.holdMs) : setImmediate(fn));
    answer(() => {
      inFlight--;
      if (unbounded) unboundedInFlight--;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ object: 'response', id, model: 'gpt-fake', output: [], usage: { input_tokens: input, output_tokens: output } }));
    });
  });
  return { ...up, seen, bills: () => bills, billed: () => billed, maxInFlight: () => maxInFlight, overlapsUnbounded: () => overlapsUnbounded };
}

const responsesBody = (extra: Record<string, unknown> = {}) => ({
  model: 'gpt-fake',
  input: [{ role: 'user', content: [{ type: 'input_text', text: 'go' }] }],
  max_output_tokens: 100,
  ...extra,
});

/** A small seeded generator, so a failing mix can be replayed. */
function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

describe('gateway caps: what a request can bill, whatever its shape', () => {
  it('a burst of tiny requests continuing a response (server-side state) never passes the cap by more than one request', async () => {
    // The issue's attack: one cheap request, then 50 concurrent tiny bodies that continue it; the
    // provider bills each 5,000 tokens of the conversation it keeps, which no body shows.
    for (const policy of ['refuse', 'serialize'] as const) {
      const up = await billingUpstream({ continuation: 5_000, holdMs: 50 });
      const cap = 20_000;
      const gw = await gateway({ upstream: up.url, caps: { maxTokens: cap }, unboundedRequests: policy });
      const first = await post(gw, '/v1/responses', responsesBody());
      expect(first.status).toBe(200);
      const id = JSON.parse(first.raw.toString()).id as string;
      const replies = await Promise.all(Array.from({ length: 50 }, () => post(gw, '/v1/responses', responsesBody({ previous_response_id: id }))));
      const spent = gw.summary().usage.input_tokens + gw.summary().usage.output_tokens;
      expect(spent, policy).toBe(up.billed());
      if (policy === 'refuse') {
        expect(replies.map((r) => r.status)).toEqual(Array(50).fill(400));
        expect(spent).toBe(up.bills()[0]);
      } else {
        // One at a time, each holding what was left: the last one admitted passes the cap by at most its own bill.
        expect(up.maxInFlight()).toBe(1);
        expect(spent).toBeGreaterThan(cap);
        expect(spent).toBeLessThanOrEqual(cap + Math.max(...up.bills()));
        expect(replies.filter((r) => r.status === 429).length).toBeGreaterThan(40);
      }
      await gw.close();
    }
  });

  it('a request continuing a response this attempt never received is refused: it is state from outside the attempt', async () => {
    const up = await billingUpstream();
    const gw = await gateway({ upstream: up.url, caps: { maxTokens: 1_000_000 } });
    const r = await post(gw, '/v1/responses', responsesBody({ previous_response_id: 'resp_from_another_attempt' }));
    expect(r.status).toBe(400);
    expect(JSON.parse(r.raw.toString()).error.message).toMatch(/previous_response_id.*did not receive/);
    expect(up.billed()).toBe(0);
    expect(gw.records()[0]).toMatchObject({ status: 400, refused: 'unbounded' });
  });

  it('a server-side tool is taken out of the request (the feature refused, the request sent), and said so in the record', async () => {
    const up = await billingUpstream();
    const gw = await gateway({ upstream: up.url, caps: { maxTokens: 1_000_000 } });
    const tools = [
      { type: 'function', name: 'shell', parameters: {} },
      { type: 'web_search' },
      { type: 'namespace', name: 'n', tools: [{ type: 'function', name: 'f' }] },
    ];
    expect((await post(gw, '/v1/responses', responsesBody({ tools }))).status).toBe(200);
    expect((up.seen[0]!.tools as { type: string }[]).map((t) => t.type)).toEqual(['function', 'namespace']);
    expect(gw.records()[0]!.removed).toEqual([expect.stringMatching(/^tools\[1\] \(type web_search\): a server-side tool/)]);
  });

  it('images by URL, files by id, stored prompts, conversations and fields it does not know are refused by default, with where and why', async () => {
    const up = await billingUpstream();
    const gw = await gateway({ upstream: up.url, caps: { maxTokens: 1_000_000 } });
    const shapes: [Record<string, unknown>, RegExp][] = [
      [{ input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'https://example.com/a.png' }] }] }, /input\[0\]\.content\[0\].*by URL/],
      [{ input: [{ role: 'user', content: [{ type: 'input_file', file_id: 'file_1' }] }] }, /input_file/],
      [{ prompt: { id: 'pmpt_1' } }, /prompt: a stored prompt/],
      [{ frobnicate: { depth: 9 } }, /frobnicate: a field pairbench does not know/],
      [
        { input: [{ role: 'user', content: [{ type: 'input_audio', input_audio: { data: 'AAAA' } }] }] },
        /input\[0\]\.content\[0\] \(type input_audio\): a block type/,
      ],
    ];
    for (const [extra, why] of shapes) {
      const r = await post(gw, '/v1/responses', responsesBody(extra));
      expect(r.status, JSON.stringify(extra)).toBe(400);
      const message = JSON.parse(r.raw.toString()).error.message as string;
      expect(message).toMatch(why);
      expect(message).toMatch(/unbounded_requests: serialize/);
      expect(gw.records().at(-1)).toMatchObject({ status: 400, refused: 'unbounded' });
    }
    // Conversation state this attempt did not make is refused whatever the policy (no hint to serialize).
    const conversation = await post(gw, '/v1/responses', responsesBody({ conversation: 'conv_1' }));
    expect(conversation.status).toBe(400);
    expect(JSON.parse(conversation.raw.toString()).error.message).not.toMatch(/serialize/);
    expect(up.billed()).toBe(0);
  });

  it('under `serialize`, an unbounded request goes alone, with what is left of the budget, and is settled from its usage', async () => {
    const up = await billingUpstream();
    const gw = await gateway({ upstream: up.url, caps: { maxTokens: 200_000 }, unboundedRequests: 'serialize' });
    const replies = await Promise.all([
      ...Array.from({ length: 6 }, () => post(gw, '/v1/responses', responsesBody({ tools: [{ type: 'web_search' }] }))),
      ...Array.from({ length: 6 }, () => post(gw, '/v1/responses', responsesBody())),
    ]);
    expect(replies.every((r) => r.status === 200 || r.status === 429)).toBe(true);
    // The server tool went upstream (allowed), and nothing was in flight beside a request whose cost was unknown.
    expect(up.seen.filter((r) => JSON.stringify(r.tools ?? []).includes('web_search')).length).toBeGreaterThan(0);
    expect(up.overlapsUnbounded()).toBe(0);
    const unbounded = gw.records().filter((r) => r.reservation?.unbounded);
    expect(unbounded.length).toBeGreaterThan(0);
    expect(gw.summary().usage.input_tokens + gw.summary().usage.output_tokens).toBe(up.billed());
  });

  it('property: any mix of concurrent request shapes, under either policy, spends at most the cap plus one request (100 seeded mixes)', async () => {
    for (let seed = 1; seed <= 100; seed++) {
      const rand = prng(seed);
      const policy = seed % 2 ? 'refuse' : 'serialize';
      const up = await billingUpstream();
      const cap = 5_000 + Math.floor(rand() * 60_000);
      const gw = await gateway({ upstream: up.url, caps: { maxTokens: cap }, unboundedRequests: policy });
      const ids: string[] = [];
      const shape = (): Record<string, unknown> => {
        const pick = rand();
        const text = 'y'.repeat(Math.floor(rand() * 6_000));
        const out = Math.floor(rand() * 3_000) + 1;
        if (pick < 0.3) return responsesBody({ input: [{ role: 'user', content: [{ type: 'input_text', text }] }], max_output_tokens: out });
        if (pick < 0.45 && ids.length) return responsesBody({ previous_response_id: ids[Math.floor(rand() * ids.length)], max_output_tokens: out });
        if (pick < 0.55)
          return responsesBody({ input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'data:image/png;base64,iVBORw0KGgo=' }] }] });
        if (pick < 0.65) return responsesBody({ tools: [{ type: 'web_search' }] });
        if (pick < 0.75) return responsesBody({ max_output_tokens: undefined });
        if (pick < 0.8) return responsesBody({ input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'https://example.com/x.png' }] }] });
        return responsesBody({ input: [{ role: 'user', content: text }], max_output_tokens: out });
      };
      for (let wave = 0; wave < 4; wave++) {
        const replies = await Promise.all(Array.from({ length: 12 }, () => post(gw, '/v1/responses', shape())));
        for (const r of replies) if (r.status === 200) ids.push(JSON.parse(r.raw.toString()).id as string);
      }
      // One request: the largest bounded reservation, or the largest bill of one sent alone.
      let one = Math.max(0, ...up.bills());
      for (const r of gw.records())
        if (r.reservation && !r.reservation.unbounded && Number.isFinite(r.reservation.tokens)) one = Math.max(one, r.reservation.tokens);
      const spent = gw.summary().usage.input_tokens + gw.summary().usage.output_tokens;
      expect(spent, `seed ${seed}`).toBe(up.billed());
      expect(spent, `seed ${seed} (${policy}): cap ${cap}, one request ${one}`).toBeLessThanOrEqual(cap + one);
      if (policy === 'serialize') expect(up.overlapsUnbounded(), `seed ${seed}`).toBe(0);
      await gw.close();
    }
  });
});

describe('gateway memory: bodies and request counts it will not hold', () => {
  it('a 2 GiB body is refused with 413 before it is read, and one streamed without a length is cut at the limit; the gateway lives on', async () => {
    const up = await billingUpstream();
    const gw = await gateway({ upstream: up.url, maxRequestBytes: 8 * 1024 * 1024 });
    const rssBefore = process.memoryUsage().rss;
    // Announced: refused on the header alone.
    const announced = await new Promise<number>((resolve, reject) => {
      const req = request(
        { hostname: '127.0.0.1', port: new URL(gw.url).port, method: 'POST', path: '/v1/responses', headers: { 'content-length': String(2 * 1024 ** 3) } },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      req.write(Buffer.alloc(64 * 1024));
    });
    expect(announced).toBe(413);
    // Chunked: the gateway reads up to its limit, answers 413 and hangs up; the client stops on its own broken pipe.
    const chunk = Buffer.alloc(1024 * 1024, 'a');
    let sent = 0;
    const streamed = await new Promise<number>((resolve) => {
      const req = request(
        { hostname: '127.0.0.1', port: new URL(gw.url).port, method: 'POST', path: '/v1/responses', headers: { 'transfer-encoding': 'chunked' } },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', () => resolve(-1));
      const pump = () => {
        while (sent < 2 * 1024 ** 3) {
          sent += chunk.length;
          if (!req.write(chunk)) return void req.once('drain', pump);
        }
        req.end();
      };
      pump();
    });
    expect([413, -1]).toContain(streamed);
    expect(sent).toBeLessThan(1024 ** 3);
    expect(process.memoryUsage().rss - rssBefore).toBeLessThan(256 * 1024 * 1024);
    expect((await post(gw, '/v1/responses', responsesBody())).status).toBe(200);
    expect(gw.records().filter((r) => r.refused === 'body-too-large')).toHaveLength(2);
  });

  it('a million small requests, pipelined: memory stays flat, the log stays within its budget, and the gateway still answers', async () => {
    const up = await billingUpstream();
    const dir = mkdtempSync(join(tmpdir(), 'pairbench-gw-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const logFile = join(dir, 'gateway.jsonl');
    // No keep-alive timeout: on a loaded machine one long turn of the event loop outlasts Node's
    // 5 s, and a connection with requests waiting on it is cut as idle (a wall-clock policy, not the flood's doing).
    const gw = await gateway({ upstream: up.url, logFile, maxLogBytes: 4 * 1024 * 1024, keepAliveTimeoutMs: 0 });
    const rssBefore = process.memoryUsage().rss;
    const total = 1_000_000;
    const perSocket = total / 4;
    const one = Buffer.from('GET /v1/organizations HTTP/1.1\r\nhost: x\r\n\r\n');
    await Promise.all(
      Array.from(
        { length: 4 },
        () =>
          new Promise<void>((resolve, reject) => {
            const socket = connect(Number(new URL(gw.url).port), '127.0.0.1');
            let answers = 0;
            let tail = '';
            socket.on('data', (d: Buffer) => {
              const text = tail + d.toString('latin1');
              answers += text.split('HTTP/1.1 ').length - 1;
              // One byte short of the status line's prefix: one split across chunks is counted once, none twice.
              tail = text.slice(-('HTTP/1.1 '.length - 1));
              if (answers >= perSocket) socket.end();
            });
            socket.on('close', () => resolve());
            socket.on('error', reject);
            let written = 0;
            const batch = Buffer.concat(Array.from({ length: 1000 }, () => one));
            const pump = () => {
              while (written < perSocket) {
                written += 1000;
                if (!socket.write(batch)) return void socket.once('drain', pump);
              }
            };
            pump();
          }),
      ),
    );
    expect(gw.summary().requests).toBeGreaterThanOrEqual(total);
    expect(process.memoryUsage().rss - rssBefore).toBeLessThan(300 * 1024 * 1024);
    expect((await post(gw, '/v1/responses', responsesBody())).status).toBe(429);
    await gw.close();
    const log = readFileSync(logFile, 'utf8');
    expect(log.length).toBeLessThan(5 * 1024 * 1024);
    expect(gw.summary().log_budget_exceeded).toBe(true);
  });
});

const KEY = 'sk-ant-host-0123456789abcdef-secret';

/** Every form of the key a reader of these bytes could recover: as written, unescaped, decoded to a fixed point. */
function carriesKey(bytes: Buffer | string): boolean {
  const text = typeof bytes === 'string' ? bytes : bytes.toString('latin1');
  return decodedVariants(text).some((v) => v.text.includes(KEY) || v.text.includes(KEY.slice(3)));
}

describe('gateway: the host key never reaches the agent', () => {
  const echoes: [string, (res: import('node:http').ServerResponse, key: string) => void][] = [
    [
      'JSON-escaped',
      (res, key) =>
        res
          .writeHead(401, { 'content-type': 'application/json' })
          .end(`{"error":{"message":"bad key ${[...key].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).join('')}"}}`),
    ],
    [
      'gzip-encoded although identity was asked',
      (res, key) =>
        res
          .writeHead(401, { 'content-type': 'application/json', 'content-encoding': 'gzip' })
          .end(gzipSync(JSON.stringify({ error: { message: `bad key ${key}` } }))),
    ],
    [
      'base64',
      (res, key) =>
        res.writeHead(200, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            object: 'response',
            id: 'r',
            output: [{ type: 'message', content: [{ type: 'output_text', text: `here: ${Buffer.from(`key=${key}`).toString('base64')}` }] }],
          }),
        ),
    ],
    [
      'base64 of gzip',
      (res, key) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ note: gzipSync(key).toString('base64') })),
    ],
    [
      'in an SSE event, escaped',
      (res, key) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.end(`event: response.output_text.delta\ndata: {"type":"response.output_text.delta","delta":"${key.replace(/-/g, '\\u002d')}"}\n\n`);
      },
    ],
    ['in a header', (res, key) => res.writeHead(200, { 'content-type': 'application/json', 'x-echo': key }).end('{}')],
  ];
  it('an upstream echoing it inside a message: the agent reads the message with the key replaced, the rest intact', async () => {
    // Blanking the whole text would hide the key too, so the echoes below cannot tell the two apart
    // (npm run mutate: host-key-scrub-substring-replacement).
    const up = await serve((req, _body, res) =>
      res.writeHead(401, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          type: 'error',
          error: { type: 'authentication_error', message: `bad key ${String(req.headers['authorization']).replace(/^Bearer /, '')}, see the docs` },
        }),
      ),
    );
    const dir = mkdtempSync(join(tmpdir(), 'pairbench-gw-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const gw = await gateway({ upstream: up.url, upstreamAuth: { authorization: `Bearer ${KEY}` }, logFile: join(dir, 'gateway.jsonl') });
    const r = await post(gw, '/v1/messages', { model: 'claude-fake', max_tokens: 16, messages: [{ role: 'user', content: 'go' }] });
    await gw.close();
    expect(r.status).toBe(401);
    expect(carriesKey(r.raw)).toBe(false);
    expect((JSON.parse(r.raw.toString('utf8')) as { error: { message: string } }).error.message).toBe('bad key [redacted], see the docs');
    expect(carriesKey(readFileSync(join(dir, 'gateway.jsonl')))).toBe(false);
  });

  for (const [name, echo] of echoes) {
    it(`an upstream echoing it ${name}: absent from every byte the agent gets and from the log`, async () => {
      const up = await serve((req, _body, res) => echo(res, String(req.headers['authorization'] ?? '').replace(/^Bearer /, '')));
      const dir = mkdtempSync(join(tmpdir(), 'pairbench-gw-'));
      cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
      const gw = await gateway({ upstream: up.url, upstreamAuth: { authorization: `Bearer ${KEY}` }, logFile: join(dir, 'gateway.jsonl') });
      const r = await post(gw, '/v1/responses', responsesBody());
      // What the agent's client reads: the bytes, and the bytes as its HTTP client would decode them.
      let decoded = r.raw;
      try {
        decoded = gunzipSync(r.raw);
      } catch {
        // not compressed
      }
      const seen = Buffer.concat([Buffer.from(JSON.stringify(r.headers)), r.raw, decoded]);
      expect(carriesKey(seen), seen.toString('latin1').slice(0, 400)).toBe(false);
      await gw.close();
      expect(carriesKey(readFileSync(join(dir, 'gateway.jsonl')))).toBe(false);
    });
  }

  it('only the headers and the query a model endpoint needs go upstream: a method override or an odd query does not', async () => {
    const seen: { method: string; url: string; headers: IncomingHttpHeaders }[] = [];
    const up = await serve((req, _body, res) => {
      seen.push({ method: req.method!, url: req.url!, headers: req.headers });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
    const gw = await gateway({ upstream: up.url, upstreamAuth: { 'x-api-key': KEY } });
    const ok = await post(
      gw,
      '/v1/messages?beta=true',
      { model: 'm', max_tokens: 10, messages: [] },
      {
        'anthropic-version': '2023-06-01',
        'anthropic-beta': 'x',
        'x-http-method-override': 'DELETE',
        'x-method-override': 'DELETE',
        'x-forwarded-host': 'evil.example',
        cookie: 'a=b',
      },
    );
    expect(ok.status).toBe(200);
    expect(seen[0]!.method).toBe('POST');
    expect(seen[0]!.url).toBe('/v1/messages?beta=true');
    expect(Object.keys(seen[0]!.headers).sort()).toEqual([
      'accept-encoding',
      'anthropic-beta',
      'anthropic-version',
      'connection',
      'content-length',
      'content-type',
      'host',
      'x-api-key',
    ]);
    for (const q of ['?beta=true&admin=1', '?url=http://evil', '?beta=true&beta=false']) {
      const r = await post(gw, `/v1/messages${q}`, { model: 'm', max_tokens: 10, messages: [] });
      expect(r.status, q).toBe(403);
    }
    expect(seen).toHaveLength(1);
  });
});
