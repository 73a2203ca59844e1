/**
 * The loopback servers the benchmark and the tests start (bench/local-servers.ts) never outlive
 * the process that started them: a benchmark that throws before its stop() (as a failed replay
 * did, leaving nginx's master and worker running after `npm run bench` exited) leaves nothing.
 */
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { hasNginx, hasRedis } from '../bench/local-servers.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const required = process.env['CI'] === 'true';

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** Until `pid` is gone (bounded: each server ends within moments of its SIGTERM). */
async function gone(pid: number): Promise<boolean> {
  for (let i = 0; i < 400 && alive(pid); i++) await new Promise((r) => setTimeout(r, 25));
  return !alive(pid);
}

/** nginx's processes whose command line names `conf` (its master) or whose parent is `master` (its workers). */
function nginxProcesses(master: number): number[] {
  const ps = spawnSync('ps', ['-eo', 'pid=,ppid='], { encoding: 'utf8' }).stdout;
  return ps
    .trim()
    .split('\n')
    .map((l) => l.trim().split(/\s+/).map(Number))
    .filter(([pid, ppid]) => pid === master || ppid === master)
    .map(([pid]) => pid!);
}

describe.skipIf(!(hasNginx() && hasRedis()) && !required)('loopback servers', () => {
  it('a process that throws after starting nginx and redis leaves neither running', async () => {
    const script = `
      const { startNginx, startRedis } = await import(${JSON.stringify(join(ROOT, 'dist', 'bench', 'local-servers.js'))});
      const [nginx, redis] = await Promise.all([startNginx(), startRedis()]);
      const { execSync } = await import('node:child_process');
      const workers = execSync('ps -eo pid=,ppid=').toString().trim().split('\\n').map((l) => l.trim().split(/\\s+/).map(Number)).filter(([, p]) => p === nginx.pid).map(([pid]) => pid);
      console.log(JSON.stringify({ nginx: nginx.pid, redis: redis.pid, workers }));
      throw new Error('the benchmark failed before it stopped its servers');
    `;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('the benchmark failed before it stopped its servers');
    const started = JSON.parse(r.stdout) as { nginx: number; redis: number; workers: number[] };
    expect(started.workers.length).toBeGreaterThan(0);
    for (const pid of [started.nginx, started.redis, ...started.workers]) expect(await gone(pid), `pid ${pid} still running`).toBe(true);
    expect(nginxProcesses(started.nginx)).toEqual([]);
  });
});
