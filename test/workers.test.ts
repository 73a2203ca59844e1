import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { calculatorTask, copyTask, pairedCohortConfig, READS_CLAUDE_MD } from './fixtures.js';
import { BIN, Rig } from './rig.js';
import { hasNginx, hasRedis, startNginx, startRedis, type Nginx, type Redis } from '../bench/local-servers.js';
import { cliOutputProblems } from './cli-schema.js';

// Distributed execution on BullMQ over a real redis-server, results through a real nginx
// remote cache: three worker processes, one killed with SIGKILL mid-attempt.
const required = process.env['CI'] === 'true';
const TASKS = ['t1', 't2', 't3', 't4', 't5', 't6'];
const KEYS = 'fleet:8d1e55a0c3b2f4e6';

let redis: Redis;
let nginx: Nginx;
beforeAll(async () => {
  if (!hasRedis() || !hasNginx()) return;
  [redis, nginx] = await Promise.all([startRedis(), startNginx()]);
});
afterAll(async () => {
  await redis?.stop();
  await nginx?.stop();
});

let rig: Rig;
let starts: string;
const workers: ChildProcess[] = [];
beforeEach(() => {
  rig = new Rig();
  calculatorTask(rig.dir);
  for (const t of TASKS) copyTask(rig.dir, 'fix-add', t);
  rig.write('fixtures/CLAUDE.md', 'Use + in add().\n');
  starts = join(rig.dir, 'starts');
  mkdirSync(starts);
  // Each attempt leaves a mark when it starts (named by its workspace, which is in its worker's store), then works for 2 s.
  const agent = `touch ${starts}/$(date +%s%N)-$$-$(pwd | tr / _); sleep 2; ${READS_CLAUDE_MD}`;
  rig.write('bench.config.yaml', pairedCohortConfig(TASKS, agent, `cache: { remote: "${nginx?.url}", key_env: CACHE_KEYS }\n`));
  // The workers' own lock (10 s): a shorter one is lost by a live worker whose timers a loaded machine
  // delays, and BullMQ then hands its job to another worker (it ran twice in a clean CI run at 3 s).
  rig.env = { CACHE_KEYS: KEYS };
});
afterEach(() => {
  for (const w of workers.splice(0)) w.kill('SIGKILL');
  rig.cleanup();
});

function startWorkerProcess(i: number, json = false): ChildProcess & { out: string[] } {
  const child = spawn(
    process.execPath,
    [BIN, 'worker', '--redis', redis.url, '--config', join(rig.dir, 'bench.config.yaml'), '--store', join(rig.dir, `worker-${i}`), ...(json ? ['--json'] : [])],
    {
      env: { PATH: process.env['PATH'], CI: '1', ...rig.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  ) as ChildProcess & { out: string[] };
  child.out = [];
  child.stdout!.on('data', (d) => child.out.push(...String(d).split('\n').filter(Boolean)));
  workers.push(child);
  return child;
}

type Node = { node: string; status: string; key?: string };

describe.skipIf((!hasRedis() || !hasNginx()) && !required)('distributed execution (BullMQ on redis-server)', () => {
  it('three workers, one killed with SIGKILL mid-attempt: every attempt completes exactly once; the rerun is all hits; results equal a local run', async () => {
    // The third worker reports in JSON lines (one per job, schemas/cli-output.schema.json worker_job).
    const w = [startWorkerProcess(1), startWorkerProcess(2), startWorkerProcess(3, true)];
    await new Promise((r) => setTimeout(r, 1500)); // the workers connect
    const coordinator = rig.spawn('run', '--executor', redis.url, '--json');
    // Worker 1 finishes one attempt and starts the next: it is killed once that one has started
    // (its mark is there, its "done" line is not), whatever the machine's load.
    const started = () => readdirSync(starts).filter((f) => f.includes('_worker-1_')).length;
    const finished = () => w[0]!.out.filter((l) => l.startsWith('done   attempts/')).length;
    const until = Date.now() + 60_000;
    while (Date.now() < until && !(finished() >= 1 && started() > finished())) await new Promise((r) => setTimeout(r, 20));
    expect(started(), 'worker 1 started a second attempt').toBeGreaterThan(finished());
    w[0]!.kill('SIGKILL');
    const r = await coordinator.done;
    expect(r.code, r.stderr + r.stdout.slice(0, 2000)).toBe(0);
    const nodes = JSON.parse(r.stdout).nodes as Node[];
    const attempts = nodes.filter((n) => n.node.startsWith('attempts/'));
    expect(attempts).toHaveLength(12);
    expect(attempts.every((n) => n.status === 'executed')).toBe(true);
    // The kill cut an attempt short: more attempts started than were recorded, and each recorded one is there once.
    expect(readdirSync(starts).length).toBeGreaterThan(12);
    const jobs = w[2]!.out.map((l) => JSON.parse(l) as { node: string; status: string });
    for (const j of jobs) expect(cliOutputProblems('#/definitions/worker_job', j)).toBe('');
    const done = [
      ...w.slice(0, 2).flatMap((x) => x.out.filter((l) => l.startsWith('done   attempts/')).map((l) => l.split(' ')[3]!)),
      ...jobs.filter((j) => j.status === 'executed' && j.node.startsWith('attempts/')).map((j) => j.node),
    ];
    expect(new Set(done).size).toBe(done.length);
    expect(done.sort()).toEqual(attempts.map((n) => n.node).sort());
    // Each surviving worker did part of the work.
    expect(w[1]!.out.length).toBeGreaterThan(0);
    expect(w[2]!.out.length).toBeGreaterThan(0);

    // The killed worker's work directory is still there; a worker started on its store removes it first.
    const leftovers = () => readdirSync(join(rig.dir, 'worker-1', 'tmp')).filter((n) => n.startsWith(`work-${w[0]!.pid}-`));
    expect(leftovers().length).toBeGreaterThan(0);
    const restarted = startWorkerProcess(1);
    const by = Date.now() + 20_000;
    while (Date.now() < by && !restarted.out.some((l) => l.startsWith('worker '))) await new Promise((r) => setTimeout(r, 20));
    expect(leftovers()).toEqual([]);

    // A second coordinator run: every node a cache hit, nothing queued.
    const again = await rig.cli('run', '--executor', redis.url, '--json');
    expect((JSON.parse(again.stdout).nodes as Node[]).filter((n) => n.status !== 'cached')).toEqual([]);

    // The same verdicts as a run on this machine alone.
    const local = await rig.cli('run', '--json', '--store', join(rig.dir, 'local'), '--remote-cache', 'http://127.0.0.1:9');
    expect(local.code).toBe(0);
    const verdicts = async (store?: string) =>
      (
        JSON.parse((await rig.cli('show', 'analyze', 'attempts.json', ...(store ? ['--store', store] : []))).stdout) as {
          node: string;
          pass: boolean;
          admission: string;
        }[]
      )
        .map((a) => [a.node, a.pass, a.admission])
        .sort();
    expect(await verdicts()).toEqual(await verdicts(join(rig.dir, 'local')));
  });
});
