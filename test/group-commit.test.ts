import { spawn } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, renameSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ActionRecord } from '../pipeline/store/action-cache.js';
import type { CacheKey } from '../pipeline/digest.js';
import { canonicalJson } from '../pipeline/canonical-json.js';
import { Store } from '../pipeline/store/store.js';
import { bareRecord } from './bare-record.js';
import { BIN, Rig } from './rig.js';

// Group commit (pipeline/store/record-journal.ts): records are written loose without an fsync each
// and committed a batch at a time through one journal; a power cut's damage is put back from it.
let rig: Rig;
beforeEach(() => (rig = new Rig()));
afterEach(() => rig.cleanup());

function config(n: number, jobs = 1, body = 'true'): string {
  return `concurrency: { global: ${jobs} }
steps:
  work:
    kind: command
    matrix: { i: ${n} }
    cmd: ${body}; echo "$PAIRBENCH_NODE" >> ${rig.execLog}; echo $PAIRBENCH_MATRIX_I > o
    outs: [o]
`;
}

const storeDir = () => join(rig.dir, '.pairbench');
const journalDir = () => join(storeDir(), 'ac', 'journal');
const journals = () => (existsSync(journalDir()) ? readdirSync(journalDir()).filter((n) => n.endsWith('.jsonl')) : []);
const journalLines = (name: string) => readFileSync(join(journalDir(), name), 'utf8').split('\n').filter(Boolean);
const looseRecord = (key: string) => join(storeDir(), 'ac', key.slice(0, 2), `${key}.json`);

/** Runs the real CLI under strace: its exit code, its wall time, and how many fsync/fdatasync calls it (and its children) made. */
function stracedRun(): Promise<{ code: number | null; syncs: number; wallS: number; stderr: string }> {
  const out = join(rig.dir, 'strace.txt');
  const t0 = process.hrtime.bigint();
  const child = spawn(
    'strace',
    ['-f', '-qq', '-e', 'trace=fsync,fdatasync', '-o', out, process.execPath, BIN, 'run', '--config', join(rig.dir, 'bench.config.yaml')],
    {
      env: { PATH: process.env['PATH'], CI: '1' },
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  return new Promise((resolve) =>
    child.on('close', (code) =>
      resolve({
        code,
        stderr,
        wallS: Number(process.hrtime.bigint() - t0) / 1e9,
        syncs: readFileSync(out, 'utf8')
          .split('\n')
          .filter((l) => /\b(fsync|fdatasync)\(/.test(l)).length,
      }),
    ),
  );
}

async function until(cond: () => boolean, what: string): Promise<void> {
  // Bounded: a run of a dozen short commands; the condition is the run's own log growing.
  for (let i = 0; i < 3_000 && !cond(); i++) await new Promise((r) => setTimeout(r, 20));
  if (!cond()) throw new Error(`not seen: ${what}`);
}

describe('group commit of action records', () => {
  it('a run syncs its records a batch at a time: the syncs do not grow with its nodes (only with its seconds)', async () => {
    rig.write('bench.config.yaml', config(4));
    const small = await stracedRun();
    expect(small.code, small.stderr).toBe(0);
    const smallJournals = journals().map(journalLines);

    rig.cleanup();
    rig = new Rig();
    rig.write('bench.config.yaml', config(70));
    const big = await stracedRun();
    expect(big.code, big.stderr).toBe(0);
    // 66 more records than the small run: one fsync each before. Now a batch commits at 64
    // records or a second after its first: at most one more sync per started second, plus one.
    expect(big.syncs - small.syncs, `syncs: ${small.syncs} for 4 nodes, ${big.syncs} for 70 in ${big.wallS.toFixed(1)} s`).toBeLessThanOrEqual(
      Math.ceil(big.wallS) + 1,
    );
    expect(big.syncs).toBeLessThan(70);
    // Every record of the small run is in its journal, the durable copy of its loose files.
    expect(smallJournals.map((j) => j.length)).toEqual([4]);
    // 70 loose records were packed at the end (the pack is synced): the journal was retired with them.
    expect(journals()).toEqual([]);
    expect(existsSync(join(storeDir(), 'ac', 'pack'))).toBe(true);
    expect((await rig.cli('plan')).stdout).toContain('nothing to run: all 70 nodes are cached');
  });

  it('a power cut after the commit loses nothing: torn loose records are put back from the journal, forged and torn lines are not', async () => {
    rig.write('bench.config.yaml', config(6));
    expect((await rig.cli('run')).code).toBe(0);
    const [name] = journals();
    const lines = journalLines(name!);
    expect(lines).toHaveLength(6);
    // What a power cut can leave of loose files whose data had not reached the disk: empty, or gone.
    const keys = lines.map((l) => (JSON.parse(l) as ActionRecord).key);
    keys.forEach((k, i) => (i % 2 ? writeFileSync(looseRecord(k), '') : renameSync(looseRecord(k), `${looseRecord(k)}.gone`)));
    // A forged line (its key is not its pre-image's) and a line the crash cut short.
    const forged = { ...(JSON.parse(lines[0]!) as ActionRecord), key: 'f'.repeat(64) as CacheKey };
    const journal = join(journalDir(), name!);
    writeFileSync(journal, [...lines, JSON.stringify(forged), lines[1]!.slice(0, 40)].join('\n'));
    // After the reboot: the journal was written in another boot; old enough that its writer is gone.
    const rebooted = join(journalDir(), name!.replace(/^[^.]+/, '00000000-0000-4000-8000-000000000000'));
    renameSync(journal, rebooted);
    const hourAgo = new Date(Date.now() - 3_600_000);
    utimesSync(rebooted, hourAgo, hourAgo);

    rig.clearExecutions();
    const plan = await rig.cli('plan');
    expect(plan.stdout).toContain('nothing to run: all 6 nodes are cached');
    for (const k of keys) expect(JSON.parse(readFileSync(looseRecord(k), 'utf8')).key).toBe(k);
    expect(existsSync(looseRecord(forged.key))).toBe(false);
    expect(journals()).toEqual([]);
    expect((await rig.cli('run')).code).toBe(0);
    expect(rig.executions()).toEqual([]);
  });

  it('without a reboot, a journal of a live or finished run is left alone (nothing is read back from it)', async () => {
    rig.write('bench.config.yaml', config(3));
    expect((await rig.cli('run')).code).toBe(0);
    const [name] = journals();
    const key = (JSON.parse(journalLines(name!)[0]!) as ActionRecord).key;
    writeFileSync(looseRecord(key), ''); // damage no power cut made: the record reads as corrupt and its node runs again
    rig.clearExecutions();
    expect((await rig.cli('run')).code).toBe(0);
    expect(rig.executions()).toHaveLength(1);
  });

  it('kill -9 at random points loses no record that was written', async () => {
    for (let round = 0; round < 3; round++) {
      rig.cleanup();
      rig = new Rig();
      rig.write('bench.config.yaml', config(12, 2, 'sleep 0.05'));
      const at = randomInt(1, 11);
      const child = rig.spawn('run');
      await until(() => rig.executions().length >= at, `${at} executions`);
      child.kill('SIGKILL');
      await child.done;
      const before = new Set(rig.executions());
      const plan = JSON.parse((await rig.cli('plan', '--json')).stdout) as { nodes: { node: string; status: string; reasons?: string[] }[] };
      const cached = plan.nodes.filter((n) => n.status === 'cached').map((n) => n.node);
      const why = `killed after ${at} executions (${[...before].join(', ')}); cached: ${cached.join(', ')}`;
      // Every node that finished before the kill is cached, but the two in flight (jobs: 2) whose command ran and whose record was not yet written.
      expect(cached.length, why).toBeGreaterThanOrEqual(before.size - 2);
      for (const c of cached) expect(before.has(c), why).toBe(true);
      expect(plan.nodes.flatMap((n) => n.reasons ?? []).join('\n'), why).not.toMatch(/corrupt|does not match/);
      rig.clearExecutions();
      const again = await rig.spawn('run').done;
      expect(again.code, why).toBe(0);
      for (const c of cached) expect(rig.executions(), why).not.toContain(c);
      expect((await rig.cli('plan')).stdout, why).toContain('nothing to run: all 12 nodes are cached');
    }
  });

  it('a registry entry is written only after the records before it are committed', async () => {
    const store = new Store(storeDir());
    rig.write('bench.config.yaml', config(2));
    expect((await rig.cli('run')).code).toBe(0);
    // A record written by this process (the run's, again: put is idempotent), not yet committed.
    const [name] = journals();
    store.actions.put(JSON.parse(journalLines(name!)[0]!) as ActionRecord);
    expect(store.actions.uncommitted).toBe(1);
    const r = await store.logs.append('cohort', () => [{ type: 'note', data: {} }]);
    expect(r.ok).toBe(true);
    expect(store.actions.uncommitted).toBe(0);
  });

  it('a process that writes records without end (a queue worker) keeps its journal and loose records bounded: it packs on its way', () => {
    rig.write('bench.config.yaml', config(1));
    const store = new Store(storeDir());
    // A record as a node's: the pre-image names it; no outputs (none are needed to be one).
    const record = (i: number) => bareRecord(canonicalJson({ node: `work/${i}`, long: true }), `work/${i}`);
    const written = 10_000;
    let most = 0;
    for (let i = 0; i < written; i++) {
      store.actions.put(record(i));
      if (i % 500 === 499)
        most = Math.max(
          most,
          journals().reduce((n, j) => n + journalLines(j).length, 0),
        );
    }
    store.actions.close();
    // Before: one journal of 10,000 lines beside 10,000 loose files, for as long as the worker lives.
    const loose = readdirSync(join(storeDir(), 'ac'))
      .filter((d) => d.length === 2)
      .reduce((n, d) => n + readdirSync(join(storeDir(), 'ac', d)).length, 0);
    expect(most).toBeLessThanOrEqual(5_000);
    expect(loose).toBeLessThanOrEqual(5_000);
    // Nothing is lost on the way: every record is there, from a process that opens the store afresh.
    const fresh = new Store(storeDir());
    for (let i = 0; i < written; i += 97) expect(fresh.actions.get(record(i).key).status).toBe('hit');
    expect([...fresh.actions.list()]).toHaveLength(written);
  });
});
