import { mkdtempSync, rmSync, statSync, existsSync } from 'node:fs';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startEgressProxy, targetOfAuthority, targetOfUrl, type EgressProxy } from '../sandboxes/egress-proxy.js';

// A real proxy on a real unix socket, a real target server on 127.0.0.1, and
// clients speaking raw HTTP: what a sandboxed curl or agent would send.
let dir: string;
let target: http.Server;
let targetPort: number;
let proxy: EgressProxy | undefined;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'pairbench-proxy-test-'));
  target = http.createServer((req, res) =>
    res.end(`target saw ${req.method} ${req.url} host=${req.headers.host} proxy-auth=${req.headers['proxy-authorization'] ?? '-'}`),
  );
  await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
  targetPort = (target.address() as AddressInfo).port;
});
afterAll(async () => {
  await new Promise((resolve) => target.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});
afterEach(async () => {
  await proxy?.close();
  proxy = undefined;
});

let sockets = 0;
async function start(allow: string[]): Promise<EgressProxy> {
  proxy = await startEgressProxy({ socket: join(dir, `proxy-${++sockets}.sock`), allow });
  return proxy;
}

/**
 * Sends raw bytes to the proxy and returns everything it answers until it closes (or `until` matches).
 * `halfClose` ends the sending side after the request, as `printf ... | nc` does.
 */
function raw(socket: string, request: string, until?: RegExp, halfClose = false): Promise<string> {
  return new Promise((resolve, reject) => {
    const c = net.connect(socket);
    let got = '';
    c.on('data', (d) => {
      got += d;
      if (!until?.test(got)) return;
      c.destroy();
      resolve(got);
    });
    c.on('end', () => resolve(got));
    c.on('error', reject);
    if (halfClose) c.end(request);
    else c.write(request);
  });
}

describe('egress proxy', () => {
  it('forwards an absolute-URI request to an allowed host:port and logs it as allowed', async () => {
    const p = await start([`127.0.0.1:${targetPort}`]);
    const answer = await raw(
      p.socket,
      `GET http://127.0.0.1:${targetPort}/path?q=1 HTTP/1.1\r\nHost: 127.0.0.1:${targetPort}\r\nProxy-Authorization: Basic eDp5\r\nConnection: close\r\n\r\n`,
    );
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
    // The target sees an origin-form request without the proxy's own headers.
    expect(answer).toContain(`target saw GET /path?q=1 host=127.0.0.1:${targetPort} proxy-auth=-`);
    expect(p.events()).toEqual([{ at: expect.any(String), method: 'GET', host: '127.0.0.1', port: targetPort, decision: 'allowed' }]);
  });

  it('answers a client that half-closes after its request (printf ... | nc)', async () => {
    const p = await start([`127.0.0.1:${targetPort}`]);
    const get = await raw(p.socket, `GET http://127.0.0.1:${targetPort}/half HTTP/1.0\r\n\r\n`, undefined, true);
    expect(get).toMatch(/^HTTP\/1\.1 200 /);
    expect(get).toContain('target saw GET /half');
    const blocked = await raw(p.socket, 'GET http://blocked.example/ HTTP/1.0\r\n\r\n', undefined, true);
    expect(blocked).toMatch(/^HTTP\/1\.1 403 /);
    const tunnel = await raw(p.socket, `CONNECT 127.0.0.1:${targetPort} HTTP/1.1\r\n\r\nGET /t HTTP/1.0\r\n\r\n`, undefined, true);
    expect(tunnel).toMatch(/^HTTP\/1\.1 200 Connection Established\r\n\r\nHTTP\/1\.1 200 /);
  });

  it('tunnels CONNECT to an allowed host and pipes bytes both ways', async () => {
    const p = await start([`127.0.0.1:${targetPort}`]);
    const answer = await raw(
      p.socket,
      `CONNECT 127.0.0.1:${targetPort} HTTP/1.1\r\nHost: 127.0.0.1:${targetPort}\r\n\r\nGET /inside HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
    );
    expect(answer).toMatch(/^HTTP\/1\.1 200 Connection Established\r\n\r\nHTTP\/1\.1 200 /);
    expect(answer).toContain('target saw GET /inside host=x');
    expect(p.events()).toMatchObject([{ method: 'CONNECT', host: '127.0.0.1', port: targetPort, decision: 'allowed' }]);
  });

  it('blocks hosts that are not listed with 403, for both forms, and logs each attempt', async () => {
    const p = await start([`127.0.0.1:${targetPort}`]);
    const get = await raw(p.socket, 'GET http://blocked.example/x HTTP/1.1\r\nHost: blocked.example\r\n\r\n');
    const connect = await raw(p.socket, 'CONNECT blocked.example:443 HTTP/1.1\r\nHost: blocked.example:443\r\n\r\n');
    // Same host, another port: a host:port entry allows only that port.
    const otherPort = await raw(p.socket, 'CONNECT 127.0.0.1:1 HTTP/1.1\r\n\r\n');
    for (const answer of [get, connect, otherPort]) expect(answer).toMatch(/^HTTP\/1\.1 403 Forbidden/);
    expect(connect).toContain('blocked.example:443 is not on the allowlist');
    expect(p.events().map((e) => [e.method, e.host, e.port, e.decision])).toEqual([
      ['GET', 'blocked.example', 80, 'blocked'],
      ['CONNECT', 'blocked.example', 443, 'blocked'],
      ['CONNECT', '127.0.0.1', 1, 'blocked'],
    ]);
    for (const e of p.events()) expect(new Date(e.at).toISOString()).toBe(e.at);
  });

  it('denies everything when the allowlist is empty', async () => {
    const p = await start([]);
    expect(await raw(p.socket, `GET http://127.0.0.1:${targetPort}/ HTTP/1.1\r\nHost: x\r\n\r\n`)).toMatch(/^HTTP\/1\.1 403 /);
    expect(p.events()).toMatchObject([{ decision: 'blocked' }]);
  });

  it('a bare host entry allows every port of that host, case-insensitively', async () => {
    // Only loopback names: `localhost` resolves from /etc/hosts, no DNS query leaves the machine.
    const p = await start(['LocalHost']);
    const answer = await raw(p.socket, `GET http://LOCALHOST:${targetPort}/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
    expect(await raw(p.socket, `CONNECT 127.0.0.1:${targetPort} HTTP/1.1\r\n\r\n`)).toMatch(/^HTTP\/1\.1 403 /);
    expect(p.events().map((e) => [e.host, e.port, e.decision])).toEqual([
      ['localhost', targetPort, 'allowed'],
      ['127.0.0.1', targetPort, 'blocked'],
    ]);
  });

  it('answers 502 when an allowed target cannot be reached', async () => {
    const p = await start(['127.0.0.1:1']); // nothing listens on port 1
    expect(await raw(p.socket, 'CONNECT 127.0.0.1:1 HTTP/1.1\r\n\r\n')).toMatch(/^HTTP\/1\.1 502 Bad Gateway/);
    expect(await raw(p.socket, 'GET http://127.0.0.1:1/ HTTP/1.1\r\nHost: x\r\n\r\n')).toMatch(/^HTTP\/1\.1 502 /);
    expect(p.events()).toMatchObject([
      { method: 'CONNECT', host: '127.0.0.1', port: 1, decision: 'allowed' },
      { method: 'GET', host: '127.0.0.1', port: 1, decision: 'allowed' },
    ]);
  });

  it('refuses requests that are not proxy requests with 400, and logs them as blocked', async () => {
    const p = await start(['127.0.0.1']);
    expect(await raw(p.socket, 'GET /relative HTTP/1.1\r\nHost: sneaky.example\r\n\r\n')).toMatch(/^HTTP\/1\.1 400 /);
    expect(await raw(p.socket, 'CONNECT no-port HTTP/1.1\r\n\r\n')).toMatch(/^HTTP\/1\.1 400 /);
    expect(p.events().map((e) => [e.method, e.host, e.decision])).toEqual([
      ['GET', 'sneaky.example', 'blocked'],
      ['CONNECT', 'no-port', 'blocked'],
    ]);
  });

  it('refuses protocol upgrades (websockets) with 501 and logs them as blocked, even to an allowed host', async () => {
    const p = await start([`127.0.0.1:${targetPort}`]);
    const answer = await raw(p.socket, `GET http://127.0.0.1:${targetPort}/ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n`);
    expect(answer).toMatch(/^HTTP\/1\.1 501 /);
    expect(p.events()).toMatchObject([{ method: 'GET', host: '127.0.0.1', port: targetPort, decision: 'blocked' }]);
  });

  it('its socket can be connected to by another uid, and close() removes it and is idempotent', async () => {
    const p = await start([]);
    expect(statSync(p.socket).mode & 0o777).toBe(0o666);
    await p.close();
    await p.close();
    expect(existsSync(p.socket)).toBe(false);
  });

  it('close() also ends open tunnels', async () => {
    const slow = net.createServer(() => undefined); // accepts and never answers
    await new Promise<void>((resolve) => slow.listen(0, '127.0.0.1', resolve));
    const port = (slow.address() as AddressInfo).port;
    const p = await start([`127.0.0.1:${port}`]);
    const client = net.connect(p.socket);
    const ended = new Promise((resolve) => client.on('close', resolve));
    client.write(`CONNECT 127.0.0.1:${port} HTTP/1.1\r\n\r\n`);
    await new Promise((resolve) => client.once('data', resolve));
    await p.close();
    await ended;
    await new Promise((resolve) => slow.close(resolve));
  });
});

describe('request targets', () => {
  it('parses CONNECT authorities, IPv6 included', () => {
    expect(targetOfAuthority('Example.com:443')).toEqual({ host: 'example.com', port: 443 });
    expect(targetOfAuthority('[::1]:8443')).toEqual({ host: '::1', port: 8443 });
    for (const bad of ['example.com', 'example.com:0', 'example.com:70000', 'a b:1', 'http://x:1']) expect(targetOfAuthority(bad)).toBeUndefined();
  });

  it('parses absolute http URIs only', () => {
    expect(targetOfUrl('http://Example.com/x')).toEqual({ host: 'example.com', port: 80 });
    expect(targetOfUrl('http://[::1]:8080/')).toEqual({ host: '::1', port: 8080 });
    for (const bad of ['/relative', 'https://example.com/', 'http:example.com', 'ftp://x/']) expect(targetOfUrl(bad)).toBeUndefined();
  });
});
