/**
 * The whole-plan memo answering a fully cached `run` (pipeline/memo/): a replay prints what the
 * run made in full prints, with its own duration where the run printed one, and makes again the
 * one write a no-op run makes that anything later reads (its use of the store, logged for gc).
 * A run that builds anything, prints inside an effect, or whose effect a replay cannot make, is
 * never answered. (Each class of input is changed in turn for `plan` in plan-memo.test.ts: both
 * commands are recorded by the same layer.)
 */
import { execFile, spawnSync } from 'node:child_process';
import { createServer } from 'node:http';
import { promisify } from 'node:util';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repeatedEffect, unrepeatedEffect } from '../pipeline/hooks.js';
import type { MemoFile } from '../pipeline/memo/memo-file.js';
import { startRecording } from '../pipeline/memo/record.js';
import { replayMemo, type Streams } from '../pipeline/memo/replay.js';
import { Store } from '../pipeline/store/store.js';
import { BIN, logged, Rig } from './rig.js';

let rig: Rig;
let memoLog: string;
const memoDir = () => join(rig.dir, 'memo');
const accessDir = () => join(rig.dir, '.pairbench', 'access');

/** `pairbench run ARGS` as a user runs it, with or without the memo; what it printed and what the memo did. */
function run(args: string[], memo = true): { code: number; stdout: string; stderr: string; memo: string } {
  const before = readLog().length;
  const r = spawnSync(process.execPath, [BIN, 'run', ...args, '--config', join(rig.dir, 'bench.config.yaml')], {
    cwd: rig.dir,
    encoding: 'utf8',
    env: {
      PATH: process.env['PATH'],
      HOME: rig.dir,
      CI: '1',
      PAIRBENCH_MEMO_DIR: memoDir(),
      PAIRBENCH_MEMO_LOG: memoLog,
      ...(memo ? {} : { PAIRBENCH_MEMO: '0' }),
    },
  });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr, memo: readLog().slice(before).join(' | ') };
}
const readLog = () => {
  try {
    return readFileSync(memoLog, 'utf8').split('\n').filter(Boolean);
  } catch {
    return [];
  }
};

/** Runs until the memo answers (one run saves it, the next is answered): at most four. */
function runUntilHit(args: string[]): ReturnType<typeof run> {
  for (let i = 0; i < 4; i++) {
    const r = run(args);
    expect(r.code, r.stderr).toBe(0);
    if (r.memo.startsWith('hit')) return r;
  }
  throw new Error(`the memo never answered:\n${readLog().slice(-4).join('\n')}`);
}

/** The run's duration, which differs between any two runs, as one placeholder. */
const durationFree = (text: string) => text.replace(/\(\d+\.\d\d s\)/g, '(D s)').replace(/"duration_ms": \d+/g, '"duration_ms": D');
const accessLogs = () => readdirSync(accessDir()).sort();

beforeAll(() => {
  rig = new Rig();
  memoLog = join(rig.dir, 'memo.log');
  rig.write('input.txt', 'one\n');
  rig.write(
    'bench.config.yaml',
    `steps:
  first: { kind: command, deps: [input.txt], matrix: { n: 3 }, cmd: '${logged(rig, 'cat input.txt > o')}', outs: [o] }
  second: { kind: command, needs: [first], matrix: { n: 3 }, cmd: '${logged(rig, 'cat "$PAIRBENCH_IN/first/{{matrix.n}}/o" > s')}', outs: [s] }
`,
  );
  const built = run(['--progress', 'plain'], false);
  expect(built.code, built.stderr).toBe(0);
  expect(rig.executions()).toHaveLength(6);
});
afterAll(() => rig.cleanup());

describe('the whole-plan memo answering a fully cached run', () => {
  it('prints what the run made in full prints, its own duration in place of the recorded one (text and JSON), and logs its use of the store as the full run does', () => {
    for (const args of [['--progress', 'plain'], ['--json']]) {
      const full = run(args, false);
      expect(full.code, full.stderr).toBe(0);
      const fullEntry = JSON.parse(readFileSync(join(accessDir(), accessLogs().at(-1)!), 'utf8')) as { at: string; root?: string };
      const answered = runUntilHit(args);
      expect(durationFree(answered.stdout)).toBe(durationFree(full.stdout));
      expect(durationFree(answered.stderr)).toBe(durationFree(full.stderr));
      expect(args[0] === '--json' ? answered.stdout : answered.stderr).toMatch(
        args[0] === '--json' ? /"duration_ms": \d+/ : /cached, 0 failed, 0 skipped \(\d+\.\d\d s\)/,
      );

      // The memo keeps the duration's place, not the recorded duration.
      const memos = readdirSync(memoDir()).map((n) => JSON.parse(readFileSync(join(memoDir(), n), 'utf8')) as MemoFile);
      const mine = memos.find((m) => m.identity.includes(JSON.stringify(args[0])))!;
      const printed = args[0] === '--json' ? mine.stdout : mine.stderr;
      expect(printed.filter((p) => typeof p !== 'string')).toEqual([[args[0] === '--json' ? 'ms' : 'seconds']]);
      expect(printed.join('')).not.toMatch(/\d+\.\d\d s\)|"duration_ms": \d/);

      // Each replay logs one use of the same root, at its own time.
      const before = accessLogs();
      const since = Date.now();
      const again = run(args);
      expect(again.memo).toMatch(/^hit: .*1 effects made again/);
      const added = accessLogs().filter((n) => !before.includes(n));
      expect(added).toHaveLength(1);
      const entry = JSON.parse(readFileSync(join(accessDir(), added[0]!), 'utf8')) as { at: string; root?: string };
      expect(entry.root).toBeDefined();
      expect(entry.root).toBe(fullEntry.root);
      expect(Date.parse(entry.at)).toBeGreaterThanOrEqual(since - 1000);
    }
    expect(rig.executions()).toHaveLength(6); // nothing was built again
  });

  it('a replay loads none of what its own time went to before: node:crypto, and the streams a piped stdout makes', () => {
    runUntilHit(['--progress', 'plain']);
    const preload = join(rig.dir, 'modules.cjs');
    writeFileSync(preload, "process.on('exit', () => require('node:fs').writeSync(2, '@@modules=' + JSON.stringify(process.moduleLoadList) + '\\n'));\n");
    const r = spawnSync(process.execPath, ['--require', preload, BIN, 'run', '--progress', 'plain', '--config', join(rig.dir, 'bench.config.yaml')], {
      cwd: rig.dir,
      encoding: 'utf8',
      env: { PATH: process.env['PATH'], HOME: rig.dir, CI: '1', PAIRBENCH_MEMO_DIR: memoDir(), PAIRBENCH_MEMO_LOG: memoLog },
    });
    expect(readLog().at(-1)).toMatch(/^hit/);
    expect(r.stdout + r.stderr).toContain('6 nodes: 0 ran, 6 cached');
    const loaded = JSON.parse(/@@modules=(.*)/.exec(r.stderr)![1]!) as string[];
    expect(loaded.filter((m) => /^NativeModule (crypto|stream|net)$/.test(m))).toEqual([]);
  });

  it('a run that builds anything saves no memo; a lost output is a miss, and the run rebuilds it', () => {
    runUntilHit(['--progress', 'plain']);
    rig.write('input.txt', 'two\n');
    const changed = run(['--progress', 'plain']);
    expect(changed.memo).toMatch(/^miss: .* changed \| not saved: the command went outside what a memo sees/);
    expect(changed.stderr).toMatch(/6 nodes: 6 ran/);

    runUntilHit(['--progress', 'plain']);
    const first = JSON.parse(run(['--json'], false).stdout) as { nodes: { node: string; outputs_digest: string }[] };
    expect(first.nodes.length).toBe(6);
    // A blob lost: the file the record's output is.
    const cas = join(rig.dir, '.pairbench', 'cas');
    const blob = readdirSync(cas, { recursive: true, withFileTypes: true }).find(
      (e) => e.isFile() && readFileSync(join(e.parentPath, e.name), 'utf8') === 'two\n',
    )!;
    rmSync(join(blob.parentPath, blob.name));
    rig.clearExecutions();
    const lost = run(['--progress', 'plain']);
    expect(lost.memo).toMatch(/^miss: /);
    expect(rig.executions().length).toBeGreaterThan(0);
  });

  it("an access log due to be merged is merged by the memo's replay (a hit), as a full run merges it: each key keeps its last use", () => {
    runUntilHit(['--progress', 'plain']);
    const store = () => new Store(join(rig.dir, '.pairbench'));
    // As many logs as runs leave before a merge: uses of keys of this store and of its config's root, long ago.
    const [root] = store().roots();
    const keys = root!.keys;
    for (let i = accessLogs().length; i < 40; i++) {
      const entry = i % 2 ? { root: root!.name } : { keys: [keys[i % keys.length]] };
      writeFileSync(join(accessDir(), `${1000 + i}-1.json`), JSON.stringify({ at: new Date(1000 + i).toISOString(), ...entry }) + '\n');
    }
    const before = store().lastAccess();
    const due = run(['--progress', 'plain']);
    expect(due.memo).toMatch(/^hit/);
    expect(due.stderr).toContain('6 nodes: 0 ran, 6 cached');
    expect(accessLogs().length).toBeLessThan(5);
    const after = store().lastAccess();
    for (const [k, t] of before) expect(after.get(k), k).toBeGreaterThanOrEqual(t);
    // This run's use is in the merged log: every key of the root was used now, not in 1970.
    for (const k of keys) expect(after.get(k)!, k).toBeGreaterThan(Date.now() - 600_000);
    expect(run(['--progress', 'plain']).memo).toMatch(/^hit/);
  });

  it('a run that connects to a remote cache connects as without the memo, and saves no memo (a connection is a doubt)', async () => {
    const asked: string[] = [];
    const server = createServer((req, res) => {
      asked.push(`${req.method} ${req.url}`);
      res.writeHead(404).end();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as { port: number };
    try {
      const before = readLog().length;
      // A store of its own, where nothing is built: the remote is asked. Asynchronously: the server answers from this process's event loop.
      const r = await promisify(execFile)(
        process.execPath,
        [BIN, 'run', '--remote-cache', `http://127.0.0.1:${port}`, '--store', join(rig.dir, 'another-store'), '--config', join(rig.dir, 'bench.config.yaml')],
        {
          cwd: rig.dir,
          env: { PATH: process.env['PATH'], HOME: rig.dir, CI: '1', PAIRBENCH_MEMO_DIR: memoDir(), PAIRBENCH_MEMO_LOG: memoLog },
        },
      );
      expect(r.stderr).not.toMatch(/unreachable/);
      expect(asked.length).toBeGreaterThan(0);
      expect(readLog().slice(before).join(' | ')).toMatch(/^miss: .* \| not saved: the command went outside what a memo sees/);
    } finally {
      server.close();
    }
  });

  it('an effect: printing inside one is a doubt; its writes are not; one no performer can make again is a miss', async () => {
    const env = { ...process.env, PAIRBENCH_MEMO_DIR: join(rig.dir, 'effects', 'memo'), PAIRBENCH_MEMO_LOG: '' };
    const scratch = join(rig.dir, 'effects-scratch');
    const stdoutWrite = process.stdout.write;
    const printing = startRecording(['run'], env, rig.dir);
    unrepeatedEffect('a test', () => process.stdout.write(''));
    expect(printing.finish(0)).toMatch(/^not saved: the command went outside what a memo sees: printing inside an effect/);
    expect(process.stdout.write).toBe(stdoutWrite);

    const writing = startRecording(['run'], env, rig.dir);
    unrepeatedEffect('a test', () => writeFileSync(scratch, 'x'));
    repeatedEffect({ kind: 'a-test-effect', data: { n: 1 } }, () => writeFileSync(scratch, 'y'));
    expect(writing.finish(0)).toMatch(/^saved [0-9a-f]{16}\.json: \d+ paths, effects: a-test-effect; a test/);
    const out: string[] = [];
    const streams = { stdout: { write: (s: string) => out.push(s) }, stderr: { write: (s: string) => out.push(s) } } as unknown as Streams;
    // No performer for its kind: a miss, nothing printed.
    expect(await replayMemo(['run'], env, rig.dir, streams, { askers: {}, performers: {} })).toBeUndefined();
    expect(out).toEqual([]);
    // A performer that cannot make it here: a miss too; one that can: a hit, after it made it.
    const made: unknown[] = [];
    expect(await replayMemo(['run'], env, rig.dir, streams, { askers: {}, performers: { 'a-test-effect': () => 'not here' } })).toBeUndefined();
    expect(await replayMemo(['run'], env, rig.dir, streams, { askers: {}, performers: { 'a-test-effect': (d) => void made.push(d) } })).toBe(0);
    expect(made).toEqual([{ n: 1 }]);
  });
});
