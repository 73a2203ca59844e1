/** Real servers on loopback for the tests and the benchmark: nginx as a WebDAV remote cache, redis-server for the queue. */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const NGINX = '/usr/sbin/nginx';
export const REDIS = '/usr/bin/redis-server';
export const hasNginx = () => existsSync(NGINX) && existsSync('/usr/lib/nginx/modules/ngx_http_dav_ext_module.so');
export const hasRedis = () => existsSync(REDIS);

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

async function waitFor(check: () => Promise<boolean>, what: string, ms = 10_000): Promise<void> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${what} did not come up in ${ms} ms`);
}

/**
 * The servers this process started and has not stopped. Each is sent SIGTERM when the process
 * exits, however it exits (a benchmark that throws, a test that fails before its stop), so none
 * is left running; a signal from the terminal reaches them anyway (same process group).
 */
const running = new Set<ChildProcess>();
function owned(child: ChildProcess): ChildProcess {
  if (running.size === 0) process.once('exit', endAll);
  running.add(child);
  child.once('exit', () => {
    running.delete(child);
    if (running.size === 0) process.off('exit', endAll);
  });
  return child;
}
function endAll(): void {
  for (const child of running) child.kill('SIGTERM');
}

export interface Nginx {
  url: string;
  data: string;
  /** The master process (its workers end with it). */
  pid: number;
  stop(): Promise<void>;
}

/** nginx with WebDAV PUT under /ac/ and /cas/ (the Bazel remote-cache paths), data in a temp dir owned by nobody. */
export async function startNginx(): Promise<Nginx> {
  const dir = mkdtempSync(join(tmpdir(), 'pairbench-nginx-'));
  chmodSync(dir, 0o755); // the workers (nobody) traverse it
  const data = join(dir, 'data');
  const body = join(dir, 'body');
  for (const d of [data, join(data, 'ac'), join(data, 'cas'), body]) {
    mkdirSync(d, { recursive: true });
    if (process.getuid?.() === 0) chownSync(d, 65534, 65534);
  }
  const port = await freePort();
  const user = process.getuid?.() === 0 ? 'user nobody nogroup;' : '';
  writeFileSync(
    join(dir, 'nginx.conf'),
    `daemon off;
worker_processes 1;
${user}
pid ${dir}/nginx.pid;
error_log ${dir}/error.log;
load_module /usr/lib/nginx/modules/ngx_http_dav_ext_module.so;
events { worker_connections 256; }
http {
  access_log off;
  client_body_temp_path ${body};
  client_max_body_size 0;
  server {
    listen 127.0.0.1:${port};
    root ${data};
    location ~ "^/(ac|cas)/[0-9a-f]{64}$" {
      dav_methods PUT;
      create_full_put_path on;
      dav_access user:rw group:r all:r;
    }
  }
}
`,
  );
  const child = owned(spawn(NGINX, ['-c', join(dir, 'nginx.conf'), '-e', join(dir, 'error.log')], { stdio: 'ignore' }));
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitFor(async () => (await fetch(`${url}/cas/${'0'.repeat(64)}`, { method: 'HEAD' }).catch(() => null))?.status === 404, 'nginx');
  } catch (e) {
    child.kill('SIGKILL');
    throw e;
  }
  let stopped = false;
  return {
    url,
    data,
    pid: child.pid!,
    stop: async () => {
      if (stopped) return;
      stopped = true;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface Redis {
  url: string;
  pid: number;
  stop(): Promise<void>;
}

/** redis-server on a free loopback port, no persistence. */
export async function startRedis(): Promise<Redis> {
  const dir = mkdtempSync(join(tmpdir(), 'pairbench-redis-'));
  const port = await freePort();
  const child = owned(spawn(REDIS, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], { stdio: 'ignore' }));
  try {
    await waitFor(async () => spawnSync('redis-cli', ['-p', String(port), 'ping'], { encoding: 'utf8' }).stdout?.trim() === 'PONG', 'redis');
  } catch (e) {
    child.kill('SIGKILL');
    throw e;
  }
  return {
    url: `redis://127.0.0.1:${port}/0`,
    pid: child.pid!,
    stop: async () => {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
