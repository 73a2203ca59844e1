/**
 * Redaction replaces the credential, not the text around it: a key is scrubbed wherever it turns
 * up (a body, a header of another name), and what surrounds it still reaches the log and the
 * agent. A redaction that blanked the whole text would hide the key too, so the key-leak tests
 * alone cannot tell the two apart (`npm run mutate`: the substring replacement turned off).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { startGateway, type Gateway, type GatewayOptions } from '../gateway/gateway.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function gateway(options: Omit<GatewayOptions, 'listen'>): Promise<Gateway> {
  const g = await startGateway({ listen: { port: 0 }, ...options });
  cleanups.push(() => g.close());
  return g;
}

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'pairbench-redact-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** An upstream answering every request with `reply` (JSON). */
async function upstream(reply: (authorization: string) => unknown, status = 200): Promise<string> {
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(reply(String(req.headers['authorization'] ?? '')))));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  cleanups.push(() => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** One POST as the agent's client sends it (headers in the object's order); the reply's body. */
function post(gw: Gateway, path: string, body: unknown, headers: Record<string, string>): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      { hostname: '127.0.0.1', port: new URL(gw.url).port, method: 'POST', path, headers: { 'content-type': 'application/json', ...headers } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

const messages = (content: string) => ({ model: 'claude-fake', max_tokens: 16, messages: [{ role: 'user', content }] });

it("the agent's credential, repeated in its message and in a header of another name, is redacted there, and only it", async () => {
  const key = 'sk-agent-0123456789abcdef';
  const dir = tempDir();
  const gw = await gateway({
    upstream: await upstream(() => ({ type: 'message', content: [], usage: { input_tokens: 1, output_tokens: 1 } })),
    logFile: join(dir, 'gateway.jsonl'),
  });
  await post(gw, '/v1/messages', messages(`my key is ${key}, keep it`), {
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

it("the host's key echoed by the upstream inside a message: the agent reads the message with the key replaced, the rest intact", async () => {
  const key = 'sk-ant-host-0123456789abcdef-secret';
  const dir = tempDir();
  const up = await upstream(
    (authorization) => ({ type: 'error', error: { type: 'authentication_error', message: `bad key ${authorization.replace(/^Bearer /, '')}, see the docs` } }),
    401,
  );
  const gw = await gateway({ upstream: up, upstreamAuth: { authorization: `Bearer ${key}` }, logFile: join(dir, 'gateway.jsonl') });
  const reply = await post(gw, '/v1/messages', messages('go'), {});
  await gw.close();
  expect(reply.status, reply.text).toBe(401);
  expect(reply.text).not.toContain(key);
  expect((JSON.parse(reply.text) as { error: { message: string } }).error.message).toBe('bad key [redacted], see the docs');
  expect(readFileSync(join(dir, 'gateway.jsonl'), 'utf8')).not.toContain(key);
});
