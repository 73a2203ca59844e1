/**
 * The whole-plan memo (pipeline/memo/): `pairbench plan` answered from what its last run printed,
 * when nothing that run read has changed. The property: each class of input a plan reads,
 * changed in turn on a project built here, gives a miss, and the plan printed is the plan made
 * without the memo. A memo recorded while a path it read was changing is never saved; the
 * shipped configs plan the same keys with the memo as without.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stampedQuery } from '../pipeline/hooks.js';
import { invocationIdentity, memoPath, outputShape, type MemoFile } from '../pipeline/memo/memo-file.js';
import { startRecording } from '../pipeline/memo/record.js';
import { replayMemo, type Streams } from '../pipeline/memo/replay.js';
import { dockerBackend } from '../sandboxes/docker.js';
import { ensureTestImage } from './docker-image.js';
import { calculatorTask } from './fixtures.js';
import { goldenStore, SHIPPED_CONFIGS } from './golden-store.js';
import { BIN, Rig } from './rig.js';

const ROOT = join(import.meta.dirname, '..');
// The file functions as pairbench's bundle (CommonJS) calls them: through the module's own object.
const builtinFs = createRequire(import.meta.url)('node:fs') as typeof import('node:fs');

let rig: Rig;
let memoLog: string;

/** `pairbench plan --json` as a user runs it (a process of its own), with or without the memo; what the memo did. */
function plan(memo = true, where = ['--config', join(rig.dir, 'bench.config.yaml')], cwd = rig.dir, command = 'plan'): { stdout: string; memo: string } {
  const before = readLog().length;
  const r = spawnSync(process.execPath, [BIN, command, '--json', ...where], {
    cwd,
    encoding: 'utf8',
    env: {
      PATH: `${join(rig.dir, 'bin')}:${process.env['PATH']}`,
      HOME: rig.dir,
      CI: '1',
      PAIRBENCH_MEMO_DIR: join(rig.dir, 'memo'),
      PAIRBENCH_MEMO_LOG: memoLog,
      ...(memo ? {} : { PAIRBENCH_MEMO: '0' }),
      ...extraEnv,
    },
  });
  if (r.status !== 0) throw new Error(`${command} exited ${r.status}: ${r.stderr}${r.stdout}`);
  return { stdout: r.stdout, memo: readLog().slice(before).join(' | ') };
}
let extraEnv: Record<string, string> = {};
const readLog = () => {
  try {
    return readFileSync(memoLog, 'utf8').split('\n').filter(Boolean);
  } catch {
    return [];
  }
};

/** What each try's memo did and what the memo directory holds: a miss that should have hit, explained. */
function memoDiagnosis(tries: readonly string[]): string {
  const dir = join(rig.dir, 'memo');
  const held = existsSync(dir) ? readdirSync(dir).map((n) => `${n} ${statSync(join(dir, n)).mtime.toISOString()}`) : ['(no memo directory)'];
  return `tries:\n${tries.map((t, i) => `${i + 1}. ${t}`).join('\n')}\n${dir}:\n${held.join('\n')}`;
}

/**
 * Plans until the memo answers (a plan saves it, the next one hits): at most ten plans. A plan
 * that writes the store is not saved, and the stat cache learns a changed file only once it is
 * 2 s old, so plans that follow a change faster than that each write it (a clean-clone run saw
 * four in a row); the bound is on tries, never on time. The answer.
 */
function planUntilHit(): string {
  const tries: string[] = [];
  for (let i = 0; i < 10; i++) {
    const p = plan();
    tries.push(p.memo);
    if (p.memo.startsWith('hit')) return p.stdout;
  }
  throw new Error(`the memo never answered:\n${memoDiagnosis(tries)}`);
}

/** The same time stamps written back: the inode's ctime moves, nothing else does (a value the host already had). */
function touchInPlace(path: string): void {
  const st = statSync(path);
  utimesSync(path, st.atime, st.mtime);
}

beforeAll(() => {
  rig = new Rig();
  memoLog = join(rig.dir, 'memo.log');
  calculatorTask(rig.dir);
  rig.write('model.json', JSON.stringify({ turns: [] }));
  rig.write('input.txt', 'one\n');
  rig.write('optional/node_modules/.keep', '');
  rig.write('inputs/a.txt', 'a\n');
  rig.write('more-steps.yaml', 'steps:\n  extra: { kind: command, cmd: "echo extra > e", outs: [e] }\n');
  // A bwrap of the project's own on PATH, for `backend: auto`'s probe.
  rig.write('bin/bwrap', '#!/bin/sh\nexec /usr/bin/bwrap "$@"\n');
  chmodSync(join(rig.dir, 'bin', 'bwrap'), 0o755);
  rig.write(
    'bench.config.yaml',
    `include: [more-steps.yaml]
steps:
  prepare: { kind: command, deps: [input.txt, "inputs/*.txt"], cmd: "cat input.txt inputs/*.txt > p", outs: [p] }
  materialize: { kind: materialize, matrix: { task: [fix-add] } }
  attempts:
    kind: run
    needs: [materialize]
    matrix: { task: [fix-add], arm: [control], rep: 1 }
    agent: { adapter: claude-code }
    model: { fake_script: model.json }
    arms: { control: {} }
    sandbox: { backend: auto }
`,
  );
  const r = spawnSync(process.execPath, [BIN, 'run', 'prepare', 'extra', 'materialize/fix-add', '--config', join(rig.dir, 'bench.config.yaml')], {
    encoding: 'utf8',
    env: { PATH: process.env['PATH'], HOME: rig.dir, CI: '1' },
  });
  expect(r.status, r.stderr).toBe(0);
});
afterAll(() => rig.cleanup());

const blobOf = (node: string): string => {
  const explained = spawnSync(process.execPath, [BIN, 'explain', node, '--json', '--config', join(rig.dir, 'bench.config.yaml')], { encoding: 'utf8' });
  const digest = Object.values((JSON.parse(explained.stdout) as { record: { outputs: Record<string, { digest: string }> } }).record.outputs)[0]!.digest;
  return join(rig.dir, '.pairbench', 'cas', digest.slice(0, 2), digest);
};

/**
 * Each class of input a plan reads, and a change to it. `changesPlan`: whether the plan without the
 * memo changes too (a file re-stamped in place is the same input, read again to be sure).
 */
const CLASSES: { name: string; change: () => void; changesPlan: boolean }[] = [
  { name: 'the config', change: () => rig.write('bench.config.yaml', rig.read('bench.config.yaml') + '\n# edited\n'), changesPlan: false },
  {
    name: 'an included config file',
    change: () => rig.write('more-steps.yaml', rig.read('more-steps.yaml').replace('echo extra', 'echo more')),
    changesPlan: true,
  },
  {
    name: 'a task file',
    change: () => rig.write('tasks/fix-add/task.yaml', rig.read('tasks/fix-add/task.yaml').replace('Fix it.', 'Fix it now.')),
    changesPlan: true,
  },
  { name: "a glob's directory (a new file)", change: () => rig.write('inputs/b.txt', 'b\n'), changesPlan: true },
  { name: 'an input file', change: () => rig.write('input.txt', 'two\n'), changesPlan: true },
  {
    name: 'a store record (another node built)',
    change: () => {
      const r = spawnSync(process.execPath, [BIN, 'run', 'prepare', '--config', join(rig.dir, 'bench.config.yaml')], {
        encoding: 'utf8',
        env: { PATH: process.env['PATH'], HOME: rig.dir, CI: '1' },
      });
      expect(r.status, r.stderr).toBe(0);
    },
    changesPlan: true,
  },
  { name: 'a blob (an output lost)', change: () => rmSync(blobOf('prepare')), changesPlan: true },
  { name: "pairbench's code", change: () => touchInPlace(join(ROOT, 'dist', 'bundle', 'main.cjs')), changesPlan: false },
  { name: 'the node binary', change: () => touchInPlace(process.execPath), changesPlan: false },
  { name: 'the environment', change: () => (extraEnv = { SOME_SETTING: '1' }), changesPlan: false },
  { name: "the sandbox probe's bwrap (now failing)", change: () => rig.write('bin/bwrap', '#!/bin/sh\nexit 1\n'), changesPlan: true },
  { name: "the agent CLI's binary", change: () => touchInPlace(claudeExe()), changesPlan: false },
];

function claudeExe(): string {
  return join(ROOT, 'node_modules', '@anthropic-ai', 'claude-code', 'bin', 'claude.exe');
}

describe('the whole-plan memo', () => {
  it('a memo is not saved when a path it read changed after the run began (a racy time stamp): it could change again unseen', () => {
    const dir = join(rig.dir, 'racy');
    mkdirSync(dir, { recursive: true });
    const fresh = join(dir, 'input.txt');
    const env = { ...process.env, PAIRBENCH_MEMO_DIR: join(dir, 'memo'), PAIRBENCH_MEMO_LOG: '' };
    // Another process's write, as the recorder sees it: through the function as it was before recording.
    const othersWrite = writeFileSync;
    const racy = startRecording(['plan'], env, dir);
    // Written after the run began, then read by it: its time stamp is as new as the run, and a
    // second write in the same tick of the file system's clock would leave the same stat.
    othersWrite(fresh, 'a\n');
    builtinFs.readFileSync(fresh, 'utf8');
    expect(racy.finish(0)).toMatch(/^not saved: .*input\.txt changed \d+ ms before the command started \(racy/);
    expect(existsSync(join(dir, 'memo'))).toBe(false);
    // A file last written before the project's first run (well before this one) is trusted.
    const settled = startRecording(['plan'], env, dir);
    builtinFs.readFileSync(join(rig.dir, 'more-steps.yaml'), 'utf8');
    expect(settled.finish(0)).toMatch(/^saved [0-9a-f]{16}\.json: \d+ paths/);
  });

  it("a command that reads the clock is not memoized, unless the clock's owner declares it changes no output", () => {
    const env = { ...process.env, PAIRBENCH_MEMO_DIR: join(rig.dir, 'clock', 'memo'), PAIRBENCH_MEMO_LOG: '' };
    for (const readClock of [() => Date.now(), () => new Date(), () => performance.now(), () => process.hrtime.bigint()]) {
      const r = startRecording(['plan'], env, rig.dir);
      readClock();
      expect(r.finish(0)).toMatch(/^not saved: the command went outside what a memo sees: the clock/);
    }
    const declared = startRecording(['plan'], env, rig.dir);
    expect(new Date(0).getTime()).toBe(0); // a given time is no clock
    stampedQuery('a test of a declared use', [], () => Date.now());
    expect(declared.finish(0)).toMatch(/^saved /);
  });

  it('a kernel file read by its bytes while recorded is read as without the memo, and observed: a file under /proc by its content, a link there by the file it names', () => {
    const env = { ...process.env, PAIRBENCH_MEMO_DIR: join(rig.dir, 'kernel', 'memo'), PAIRBENCH_MEMO_LOG: '' };
    const r = startRecording(['plan'], env, rig.dir);
    // As detect-libc (under msgpackr, under BullMQ) reads the interpreter's header, and a probe a sysctl.
    const fd = builtinFs.openSync('/proc/self/exe', 'r');
    const header = Buffer.alloc(4);
    builtinFs.readSync(fd, header, 0, 4, 0);
    builtinFs.closeSync(fd);
    const release = builtinFs.readFileSync('/proc/sys/kernel/osrelease');
    expect(r.finish(0)).toMatch(/^saved /);
    expect(header.subarray(1).toString()).toBe('ELF');
    expect(release.toString().trim()).toBe(execFileSync('uname', ['-r'], { encoding: 'utf8' }).trim());
    const [memo] = readdirSync(join(rig.dir, 'kernel', 'memo')).map((n) => JSON.parse(readFileSync(join(rig.dir, 'kernel', 'memo', n), 'utf8')) as MemoFile);
    const seen = new Map(memo!.observations.map((o) => [o[0], o[1]]));
    expect(seen.get('/proc/sys/kernel/osrelease')).toBe('c');
    expect(seen.get('/proc/self/exe')).toBe('f');
  });

  it('a package that did not resolve when the memo was recorded, installed since, is a miss', async () => {
    const env = { ...process.env, PAIRBENCH_MEMO_DIR: join(rig.dir, 'optional', 'memo'), PAIRBENCH_MEMO_LOG: '' };
    const requireThere = createRequire(join(rig.dir, 'optional', 'index.js'));
    const recording = startRecording(['plan'], env, rig.dir);
    expect(() => requireThere('pairbench-optional-package')).toThrow();
    expect(recording.finish(0)).toMatch(/^saved /);
    const streams = { stdout: { write: () => true }, stderr: { write: () => true } } as unknown as Streams;
    expect(await replayMemo(['plan'], env, rig.dir, streams, { askers: {}, performers: {} })).toBe(0);
    rig.write('optional/node_modules/pairbench-optional-package/index.js', 'module.exports = 1;\n');
    expect(await replayMemo(['plan'], env, rig.dir, streams, { askers: {}, performers: {} })).toBeUndefined();
  });

  it("a memo under another command line's name (a collision of its file name, which is no cryptographic hash) is a miss, never that command's output", async () => {
    const dir = join(rig.dir, 'collision', 'memo');
    const env = { ...process.env, PAIRBENCH_MEMO_DIR: dir, PAIRBENCH_MEMO_LOG: '' };
    const recording = startRecording(['plan'], env, rig.dir);
    expect(recording.finish(0)).toMatch(/^saved /);
    const [name] = readdirSync(dir);
    const printed: string[] = [];
    const streams = { stdout: { write: (s: string) => printed.push(s) }, stderr: { write: (s: string) => printed.push(s) } } as unknown as Streams;
    expect(await replayMemo(['plan'], env, rig.dir, streams, { askers: {}, performers: {} })).toBe(0);
    // The same file where another command line's memo would be found.
    const other = ['plan', '--json'];
    const otherPath = memoPath(dir, invocationIdentity(other, env, rig.dir, outputShape(streams.stdout, streams.stderr)));
    renameSync(join(dir, name!), otherPath);
    printed.length = 0;
    expect(await replayMemo(other, env, rig.dir, streams, { askers: {}, performers: {} })).toBeUndefined();
    expect(printed).toEqual([]);
  });

  it('each class of input changed in turn is a miss, and the plan is the one made without the memo', () => {
    for (const c of CLASSES) {
      const before = planUntilHit();
      c.change();
      const withMemo = plan();
      expect(withMemo.memo, c.name).toMatch(/^miss: /);
      const without = plan(false).stdout;
      expect(withMemo.stdout, c.name).toBe(without);
      if (c.changesPlan) expect(without, `${c.name} changes the plan`).not.toBe(before);
    }
  });

  for (const config of SHIPPED_CONFIGS)
    it(`${config}: the memo's plan is the plan, key for key, on the store its end-to-end run leaves; its no-op run is answered as run in full`, async () => {
      const dir = join(rig.dir, 'shipped', config.replace(/[/.]/g, '_'));
      cpSync(join(ROOT, 'examples'), join(dir, 'examples'), { recursive: true });
      cpSync(join(ROOT, config), join(dir, config));
      await goldenStore(config, join(dir, 'store'));
      extraEnv = { PATH: process.env['PATH']! }; // the host's bwrap, as the golden run had it
      const planShipped = (memo: boolean) => plan(memo, ['--config', join(dir, config), '--store', join(dir, 'store')], dir);
      const fullPlan = planShipped(false).stdout;
      const entries = (JSON.parse(fullPlan) as { nodes: { node: string; status: string; key?: string }[] }).nodes;
      expect(entries.length).toBeGreaterThan(0);
      expect(entries.filter((e) => !e.key)).toEqual([]);
      let answered: { stdout: string; memo: string } | undefined;
      // A try that writes the store saves no memo (the stat cache learns a file only once it is 2 s
      // old, so on a busy machine a few runs may each learn something): a few tries, each said on failure.
      const planTries: string[] = [];
      for (let i = 0; i < 6 && !answered?.memo.startsWith('hit'); i++) planTries.push((answered = planShipped(true)).memo);
      expect(answered!.memo, memoDiagnosis(planTries)).toMatch(/^hit: /);
      expect(answered!.stdout).toBe(fullPlan);

      // The same for `run` (run-memo.test.ts): the cohorts' admission and records, all cached, are read only.
      const runShipped = (memo: boolean) => plan(memo, ['--config', join(dir, config), '--store', join(dir, 'store')], dir, 'run');
      const durationFree = (json: string) => json.replace(/"duration_ms": \d+/, '"duration_ms": D');
      const full = runShipped(false).stdout;
      expect((JSON.parse(full) as { summary: { executed: number } }).summary.executed).toBe(0);
      const ran = durationFree(full);
      let replayed: { stdout: string; memo: string } | undefined;
      const tries: string[] = [];
      for (let i = 0; i < 6 && !replayed?.memo.startsWith('hit'); i++) tries.push((replayed = runShipped(true)).memo);
      expect(replayed!.memo, memoDiagnosis(tries)).toMatch(/^hit: /);
      expect(durationFree(replayed!.stdout)).toBe(ran);
    });
});

const dockerUp = (await dockerBackend().available()).ok;

describe.skipIf(!dockerUp && process.env['PAIRBENCH_REQUIRE_SANDBOXES'] !== '1')('the whole-plan memo and the Docker engine', () => {
  it("an image a key holds is the docker backend's stamp: the name moved to another image is a miss, and the plan is the one made without the memo", async () => {
    const image = await ensureTestImage();
    const name = `pairbench-memo-${process.pid}.fix-add`;
    const other = `pairbench-memo-other-${process.pid}:1`;
    // A second image of our own: an empty file system, imported.
    const empty = join(rig.dir, 'empty.tar');
    execFileSync('tar', ['cf', empty, '-T', '/dev/null']);
    execFileSync('docker', ['import', empty, other]);
    execFileSync('docker', ['tag', image, name]);
    try {
      rig.write(
        'bench.config.yaml',
        rig.read('bench.config.yaml').replace('sandbox: { backend: auto }', `sandbox: { backend: docker, image: "pairbench-memo-${process.pid}.{task}" }`),
      );
      extraEnv = {};
      const before = planUntilHit();
      expect(readLog().join('\n')).toMatch(/saved [0-9a-f]{16}\.json: \d+ paths, stamped: docker-images/);
      execFileSync('docker', ['tag', other, name]);
      const withMemo = plan();
      expect(withMemo.memo).toMatch(/^miss: docker-images changed/);
      const without = plan(false).stdout;
      expect(withMemo.stdout).toBe(without);
      expect(without).not.toBe(before);
    } finally {
      execFileSync('docker', ['rmi', name, other]);
    }
  });
});
