/**
 * `npm run bench` (scale-out): real redis-server and nginx on loopback.
 *  1. 24 attempts of a command that sleeps 2 s, through `run --executor` with 1 worker and
 *     with 3 workers (one job at a time each): goal wall(3) / wall(1) <= 0.45.
 *  2. The quick-start example replayed from a remote cache into an empty store, against the
 *     local no-op run of the same example: goal <= 2x.
 * Ratios measured side by side in one run (the machine is shared: absolute times are noise).
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { hasNginx, hasRedis, startNginx, startRedis } from './local-servers.js';
import { median } from './measure.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const bin = join(root, 'bin', 'pairbench.js');
const KEYS = 'bench:5c0ffee5c0ffee5c';
const env = { PATH: process.env['PATH'] ?? '/usr/bin:/bin', CI: '1', PAIRBENCH_CACHE_KEYS: KEYS };

if (!hasRedis() || !hasNginx()) {
  process.stdout.write(
    'scale-out bench: SKIPPED (needs redis-server and nginx-light with libnginx-mod-http-dav-ext: apt-get install redis-server nginx-light libnginx-mod-http-dav-ext)\n',
  );
  process.exit(0);
}

const work = mkdtempSync(join(tmpdir(), 'pairbench-scale-bench-'));

function timed(args: string[]): { ms: number; code: number | null; out: string } {
  const t = performance.now();
  const r = spawnSync(process.execPath, [bin, ...args], { env, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  return { ms: performance.now() - t, code: r.status, out: r.stdout + r.stderr };
}

async function fleet(workers: number, salt: string): Promise<number> {
  const [redis, nginx] = await Promise.all([startRedis(), startNginx()]);
  const dir = join(work, `fleet-${workers}`);
  mkdirSync(dir, { recursive: true });
  const config = join(dir, 'bench.config.yaml');
  writeFileSync(
    config,
    `cache: { remote: "${nginx.url}" }
steps:
  attempt:
    kind: command
    matrix: { task: 12, arm: [control, treatment] }
    cmd: sleep 2; echo "${salt} {{matrix.task}} {{matrix.arm}}" > o
    outs: [o]
`,
  );
  const procs = Array.from({ length: workers }, (_, i) =>
    spawn(process.execPath, [bin, 'worker', '--redis', redis.url, '--config', config, '--store', join(dir, `w${i}`)], { env, stdio: 'ignore' }),
  );
  await new Promise((r) => setTimeout(r, 1500));
  const t = performance.now();
  const r = spawnSync(process.execPath, [bin, 'run', '--executor', redis.url, '--config', config, '--store', join(dir, 'coordinator'), '--json'], {
    env,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  const ms = performance.now() - t;
  for (const p of procs) p.kill('SIGTERM');
  await Promise.all(procs.map((p) => new Promise((res) => p.once('exit', res))));
  await Promise.all([redis.stop(), nginx.stop()]);
  if (r.status !== 0) throw new Error(`fleet of ${workers}: run exited ${r.status}: ${r.stderr.slice(0, 500)}`);
  return ms;
}

const one = await fleet(1, 'one');
const three = await fleet(3, 'three');
const fleetRatio = three / one;

const nginx = await startNginx();
const example = join(root, 'bench.config.yaml');
const populate = timed(['run', '--config', example, '--store', join(work, 'example-a'), '--remote-cache', nginx.url]);
if (populate.code !== 0) throw new Error(`example run failed: ${populate.out.slice(-500)}`);
const noops: number[] = [];
const replays: number[] = [];
for (let i = 0; i < 3; i++) {
  noops.push(timed(['run', '--config', example, '--store', join(work, 'example-a')]).ms);
  const r = timed([
    'run',
    '--config',
    example,
    '--store',
    join(work, `example-replay-${i}`),
    '--remote-cache',
    nginx.url,
    '--cache-mode',
    'read-only',
    '--json',
  ]);
  if (r.code !== 0) throw new Error(`replay failed: ${r.out.slice(-500)}`);
  replays.push(r.ms);
}
await nginx.stop();
const replayRatio = median(replays) / median(noops);
rmSync(work, { recursive: true, force: true });

const ok1 = fleetRatio <= 0.45;
const ok2 = replayRatio <= 2;
process.stdout.write(
  [
    'scale-out bench (redis-server + nginx WebDAV on loopback)',
    `  24 attempts x 2 s: 1 worker ${(one / 1000).toFixed(1)} s, 3 workers ${(three / 1000).toFixed(1)} s: ratio ${fleetRatio.toFixed(2)}; goal <= 0.45 ${ok1 ? 'PASS' : 'OVER GOAL'}`,
    `  example replayed from the remote cache into an empty store: median ${(median(replays) / 1000).toFixed(2)} s vs local no-op ${(median(noops) / 1000).toFixed(2)} s: ${replayRatio.toFixed(2)}x; goal <= 2x ${ok2 ? 'PASS' : 'OVER GOAL'}`,
  ].join('\n') + '\n',
);
if (!ok1 || !ok2) process.exitCode = 1;
