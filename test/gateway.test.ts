import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, request, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeModel, type FakeModel, type FakeScript } from '../gateway/fake-model.js';
import { openaiTurnIndex } from '../gateway/fake-openai.js';
import { parseFakeScript } from '../gateway/fake-script.js';
import { startGateway, type Gateway, type GatewayOptions } from '../gateway/gateway.js';
import { SseParser, type SseEvent } from '../gateway/sse.js';
import { fingerprintLines, markersFound } from '../gateway/markers.js';
import { mcpToolNameOf } from '../agents/adapter.js';
import { agentAdapters } from '../agents/index.js';

// Real sockets end to end: a client -> the gateway -> the scripted fake model (or a tiny real upstream).

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'pairbench-gw-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function fake(script: FakeScript, on: { port: 0 } | { socket: string } = { port: 0 }): Promise<FakeModel> {
  const f = await startFakeModel(script, on);
  cleanups.push(() => f.close());
  return f;
}

async function gateway(options: Omit<GatewayOptions, 'listen'> & Partial<Pick<GatewayOptions, 'listen'>>): Promise<Gateway> {
  const g = await startGateway({ listen: { port: 0 }, ...options });
  cleanups.push(() => g.close());
  return g;
}

interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
}

/** One HTTP exchange with Node's own client, over TCP (url) or a unix socket. */
function send(target: { url: string; socket?: string }, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Reply> {
  const u = new URL(target.url);
  const data = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        ...(target.socket ? { socketPath: target.socket } : { hostname: u.hostname, port: u.port }),
        method,
        path,
        headers: { ...(data ? { 'content-type': 'application/json' } : {}), ...headers },
      },
      (res) => {
        const parts: Buffer[] = [];
        res.on('data', (c: Buffer) => parts.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(parts).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(data);
  });
}

function events(text: string): SseEvent[] {
  const p = new SseParser();
  return [...p.feed(text), ...p.end()];
}

const CREDS = { 'x-api-key': 'sk-test', authorization: 'Bearer sk-test' };
const TOOLS = [{ name: 'Write', description: 'write a file', input_schema: { type: 'object' } }];

function anthropicRequest(messages: unknown[], extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { model: 'claude-fake', max_tokens: 1024, stream: true, system: [{ type: 'text', text: 'You are helpful.' }], tools: TOOLS, messages, ...extra };
}

/** Rebuilds the assistant content blocks from an Anthropic stream, as a client SDK would. */
function assemble(evs: SseEvent[]): { blocks: Record<string, unknown>[]; stop: unknown } {
  const blocks: Record<string, unknown>[] = [];
  const json: string[] = [];
  let stop: unknown = null;
  for (const { data } of evs) {
    const d = data as Record<string, any>;
    if (d.type === 'content_block_start') {
      blocks[d.index] = { ...d.content_block };
      json[d.index] = '';
    }
    if (d.type === 'content_block_delta' && d.delta.type === 'text_delta') blocks[d.index]!.text += d.delta.text;
    if (d.type === 'content_block_delta' && d.delta.type === 'input_json_delta') json[d.index] += d.delta.partial_json;
    if (d.type === 'content_block_stop' && blocks[d.index]!.type === 'tool_use') blocks[d.index]!.input = JSON.parse(json[d.index]!);
    if (d.type === 'message_delta') stop = d.delta.stop_reason;
  }
  return { blocks, stop };
}

const WRITE_SCRIPT: FakeScript = {
  turns: [
    {
      text: 'Writing it.',
      tool_calls: [{ name: 'Write', input: { file_path: '/tmp/x/hello.txt', content: 'hi\n' } }],
      usage: { input_tokens: 100, output_tokens: 20, cache_creation_input_tokens: 50, cache_read_input_tokens: 0 },
    },
    { text: 'All done.', usage: { input_tokens: 10, output_tokens: 5, cache_read_input_tokens: 150 } },
  ],
};

describe('fake model + gateway: Anthropic Messages', () => {
  it('streams the scripted tool_use then text, sums usage from the SSE, and proves delivery', async () => {
    const model = await fake(WRITE_SCRIPT);
    const gw = await gateway({
      upstream: model.url,
      prices: { 'claude-fake': { input: 3, output: 15, cache_write: 3.75, cache_read: 0.3 } },
      markers: {
        context: { lines: ['MARKER-7f3a: use tabs'], scope: { kind: 'anywhere' } },
        absent: { lines: ['MARKER-never-sent'], scope: { kind: 'anywhere' } },
      },
    });

    // Claude Code's probe is answered by the gateway itself: nothing but model requests goes upstream.
    const head = await send(gw, 'HEAD', '/');
    expect(head.status).toBe(200);
    expect(model.requests).toHaveLength(0);

    const user = { role: 'user', content: [{ type: 'text', text: 'create hello.txt' }] };
    const first = await send(
      gw,
      'POST',
      '/v1/messages?beta=true',
      anthropicRequest([user], { system: [{ type: 'text', text: 'Project notes:\nMARKER-7f3a: use tabs\n' }] }),
      CREDS,
    );
    expect(first.status).toBe(200);
    expect(first.headers['content-type']).toMatch(/text\/event-stream/);
    const evs = events(first.text);
    expect(evs.map((e) => e.event)).toEqual([
      'message_start',
      'content_block_start',
      'content_block_delta',
      'content_block_stop',
      // the tool input JSON (49 characters) arrives in three partial_json chunks
      'content_block_start',
      'content_block_delta',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    const one = assemble(evs);
    expect(one.stop).toBe('tool_use');
    expect(one.blocks).toEqual([
      { type: 'text', text: 'Writing it.' },
      { type: 'tool_use', id: 'toolu_fake_0_0', name: 'Write', input: { file_path: '/tmp/x/hello.txt', content: 'hi\n' } },
    ]);

    // A side request (no tools) gets plain text and does not advance the script.
    const side = await send(gw, 'POST', '/v1/messages', { model: 'claude-fake', max_tokens: 10, messages: [user] }, CREDS);
    expect(JSON.parse(side.text)).toMatchObject({ type: 'message', content: [{ type: 'text', text: 'ok' }] });

    // Turn = assistant entries in messages; a role "system" entry is tolerated.
    const assistant = { role: 'assistant', content: one.blocks };
    const result = { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_fake_0_0', content: 'ok' }] };
    const second = await send(gw, 'POST', '/v1/messages?beta=true', anthropicRequest([user, assistant, { role: 'system', content: 'note' }, result]), CREDS);
    const two = assemble(events(second.text));
    expect(two).toEqual({ blocks: [{ type: 'text', text: 'All done.' }], stop: 'end_turn' });

    // Past the end of the script: "done".
    const third = await send(gw, 'POST', '/v1/messages', anthropicRequest([user, assistant, result, { role: 'assistant', content: 'All done.' }, user]));
    expect(assemble(events(third.text)).blocks).toEqual([{ type: 'text', text: 'done' }]);

    const s = gw.summary();
    // Side reply: 10 in / 2 out. message_delta's output_tokens is the final count, not an addition to message_start's 1.
    expect(s.usage).toEqual({ input_tokens: 100 + 10 + 10 + 100, output_tokens: 20 + 2 + 5 + 20, cache_write_tokens: 50, cache_read_tokens: 150 });
    expect(s).toMatchObject({ requests: 5, model_requests: 4, tool_calls: 1, cap_hit: null, upstream_errors: 0, cost_confidence: 'exact' });
    expect(s.cost_usd).toBeCloseTo((220 * 3 + 47 * 15 + 50 * 3.75 + 150 * 0.3) / 1e6, 12);
    expect(s.delivered).toEqual({ context: true, absent: false });
    expect(gw.records().map((r) => r.markers)).toEqual([[], ['context'], [], [], []]);
    expect(model.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      'POST /v1/messages?beta=true',
      'POST /v1/messages',
      'POST /v1/messages?beta=true',
      'POST /v1/messages',
    ]);
    // The credential reaches the upstream untouched; only the records are redacted.
    expect(model.requests[1]!.headers['x-api-key']).toBe('sk-test');
  });

  it('passes a streaming reply through chunk by chunk, not buffered', async () => {
    // A real upstream that sends one event, then waits until the client has seen it before finishing.
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    const upstream = createServer((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('event: message_start\ndata: {"type":"message_start","message":{"model":"m","usage":{"input_tokens":7,"output_tokens":1}}}\n\n');
      void released.then(() =>
        res.end('event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":3}}\n\n'),
      );
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    cleanups.push(() => new Promise<void>((r) => upstream.close(() => r())));
    const gw = await gateway({ upstream: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}` });

    const u = new URL(gw.url);
    const text = await new Promise<string>((resolve, reject) => {
      const req = request({ hostname: u.hostname, port: u.port, method: 'POST', path: '/v1/messages' }, (res) => {
        let all = '';
        res.on('data', (c: Buffer) => {
          all += c.toString();
          if (all.includes('message_start')) release();
        });
        res.on('end', () => resolve(all));
      });
      req.on('error', reject);
      req.end(JSON.stringify({ tools: TOOLS, messages: [] }));
    });
    expect(events(text).map((e) => e.event)).toEqual(['message_start', 'message_delta']);
    expect(gw.summary().usage).toEqual({ input_tokens: 7, output_tokens: 3, cache_write_tokens: 0, cache_read_tokens: 0 });
  });

  it('accounts a non-streaming reply from its JSON body', async () => {
    const model = await fake(WRITE_SCRIPT);
    const gw = await gateway({ upstream: model.url });
    const r = await send(gw, 'POST', '/v1/messages', anthropicRequest([{ role: 'user', content: 'hi' }], { stream: false }));
    const body = JSON.parse(r.text);
    expect(body).toMatchObject({ type: 'message', stop_reason: 'tool_use', content: [{ type: 'text' }, { type: 'tool_use', name: 'Write' }] });
    // Unpriced model: the default price gives an estimate.
    expect(gw.summary()).toMatchObject({
      model_requests: 1,
      tool_calls: 1,
      usage: { input_tokens: 100, output_tokens: 20, cache_write_tokens: 50 },
      cost_confidence: 'estimated',
    });
    expect(gw.summary().cost_usd).toBeGreaterThan(0);
  });
});

describe('gateway: caps', () => {
  it('a token cap refuses the next request with 429 before it reaches the model', async () => {
    const model = await fake(WRITE_SCRIPT);
    const gw = await gateway({ upstream: model.url, caps: { maxTokens: 150 } });
    const user = { role: 'user', content: 'go' };
    expect((await send(gw, 'POST', '/v1/messages', anthropicRequest([user]))).status).toBe(200); // 170 tokens
    const refused = await send(gw, 'POST', '/v1/messages', anthropicRequest([user]));
    expect(refused.status).toBe(429);
    expect(refused.headers['x-should-retry']).toBe('false');
    expect(JSON.parse(refused.text)).toMatchObject({ type: 'error', error: { type: 'budget_exceeded' } });
    expect(model.requests).toHaveLength(1);
    expect(gw.summary()).toMatchObject({ requests: 2, model_requests: 1, cap_hit: 'token-cap' });
    expect(gw.records()[1]).toMatchObject({ status: 429, refused: 'token-cap' });
  });

  it('a cost cap refuses once the priced cost reaches it; free models are reported free', async () => {
    const model = await fake({ turns: [{ text: 'a', usage: { input_tokens: 1_000_000, output_tokens: 0 } }] });
    const gw = await gateway({
      upstream: model.url,
      caps: { maxCostUsd: 1 },
      prices: { 'claude-fake': { input: 1, output: 1, cache_write: 1, cache_read: 1 } },
    });
    const user = { role: 'user', content: 'go' };
    expect((await send(gw, 'POST', '/v1/messages', anthropicRequest([user]))).status).toBe(200);
    expect((await send(gw, 'POST', '/v1/messages', anthropicRequest([user]))).status).toBe(429);
    expect(gw.summary()).toMatchObject({ cost_usd: 1, cost_confidence: 'exact', cap_hit: 'cost-cap' });

    const free = await gateway({ upstream: model.url, prices: { '*': { input: 0, output: 0, cache_write: 0, cache_read: 0 } } });
    await send(free, 'POST', '/v1/messages', anthropicRequest([user]));
    expect(free.summary()).toMatchObject({ cost_usd: 0, cost_confidence: 'free' });
  });
});

describe('gateway: records', () => {
  it('redacts credentials in the log file and in memory, keeping token counts', async () => {
    const dir = tempDir();
    const logFile = join(dir, 'gateway.jsonl');
    const model = await fake(WRITE_SCRIPT);
    const gw = await gateway({ upstream: model.url, logFile });
    await send(gw, 'HEAD', '/', undefined, CREDS);
    await send(gw, 'POST', '/v1/messages?beta=true', anthropicRequest([{ role: 'user', content: 'go' }], { metadata: { user_id: 'u1', api_key: 'sk-test' } }), {
      ...CREDS,
      'x-secret-thing': 'hush-hush-123',
    });
    // A query the endpoint does not take is refused, and its credential redacted in the record too.
    expect((await send(gw, 'POST', '/v1/messages?beta=true&key=sk-test', anthropicRequest([]), CREDS)).status).toBe(403);
    await gw.close();

    const text = readFileSync(logFile, 'utf8');
    expect(text).not.toContain('sk-test');
    expect(text).not.toContain('hush-hush-123');
    const lines = text
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines).toHaveLength(3);
    expect(lines[2]).toMatchObject({ status: 403, refused: 'endpoint', path: '/v1/messages?beta=true&key=%5Bredacted%5D' });
    const post = lines[1];
    expect(post.request_headers).toMatchObject({ 'x-api-key': '[redacted]', authorization: '[redacted]', 'x-secret-thing': '[redacted]' });
    expect(post.path).toBe('/v1/messages?beta=true');
    expect(post.request_body).toMatchObject({ max_tokens: 1024, metadata: { user_id: 'u1', api_key: '[redacted]' } });
    expect(post.status).toBe(200);
    expect(post.response_events[0]).toMatchObject({ event: 'message_start', data: { message: { usage: { input_tokens: 100 } } } });
    expect(post).toMatchObject({ model: 'claude-fake', tool_calls: 1, usage: { input_tokens: 100, output_tokens: 20 } });
    expect(JSON.stringify(gw.records())).not.toContain('sk-test');
  });

  it("the agent's credential, repeated in its message and in a header of another name, is redacted there, and only it", async () => {
    // Blanking the whole text would hide the key too: only the text around it kept tells the substring
    // replacement is there (npm run mutate: redactor-substring-replacement).
    const key = 'sk-agent-0123456789abcdef';
    const dir = tempDir();
    const gw = await gateway({ upstream: (await fake(WRITE_SCRIPT)).url, logFile: join(dir, 'gateway.jsonl') });
    await send(gw, 'POST', '/v1/messages', anthropicRequest([{ role: 'user', content: `my key is ${key}, keep it` }]), {
      'x-api-key': key,
      'x-note': `from ${key} with care`,
    });
    await gw.close();
    const text = readFileSync(join(dir, 'gateway.jsonl'), 'utf8');
    expect(text).not.toContain(key);
    const [line] = text
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { request_headers: Record<string, string>; request_body: { messages: { content: string }[] } });
    expect(line!.request_headers['x-api-key']).toBe('[redacted]');
    expect(line!.request_headers['x-note']).toBe('from [redacted] with care');
    expect(line!.request_body.messages[0]!.content).toBe('my key is [redacted], keep it');
  });

  it('an unreachable upstream answers 502 and counts as an upstream error', async () => {
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const port = (probe.address() as AddressInfo).port;
    await new Promise<void>((r) => probe.close(() => r()));
    const gw = await gateway({ upstream: `http://127.0.0.1:${port}` });
    const r = await send(gw, 'POST', '/v1/messages', anthropicRequest([]));
    expect(r.status).toBe(502);
    expect(gw.summary()).toMatchObject({ requests: 1, model_requests: 0, upstream_errors: 1 });
    expect(gw.records()[0]!.upstream_error).toMatch(/ECONNREFUSED/);
  });
});

describe('gateway: a broken upstream stream', () => {
  it('an upstream that dies mid-stream counts as an upstream error, and the usage seen so far is kept', async () => {
    const upstream = createServer((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('event: message_start\ndata: {"type":"message_start","message":{"model":"m","usage":{"input_tokens":7,"output_tokens":1}}}\n\n', () =>
        setTimeout(() => res.socket?.destroy(), 20),
      );
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    cleanups.push(() => new Promise<void>((r) => upstream.close(() => r())));
    const gw = await gateway({ upstream: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}` });
    await expect(send(gw, 'POST', '/v1/messages', anthropicRequest([]))).rejects.toThrow();
    // The client sees the reset about when the gateway does: wait for the record (an event), not a time.
    await gw.idle();
    expect(gw.summary()).toMatchObject({ upstream_errors: 1, model_requests: 1, usage: { input_tokens: 7, output_tokens: 1 } });
    expect(gw.records()[0]).toMatchObject({ status: 200, upstream_error: 'upstream closed the connection mid-response' });
  });
});

describe("gateway: the provider's own failures", () => {
  it('records the last one with its status and what the provider said, scrubbed of the host key; a stream that carries an error event is one', async () => {
    const KEY = 'sk-host-key-echoed-back-0123456789';
    const replies = [
      // A provider that quotes the key it refused: the excerpt must not.
      (res: import('node:http').ServerResponse) =>
        res
          .writeHead(401, { 'content-type': 'application/json' })
          .end(JSON.stringify({ type: 'error', error: { type: 'authentication_error', message: `invalid x-api-key ${KEY}` } })),
      (res: import('node:http').ServerResponse) =>
        res.writeHead(529, { 'content-type': 'application/json' }).end('{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'),
      (res: import('node:http').ServerResponse) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.end(
          'event: message_start\ndata: {"type":"message_start","message":{"model":"m","usage":{"input_tokens":5,"output_tokens":1}}}\n\n' +
            'event: error\ndata: {"type":"error","error":{"type":"api_error","message":"Internal server error"}}\n\n',
        );
      },
    ];
    let i = 0;
    const upstream = createServer((req, res) => {
      req.resume();
      req.on('end', () => replies[i++]!(res));
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    cleanups.push(() => new Promise<void>((r) => upstream.close(() => r())));
    const gw = await gateway({ upstream: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`, upstreamAuth: { 'x-api-key': KEY } });
    expect(gw.summary().provider_error).toBeNull();

    expect((await send(gw, 'POST', '/v1/messages', anthropicRequest([]))).status).toBe(401);
    expect(gw.summary().provider_error).toEqual({ status: 401, message: 'authentication_error: invalid x-api-key [redacted]' });
    expect(gw.providerRefused.aborted).toBe(true);
    expect((await send(gw, 'POST', '/v1/messages', anthropicRequest([]))).status).toBe(529);
    expect(gw.summary().provider_error).toEqual({ status: 529, message: 'overloaded_error: Overloaded' });
    expect((await send(gw, 'POST', '/v1/messages', anthropicRequest([]))).status).toBe(200);
    expect(gw.summary().provider_error).toEqual({ status: 200, message: 'error event mid-stream: api_error: Internal server error' });
    expect(gw.summary().upstream_statuses).toEqual({ '200': 1, '401': 1, '529': 1 });
    expect(JSON.stringify(gw.summary())).not.toContain(KEY);
  });
});

describe('fake model + gateway: a provider that misbehaves when asked', () => {
  const FAULTS: FakeScript = {
    turns: [{ text: 'the answer', usage: { input_tokens: 40, output_tokens: 5 } }],
    faults: [
      { request: 1, status: 429, retry_after_seconds: 1 },
      { request: 2, status: 529 },
      { request: 3, stream_error: 'overloaded_error' },
      { request: 4, delay_ms: 300, pings: 2 },
    ],
  };
  const wire = {
    anthropic: { path: '/v1/messages', body: anthropicRequest([{ role: 'user', content: 'hi' }]), overloaded: 529, error: 'overloaded_error' },
    openai: {
      path: '/v1/responses',
      body: {
        model: 'gpt-fake',
        stream: true,
        tools: [{ type: 'function', name: 'shell', parameters: { type: 'object' } }],
        input: [{ role: 'user', content: 'hi' }],
      },
      overloaded: 529,
      error: 'server_error',
    },
    gemini: {
      path: '/v1beta/models/gemini-fake:streamGenerateContent?alt=sse',
      body: {
        contents: [{ role: 'user', parts: [{ text: 'hi' }] }],
        tools: [{ functionDeclarations: [{ name: 'run_shell_command', parameters: { type: 'object' } }] }],
      },
      overloaded: 529,
      error: 'UNAVAILABLE',
    },
    chat: {
      path: '/v1/chat/completions',
      body: {
        model: 'gpt-fake',
        stream: true,
        tools: [{ type: 'function', function: { name: 'shell', parameters: { type: 'object' } } }],
        messages: [{ role: 'user', content: 'hi' }],
      },
      overloaded: 529,
      error: 'server_error',
    },
  };
  for (const [api, w] of Object.entries(wire)) {
    it(`${api}: 429 with retry-after, 529, an error event mid-stream and a slow reply with pings, each recorded as the provider's, the broken stream billed`, async () => {
      const f = await fake(FAULTS);
      const gw = await gateway({ upstream: f.url });
      const ask = () => send(gw, 'POST', w.path, w.body, CREDS);
      const limited = await ask();
      expect(limited.status).toBe(429);
      // The agent's SDK reads when to retry from the provider's header, forwarded as it came.
      expect(limited.headers['retry-after']).toBe('1');
      expect(gw.summary().provider_error).toMatchObject({ status: 429 });
      expect((await ask()).status).toBe(529);
      expect(gw.summary().provider_error?.status).toBe(529);
      const broken = await ask();
      expect(broken.status).toBe(200);
      expect(gw.summary().provider_error).toMatchObject({ status: 200, message: expect.stringMatching(new RegExp(`^error event mid-stream: .*${w.error}`)) });
      // What the broken stream billed before it broke (its input, one output token) is counted.
      expect(gw.summary().usage).toMatchObject({ input_tokens: 40, output_tokens: 1 });
      const slow = events((await ask()).text);
      if (api === 'anthropic') expect(slow.filter((e) => e.event === 'ping')).toHaveLength(2);
      expect(JSON.stringify(slow)).toContain('the answer');
      expect(gw.summary()).toMatchObject({
        model_requests: 2,
        usage: { input_tokens: 80, output_tokens: 6 },
        upstream_statuses: { '200': 2, '429': 1, '529': 1 },
      });
      // Every scripted turn request counted, side requests never fail.
      expect((await send(gw, 'POST', w.path, { ...w.body, tools: [] }, CREDS)).status).toBe(200);
    });
  }
});

describe("fake model + gateway: Google's Gemini API", () => {
  it('answers a function call then text; the gateway counts the call, splits cached tokens out of the prompt, and sends only the host key', async () => {
    const model = await fake({
      turns: [
        {
          tool_calls: [{ name: 'run_shell_command', input: { command: 'echo hi > hello.txt' } }],
          usage: { input_tokens: 50, output_tokens: 10, cache_read_input_tokens: 30 },
        },
        { text: 'Created hello.txt.', usage: { input_tokens: 60, output_tokens: 4 } },
      ],
    });
    const gw = await gateway({ upstream: model.url, provider: 'google', upstreamAuth: { 'x-goog-api-key': 'host-key' } });
    const tools = [{ functionDeclarations: [{ name: 'run_shell_command', parameters: { type: 'object' } }] }];
    const user = { role: 'user', parts: [{ text: 'make hello.txt' }] };
    const first = events(
      (
        await send(
          gw,
          'POST',
          '/v1beta/models/gemini-fake:streamGenerateContent?alt=sse',
          { contents: [user], tools },
          { 'x-goog-api-key': 'agent-placeholder' },
        )
      ).text,
    );
    const call = (first[0]!.data as any).candidates[0].content.parts.find((p: any) => p.functionCall).functionCall;
    expect(call).toMatchObject({ name: 'run_shell_command', args: { command: 'echo hi > hello.txt' } });
    const contents = [
      user,
      { role: 'model', parts: [{ functionCall: call }] },
      { role: 'user', parts: [{ functionResponse: { id: call.id, name: call.name, response: { output: '' } } }] },
    ];
    const second = JSON.parse((await send(gw, 'POST', '/v1beta/models/gemini-fake:generateContent', { contents, tools })).text);
    expect(second.candidates[0].content.parts[0].text).toBe('Created hello.txt.');
    expect(gw.summary()).toMatchObject({ model_requests: 2, tool_calls: 1, usage: { input_tokens: 110, output_tokens: 14, cache_read_tokens: 30 } });
    expect(model.requests.map((r) => r.headers['x-goog-api-key'])).toEqual(['host-key', 'host-key']);
    // Another provider's endpoint is not Google's: refused, never forwarded.
    expect((await send(gw, 'POST', '/v1/messages', anthropicRequest([]))).status).toBe(403);
    expect(model.requests).toHaveLength(2);
  });
});

describe('fake model + gateway: OpenAI Chat Completions', () => {
  it('answers a tool call then a message, streaming and not; the gateway counts the call and splits cached tokens out of the prompt', async () => {
    const model = await fake({
      turns: [
        {
          tool_calls: [{ name: 'run_shell_command', input: { command: 'echo hi > hello.txt' } }],
          usage: { input_tokens: 50, output_tokens: 10, cache_read_input_tokens: 30 },
        },
        { text: 'Created hello.txt.', usage: { input_tokens: 60, output_tokens: 4 } },
      ],
    });
    const gw = await gateway({ upstream: model.url, provider: 'openai' });
    const tools = [{ type: 'function', function: { name: 'run_shell_command', parameters: { type: 'object' } } }];
    const user = { role: 'user', content: 'make hello.txt' };
    const chunks = events(
      (
        await send(
          gw,
          'POST',
          '/v1/chat/completions',
          { model: 'qwen-fake', stream: true, stream_options: { include_usage: true }, tools, messages: [user] },
          CREDS,
        )
      ).text,
    );
    const call = chunks.map((e) => e.data as any).find((d) => d?.choices?.[0]?.delta?.tool_calls)!.choices[0].delta.tool_calls[0];
    expect(call).toMatchObject({
      index: 0,
      type: 'function',
      function: { name: 'run_shell_command', arguments: JSON.stringify({ command: 'echo hi > hello.txt' }) },
    });
    expect(chunks.at(-1)!.data).toBe('[DONE]');
    const assistant = { role: 'assistant', content: null, tool_calls: [{ id: call.id, type: 'function', function: call.function }] };
    const second = JSON.parse(
      (
        await send(
          gw,
          'POST',
          '/v1/chat/completions',
          { model: 'qwen-fake', tools, messages: [user, assistant, { role: 'tool', tool_call_id: call.id, content: '' }] },
          CREDS,
        )
      ).text,
    );
    expect(second).toMatchObject({ object: 'chat.completion', choices: [{ message: { content: 'Created hello.txt.' }, finish_reason: 'stop' }] });
    expect(gw.summary()).toMatchObject({ model_requests: 2, tool_calls: 1, usage: { input_tokens: 110, output_tokens: 14, cache_read_tokens: 30 } });
  });
});

describe('fake model + gateway: OpenAI Responses', () => {
  it('answers function_call then a message, and splits cached tokens out of input', async () => {
    const model = await fake({
      turns: [
        {
          tool_calls: [{ name: 'exec_command', input: { cmd: 'echo hi > hello.txt' } }],
          usage: { input_tokens: 50, output_tokens: 10, cache_read_input_tokens: 30 },
        },
        { text: 'Created hello.txt.' },
      ],
    });
    const gw = await gateway({ upstream: model.url, markers: { agents: { lines: ['be brief'], scope: { kind: 'instruction-file', file: 'AGENTS.md' } } } });
    const tools = [{ type: 'function', name: 'exec_command', parameters: { type: 'object' } }];
    const user = { type: 'message', role: 'user', content: [{ type: 'input_text', text: '# AGENTS.md instructions for /w\n\nbe brief' }] };

    const first = events((await send(gw, 'POST', '/v1/responses', { model: 'gpt-fake', stream: true, tools, input: [user] }, CREDS)).text);
    expect(first.map((e) => e.event)).toEqual(['response.created', 'response.output_item.done', 'response.completed']);
    const call = (first[1]!.data as any).item;
    expect(call).toEqual({
      type: 'function_call',
      id: 'fc_fake_0_0',
      call_id: 'call_fake_0_0',
      name: 'exec_command',
      arguments: '{"cmd":"echo hi > hello.txt"}',
      status: 'completed',
    });
    expect((first[2]!.data as any).response.usage).toEqual({
      input_tokens: 80,
      input_tokens_details: { cached_tokens: 30 },
      output_tokens: 10,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 90,
    });

    const input = [user, call, { type: 'function_call_output', call_id: 'call_fake_0_0', output: 'ok' }];
    const second = events((await send(gw, 'POST', '/v1/responses', { model: 'gpt-fake', stream: true, tools, input }, CREDS)).text);
    expect((second[1]!.data as any).item).toMatchObject({
      type: 'message',
      role: 'assistant',
      status: 'completed',
      content: [{ type: 'output_text', text: 'Created hello.txt.', annotations: [] }],
    });
    expect((second[2]!.data as any).response).toMatchObject({ status: 'completed', output: [{ type: 'message' }] });

    expect(gw.summary()).toMatchObject({
      model_requests: 2,
      tool_calls: 1,
      usage: { input_tokens: 50 + 100, output_tokens: 30, cache_write_tokens: 0, cache_read_tokens: 30 },
      delivered: { agents: true },
    });
  });
});

describe("fake model: a script in the agent's terms (mcp actions, turns by task)", () => {
  const GRAPH = { action: 'mcp', server: 'graph', tool: 'graph_flow', input: { entry: 'checkout' } } as const;
  const LS = { action: 'shell', command: 'ls' } as const;
  const tool = (name: string) => ({ name, description: name, input_schema: { type: 'object' } });

  async function scripted(script: FakeScript, adapter: string): Promise<FakeModel> {
    const a = agentAdapters.get(adapter)!;
    const f = await startFakeModel(
      script,
      { port: 0 },
      { tools: { ...(a.scriptedShell ? { shell: a.scriptedShell } : {}), ...(a.mcpToolName ? { mcpTool: a.mcpToolName } : {}) } },
    );
    cleanups.push(() => f.close());
    return f;
  }
  const calls = async (model: FakeModel, tools: unknown[], prompt = 'go'): Promise<Reply & { names: string[] }> => {
    const r = await send(model, 'POST', '/v1/messages', anthropicRequest([{ role: 'user', content: prompt }], { tools }));
    const names =
      r.status === 200
        ? assemble(events(r.text))
            .blocks.filter((b) => b.type === 'tool_use')
            .map((b) => b.name as string)
        : [];
    return { ...r, names };
  };

  it("each scripted agent's MCP tool is called by the name its adapter declares, and an optional one is left out where it is not offered", async () => {
    const scriptedAgents = [...agentAdapters.values()].filter((a) => a.scriptedShell);
    expect(scriptedAgents.length).toBeGreaterThanOrEqual(5);
    for (const a of scriptedAgents) {
      const model = await scripted({ turns: [{ tool_calls: [{ ...GRAPH, optional: true }, LS] }] }, a.name);
      const shell = a.scriptedShell!('ls').name;
      const mcp = mcpToolNameOf(a, 'graph', 'graph_flow');
      expect((await calls(model, [tool(shell), tool(mcp)])).names, a.name).toEqual([mcp, shell]);
      // The arm without the server: only the shell call.
      expect((await calls(model, [tool(shell)])).names, a.name).toEqual([shell]);
    }
    // The names differ between agents: one name for all would not reach Gemini CLI's or OpenCode's tool.
    expect(new Set(scriptedAgents.map((a) => mcpToolNameOf(a, 'graph', 'graph_flow'))).size).toBeGreaterThanOrEqual(3);
  });

  it('an mcp action the agent does not offer, not optional: refused, naming the tool and what was offered', async () => {
    const model = await scripted({ turns: [{ tool_calls: [GRAPH] }] }, 'gemini-cli');
    const r = await calls(model, [tool('run_shell_command'), tool('read_file')]);
    expect(r.status).toBe(400);
    expect(model.problems).toEqual([
      'the script asks for tool graph_flow of MCP server graph (action mcp), carried by tool mcp_graph_graph_flow; this agent offered: run_shell_command, read_file',
    ]);
  });

  it('Codex: a tool offered inside a namespace is called with its namespace', async () => {
    const model = await scripted({ turns: [{ tool_calls: [GRAPH] }] }, 'codex');
    const tools = [
      { type: 'function', name: 'exec_command', parameters: { type: 'object' } },
      { type: 'namespace', name: 'mcp__graph', tools: [{ type: 'function', name: 'graph_flow', parameters: { type: 'object' } }] },
    ];
    const user = { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'go' }] };
    const r = await send(model, 'POST', '/v1/responses', { model: 'gpt-fake', stream: true, tools, input: [user] });
    expect((events(r.text)[1]!.data as any).item).toMatchObject({
      type: 'function_call',
      name: 'graph_flow',
      namespace: 'mcp__graph',
      arguments: '{"entry":"checkout"}',
    });
  });

  it("by_task: each task's conversation gets its own turns, found by its prompt; any other gets turns", async () => {
    const model = await scripted(
      {
        turns: [{ text: 'no task of mine' }],
        by_task: [
          { match: 'rename priceOf', turns: [{ tool_calls: [{ action: 'read', path: 'src/pricing.mjs' }] }] },
          { match: 'API of src/catalog', turns: [{ tool_calls: [{ action: 'read', path: 'src/catalog.mjs' }] }] },
        ],
      },
      'claude-code',
    );
    const input = async (prompt: string) => {
      const r = await send(model, 'POST', '/v1/messages', anthropicRequest([{ role: 'user', content: prompt }], { tools: [tool('Bash')] }));
      return assemble(events(r.text)).blocks.map((b) => (b.type === 'tool_use' ? (b.input as { command: string }).command : b.text));
    };
    expect(await input('What is the public API of src/catalog.mjs?')).toEqual(["cat -- 'src/catalog.mjs'"]);
    expect(await input('We are about to rename priceOf to unitPrice.')).toEqual(["cat -- 'src/pricing.mjs'"]);
    expect(await input('Something else.')).toEqual(['no task of mine']);
  });
});

describe('listening on a unix socket', () => {
  it('serves the gateway (and the fake model) on sockets a sandboxed uid can open', async () => {
    const dir = tempDir();
    const model = await fake(WRITE_SCRIPT, { socket: join(dir, 'model.sock') });
    expect(model.socket).toBe(join(dir, 'model.sock'));
    const gw = await gateway({ upstream: 'http://localhost', upstreamSocket: model.socket!, listen: { socket: join(dir, 'gw.sock') } });
    expect(statSync(join(dir, 'gw.sock')).mode & 0o777).toBe(0o666);

    const r = await send(
      { url: 'http://localhost', socket: join(dir, 'gw.sock') },
      'POST',
      '/v1/messages',
      anthropicRequest([{ role: 'user', content: 'go' }]),
    );
    expect(assemble(events(r.text)).stop).toBe('tool_use');
    expect(gw.summary()).toMatchObject({ model_requests: 1, tool_calls: 1 });
  });

  it('replaces a stale socket left by a killed process, but never deletes a regular file', async () => {
    const dir = tempDir();
    const sock = join(dir, 'gw.sock');
    // A real process that dies by SIGKILL while listening leaves its socket file behind.
    await execa(process.execPath, ['-e', "require('net').createServer().listen(process.argv[1], () => process.kill(process.pid, 'SIGKILL'))", sock], {
      reject: false,
    });
    expect(statSync(sock).isSocket()).toBe(true);
    const model = await fake(WRITE_SCRIPT);
    const gw = await gateway({ upstream: model.url, listen: { socket: sock } });
    expect((await send(gw, 'POST', '/v1/messages', anthropicRequest([]))).status).toBe(200);

    const file = join(dir, 'not-a-socket');
    writeFileSync(file, 'keep me');
    await expect(startGateway({ upstream: model.url, listen: { socket: file } })).rejects.toThrow(/EADDRINUSE/);
    expect(readFileSync(file, 'utf8')).toBe('keep me');
  });
});

describe('pieces', () => {
  it('the SSE parser copes with chunks split anywhere, CRLF and multi-byte characters', () => {
    const wire = Buffer.from('event: a\r\ndata: {"t":"é✓"}\r\n\r\n: keep-alive\n\nevent: b\ndata: x\ndata: y\n\n');
    const p = new SseParser();
    const out: SseEvent[] = [];
    for (const byte of wire) out.push(...p.feed(Uint8Array.of(byte)));
    out.push(...p.end());
    expect(out).toEqual([
      { event: 'a', data: { t: 'é✓' } },
      { event: 'b', data: 'x\ny' },
    ]);
  });

  it('OpenAI turn = earlier model replies, however many calls each made', () => {
    const call = (id: string) => ({ type: 'function_call', call_id: id, name: 'exec_command', arguments: '{}' });
    const out = (id: string) => ({ type: 'function_call_output', call_id: id, output: 'ok' });
    const user = { type: 'message', role: 'user', content: 'go' };
    expect(openaiTurnIndex({ input: 'just a string' })).toBe(0);
    expect(openaiTurnIndex({ input: [user] })).toBe(0);
    expect(openaiTurnIndex({ input: [user, call('a'), out('a')] })).toBe(1);
    expect(
      openaiTurnIndex({ input: [user, { type: 'message', role: 'assistant', content: 'x' }, call('a'), call('b'), out('a'), out('b'), call('c'), out('c')] }),
    ).toBe(2);
  });

  it('parseFakeScript names the offending field', () => {
    expect(parseFakeScript({ turns: [{ text: 'x' }, { tool_calls: [{ name: 'Write', input: 'nope' }] }] })).toEqual({
      ok: false,
      error: { reason: 'invalid-script', path: 'turns[1].tool_calls[0].input', message: 'expected an object' },
    });
    expect(parseFakeScript(WRITE_SCRIPT)).toEqual({ ok: true, value: WRITE_SCRIPT });
  });
});

const CLAUDE = fileURLToPath(new URL('../node_modules/.bin/claude', import.meta.url));

describe.runIf(existsSync(CLAUDE))('the real Claude Code CLI through the gateway', () => {
  it('writes hello.txt from the scripted Write call; the gateway counts turns, usage and CLAUDE.md delivery', async () => {
    const cwd = tempDir();
    const home = tempDir();
    const marker = 'PAIRBENCH-MARKER-0c4e: always write files with a trailing newline';
    writeFileSync(join(cwd, 'CLAUDE.md'), `# Project notes\n\n${marker}\n`);
    const model = await fake({
      turns: [{ tool_calls: [{ name: 'Write', input: { file_path: join(cwd, 'hello.txt'), content: 'hi\n' } }] }, { text: 'Created hello.txt.' }],
    });
    const logFile = join(home, 'gateway.jsonl');
    // Scoped as the run step scopes a CLAUDE.md: the real CLI must put it where pairbench looks for it.
    const gw = await gateway({
      upstream: model.url,
      markers: {
        claude_md: { lines: [marker], scope: { kind: 'instruction-file', file: 'CLAUDE.md' } },
        absent: { lines: ['never-in-any-request'], scope: { kind: 'anywhere' } },
      },
      logFile,
    });

    const run = await execa(
      CLAUDE,
      ['-p', 'create hello.txt', '--output-format', 'stream-json', '--verbose', '--max-turns', '4', '--dangerously-skip-permissions'],
      {
        cwd,
        env: {
          ANTHROPIC_BASE_URL: gw.url,
          ANTHROPIC_API_KEY: 'sk-test',
          CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
          DISABLE_AUTOUPDATER: '1',
          DISABLE_TELEMETRY: '1',
          DISABLE_ERROR_REPORTING: '1',
          HOME: home,
          PATH: process.env.PATH ?? '',
          IS_SANDBOX: '1',
        },
        extendEnv: false,
        timeout: 60_000,
        reject: false,
        stdin: 'ignore',
      },
    );
    expect(run.exitCode, `${run.stdout}\n${run.stderr}`).toBe(0);
    expect(readFileSync(join(cwd, 'hello.txt'), 'utf8')).toBe('hi\n');

    const s = gw.summary();
    expect(s.model_requests).toBeGreaterThanOrEqual(2);
    expect(s.tool_calls).toBeGreaterThanOrEqual(1);
    expect(s.usage.input_tokens).toBeGreaterThanOrEqual(200);
    expect(s.usage.output_tokens).toBeGreaterThanOrEqual(40);
    expect(s.delivered).toEqual({ claude_md: true, absent: false });
    expect(s).toMatchObject({ cap_hit: null, upstream_errors: 0 });
    await gw.close();
    expect(readFileSync(logFile, 'utf8')).not.toContain('sk-test');

    const result = run.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
      .find((l) => l.type === 'result');
    expect(result).toMatchObject({ subtype: 'success', is_error: false });
  });
});

describe('gateway: an agent attacking its budget and the host key (each attack performed)', () => {
  /**
   * A real upstream that counts what it answered and may echo the credential it was sent; it sends
   * the final usage event once `holdFinal` resolves (default: after 50 ms, the rest of a generation).
   */
  async function countingUpstream(usage: { input_tokens: number; output_tokens: number }, echoAuth = false, holdFinal?: () => Promise<void>) {
    const seen: string[] = [];
    const up = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        seen.push(`${req.method} ${req.url}`);
        const key = String(req.headers['x-api-key'] ?? req.headers['authorization'] ?? '');
        if (echoAuth) {
          // A provider's error that quotes the key it was sent, split across two TCP writes mid-key.
          res.writeHead(401, { 'content-type': 'application/json', 'x-echo': key });
          const body = JSON.stringify({ type: 'error', error: { type: 'authentication_error', message: `invalid x-api-key: ${key}` } });
          const cut = body.indexOf(key) + 8;
          res.write(body.slice(0, cut));
          setTimeout(() => res.end(body.slice(cut)), 30);
          return;
        }
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        const start = { type: 'message_start', message: { model: 'claude-fake', usage: { input_tokens: usage.input_tokens, output_tokens: 1 } } };
        res.write(`event: message_start\ndata: ${JSON.stringify(start)}\n\n`);
        res.write(
          `event: content_block_delta\ndata: ${JSON.stringify({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'hello' } })}\n\n`,
        );
        const final = () => {
          res.write(
            `event: message_delta\ndata: ${JSON.stringify({ type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: usage.output_tokens } })}\n\n`,
          );
          res.end('event: message_stop\ndata: {"type":"message_stop"}\n\n');
        };
        if (holdFinal) void holdFinal().then(final);
        else setTimeout(final, 50);
      });
    });
    await new Promise<void>((r) => up.listen(0, '127.0.0.1', r));
    cleanups.push(() => new Promise<void>((r) => up.close(() => r())));
    return { url: `http://127.0.0.1:${(up.address() as AddressInfo).port}`, seen };
  }

  it('50 concurrent requests under a 20,000-token cap forward no more than the cap plus one request', async () => {
    const up = await countingUpstream({ input_tokens: 5000, output_tokens: 100 });
    const gw = await gateway({ upstream: up.url, caps: { maxTokens: 20_000 } });
    const replies = await Promise.all(Array.from({ length: 50 }, () => send(gw, 'POST', '/v1/messages', anthropicRequest([{ role: 'user', content: 'go' }]))));
    const forwarded = up.seen.length;
    const spent = gw.summary().usage.input_tokens + gw.summary().usage.output_tokens;
    expect(spent).toBeLessThanOrEqual(20_000 + 5100);
    expect(forwarded).toBe(replies.filter((r) => r.status === 200).length);
    expect(replies.filter((r) => r.status === 429).length).toBe(50 - forwarded);
    expect(gw.summary()).toMatchObject({ requests: 50, cap_hit: 'token-cap' });
  });

  it('an agent that hangs up before the final usage event: the request and its whole usage are still recorded', async () => {
    // The upstream sends message_delta (the output tokens) only once the agent's connection is
    // closed: the hang-up comes first on the wire, however slow the machine (an event, not a 50 ms race).
    let agentGone: Promise<void> = Promise.resolve();
    const up = await countingUpstream({ input_tokens: 300, output_tokens: 700 }, false, () => agentGone);
    const dir = tempDir();
    const gw = await gateway({ upstream: up.url, logFile: join(dir, 'gateway.jsonl') });
    for (let i = 0; i < 3; i++) {
      await (agentGone = new Promise<void>((resolve) => {
        const req = request(
          { hostname: '127.0.0.1', port: new URL(gw.url).port, method: 'POST', path: '/v1/messages', headers: { 'content-type': 'application/json' } },
          (res) => {
            // The first event arrives: hang up before message_delta carries the output tokens.
            res.once('data', () => req.destroy());
          },
        );
        req.on('socket', (socket) => socket.once('close', () => resolve()));
        req.on('error', () => {});
        req.end(JSON.stringify(anthropicRequest([{ role: 'user', content: 'go' }])));
      }));
    }
    // Each exchange is recorded once its reply has been read to the end: wait for that, then close.
    await gw.idle();
    await gw.close();
    expect(gw.summary()).toMatchObject({ requests: 3, model_requests: 3, usage: { input_tokens: 900, output_tokens: 2100 } });
    const lines = readFileSync(join(dir, 'gateway.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines).toHaveLength(3);
    for (const l of lines) expect(l).toMatchObject({ client_aborted: true, usage: { input_tokens: 300, output_tokens: 700 } });
  });

  it('an attempt that ends while a reply the agent hung up on is still streaming: the record says the agent hung up', async () => {
    // The upstream sends its first event and then nothing: the reply is still being read when the gateway closes.
    const up = createServer((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('event: message_start\ndata: {"type":"message_start","message":{"model":"m","usage":{"input_tokens":9,"output_tokens":1}}}\n\n');
    });
    await new Promise<void>((r) => up.listen(0, '127.0.0.1', r));
    cleanups.push(() => new Promise<void>((r) => (up.closeAllConnections(), up.close(() => r()))));
    const dir = tempDir();
    const gw = await gateway({ upstream: `http://127.0.0.1:${(up.address() as AddressInfo).port}`, logFile: join(dir, 'gateway.jsonl') });
    await new Promise<void>((resolve) => {
      const req = request({ hostname: '127.0.0.1', port: new URL(gw.url).port, method: 'POST', path: '/v1/messages' }, (res) =>
        res.once('data', () => {
          req.destroy();
          resolve();
        }),
      );
      req.end(JSON.stringify(anthropicRequest([{ role: 'user', content: 'go' }])));
    });
    await gw.close();
    const [line] = readFileSync(join(dir, 'gateway.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(line).toMatchObject({ client_aborted: true, upstream_error: 'the attempt ended before the reply did', usage: { input_tokens: 9 } });
  });

  it('forwards only the model endpoints; organisation and other paths are refused and logged, unmetered by the key', async () => {
    const up = await countingUpstream({ input_tokens: 1, output_tokens: 1 });
    const gw = await gateway({ upstream: up.url, provider: 'anthropic', upstreamAuth: { 'x-api-key': 'sk-host-real-key-123' } });
    for (const [method, path] of [
      ['GET', '/v1/organizations/me'],
      ['POST', '/v1/messages/../organizations'],
      ['POST', '/v1/responses'],
      ['DELETE', '/v1/messages'],
      ['POST', '/v1/messages%2F..%2Forganizations'],
    ]) {
      const r = await send(gw, method!, path!, method === 'GET' || method === 'DELETE' ? undefined : {});
      expect(r.status, `${method} ${path}`).toBe(403);
    }
    expect((await send(gw, 'HEAD', '/')).status).toBe(200);
    expect((await send(gw, 'POST', '/v1/messages?beta=true', anthropicRequest([]))).status).toBe(200);
    expect(up.seen).toEqual(['POST /v1/messages?beta=true']);
    expect(gw.records().filter((r) => r.refused === 'endpoint')).toHaveLength(5);
  });

  it("the host's key never reaches the agent, even when the upstream echoes it (split across chunks)", async () => {
    const up = await countingUpstream({ input_tokens: 1, output_tokens: 1 }, true);
    const dir = tempDir();
    const key = 'sk-host-real-key-0123456789';
    const gw = await gateway({ upstream: up.url, upstreamAuth: { 'x-api-key': key }, logFile: join(dir, 'gateway.jsonl') });
    const r = await send(gw, 'POST', '/v1/messages', anthropicRequest([]), { 'x-api-key': 'placeholder' });
    expect(r.status).toBe(401);
    expect(r.text + JSON.stringify(r.headers)).not.toContain(key);
    expect(JSON.parse(r.text).error.message).toBe('invalid x-api-key: [redacted]');
    expect(r.headers['x-echo']).toBe('[redacted]');
    await gw.close();
    expect(readFileSync(join(dir, 'gateway.jsonl'), 'utf8')).not.toContain(key);
  });
});

describe('delivery: a fingerprint, counted only where the agent gives the model its instructions', () => {
  const claudeMd = 'House rules for this repository.\nAlways add numbers with the plus operator.\nKeep every function pure.\n';
  const marker = { lines: fingerprintLines(claudeMd), scope: { kind: 'instruction-file' as const, file: 'CLAUDE.md' } };
  const reminder = `<system-reminder>\nAs you answer the user's questions, you can use the following context:\nContents of /work/CLAUDE.md (project instructions, checked into the codebase):\n\n${claudeMd}</system-reminder>`;

  it('a README quoting the CLAUDE.md, read through a tool, is not the CLAUDE.md delivered', () => {
    const readmeRead = {
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'Fix add().' }] },
        { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'Read', input: { file_path: '/work/README.md' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: `# add\n${claudeMd}` }] },
      ],
    };
    expect(markersFound(readmeRead, { treatment: marker })).toEqual([]);
    // The same text where Claude Code puts CLAUDE.md is delivery.
    expect(
      markersFound(
        {
          messages: [
            {
              role: 'user',
              content: [
                { type: 'text', text: reminder },
                { type: 'text', text: 'Fix add().' },
              ],
            },
          ],
        },
        { treatment: marker },
      ),
    ).toEqual(['treatment']);
    // One line of the fingerprint is not enough.
    const partial = reminder.replace('Keep every function pure.', 'Keep it simple.');
    expect(markersFound({ messages: [{ role: 'user', content: [{ type: 'text', text: partial }] }] }, { treatment: marker })).toEqual([]);
    // Codex's AGENTS.md section, for an AGENTS.md marker.
    const agents = { lines: marker.lines, scope: { kind: 'instruction-file' as const, file: 'AGENTS.md' } };
    expect(
      markersFound({ input: [{ role: 'user', content: [{ type: 'input_text', text: `# AGENTS.md instructions for /work\n\n${claudeMd}` }] }] }, { t: agents }),
    ).toEqual(['t']);
  });
});
