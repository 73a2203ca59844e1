/**
 * `npm run bench`: no-op `plan` and no-op `run` over a generated config of 20,000
 * cached nodes, measured as a user would run them (a fresh process each time).
 * Goal: under 1 s wall and under 300 MB peak RSS each on a 2-core machine.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ENGINE_COMMANDS, writeConfig } from './engine-workload.js';
import { fillInProcess } from './fill-in-process.js';
import { median, pairedRatios, spread, timed, type Timing } from './measure.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const bin = join(root, 'bin', 'pairbench.js');
// CommonJS, preloaded with --require: an ES module preload would load Node's ESM loader (~8 ms) into every measured start.
const preload = join(root, 'bench', 'rss-report.cjs');
const dir = join(root, 'bench', '.cache', 'engine-20k');
const TASKS = 1000;
const REPS = 5;
const TINY_REPS = 21;

/**
 * Fills the store with every node of the config if it does not hold them yet (kept in
 * bench/.cache/ after), in this process (bench/fill-in-process.ts), then checks the fill the way
 * a user would: a real `plan` must find nothing to run.
 */
async function populate(config: string, nodes: number): Promise<void> {
  const toRun = (): number => JSON.parse(pairbench(config, ['plan', '--json'], { env: NO_MEMO_ENV }).stdout).to_run as number;
  const missing = toRun();
  if (missing === 0) return;
  console.log(`populating ${config}: ${missing} of ${nodes} nodes to fill (once; kept in bench/.cache/) ...`);
  const fill = await fillInProcess(config, ENGINE_COMMANDS);
  const left = toRun();
  if (left !== 0) throw new Error(`the in-process fill left ${left} nodes that a run would build: it does not make what a run makes`);
  console.log(
    `  filled in-process: ${fill.executed} nodes in ${(fill.ms / 1000).toFixed(1)} s (${(fill.ms / fill.executed).toFixed(2)} ms/node; a real plan finds nothing to run)`,
  );
}

/** Bytes the file system gives a directory tree (allocated blocks, as du counts them). */
function diskBytes(path: string): number {
  const st = statSync(path);
  if (!st.isDirectory()) return st.blocks * 512;
  return readdirSync(path).reduce((a, n) => a + diskBytes(join(path, n)), st.blocks * 512);
}

/**
 * The environment every timed process gets, pairbench and its anchors alike. It must be the
 * same for both: Node reads NODE_EXTRA_CA_CERTS (and NODE_OPTIONS) at start-up, and on this
 * machine the inherited environment made `node -e 0` 79 ms against 26 ms without it.
 */
const BENCH_ENV = { PATH: process.env['PATH'], CI: '1', PAIRBENCH_MEMO_DIR: join(root, 'bench', '.cache', 'plan-memo') };
/** The same, with the whole-plan memo off: the plan made in full each time. */
const NO_MEMO_ENV = { ...BENCH_ENV, PAIRBENCH_MEMO: '0' };

/** `withRss: false` runs it exactly as a user would, without the preload that reports its peak memory. */
function pairbench(
  config: string,
  args: string[],
  { withRss = true, env = BENCH_ENV }: { withRss?: boolean; env?: Record<string, string | undefined> } = {},
): { ms: number; timing: Timing; rssMb: number; stdout: string; stderr: string; status: number | null } {
  const { timing, value: r } = timed(() =>
    spawnSync(process.execPath, [...(withRss ? ['--require', preload] : []), bin, ...args, '--config', config], {
      encoding: 'utf8',
      env,
      maxBuffer: 1 << 28,
    }),
  );
  const rss = /@@maxrss_kb=(\d+)/.exec(r.stderr);
  return { ms: timing.wallMs, timing, rssMb: rss ? Number(rss[1]) / 1024 : NaN, stdout: r.stdout, stderr: r.stderr, status: r.status };
}

const config = writeConfig(dir, TASKS, REPS);
const nodes = 2 * TASKS * 2 * REPS;
await populate(config, nodes);

// Anchors on the same graph, measured in this run: ninja and make (no-op: every output up to
// date), and a tiny config's plan against \`node -e 0\`.
function anchorDir(at = dir, tasks = TASKS): string {
  const d = join(at, 'anchors');
  mkdirSync(d, { recursive: true });
  const ninja = ['rule attempt', '  command = echo $out > $out', 'rule score', '  command = cat $in > $out'];
  const make: string[] = [];
  const all: string[] = [];
  for (let t = 1; t <= tasks; t++) {
    for (const arm of ['control', 'treatment']) {
      for (let r = 1; r <= REPS; r++) {
        const a = `a-${t}-${arm}-${r}`;
        const sc = `s-${t}-${arm}-${r}`;
        ninja.push(`build ${a}: attempt input.txt`, `build ${sc}: score ${a}`);
        make.push(`${a}: input.txt\n\techo $@ > $@`, `${sc}: ${a}\n\tcat $< > $@`);
        all.push(sc);
      }
    }
  }
  writeFileSync(join(d, 'input.txt'), 'shared input\n');
  writeFileSync(join(d, 'build.ninja'), ninja.join('\n') + '\n');
  writeFileSync(join(d, 'Makefile'), `all: ${all.join(' ')}\n${make.join('\n')}\n`);
  return d;
}

function timedRun(cmd: string, args: string[], cwd?: string): Timing {
  const { timing, value: r } = timed(() => spawnSync(cmd, args, { cwd, stdio: 'ignore', env: BENCH_ENV }));
  if (r.status !== 0 && cmd !== 'make') throw new Error(`${cmd} ${args.join(' ')} exited ${r.status}`);
  return timing;
}
const timedMs = (cmd: string, args: string[], cwd?: string) => timedRun(cmd, args, cwd).wallMs;

const anchors: Record<string, number[]> = { make: [], 'node -e 0': [], 'tiny plan': [] };
const haveNinja = spawnSync('ninja', ['--version']).status === 0;
const haveMake = spawnSync('make', ['--version']).status === 0;
const ad = anchorDir();
if (haveNinja) timedMs('ninja', ['-C', ad, '-j', '8']);
if (haveMake) timedMs('make', ['-C', ad, '-j', '8', '-s']);

// The no-ops, each beside a ninja no-op on the same graph: A/B/A/B, so each pair ran under the same load.
// `plan` and `run` as a user runs them (their memo answering: pipeline/memo/), and made in full
// (PAIRBENCH_MEMO=0), printed for what the memo saves; the goal is the command's as a user runs it.
const NOOPS = ['no-op plan', 'no-op plan, memo off', 'no-op run', 'no-op run, memo off'] as const;
const memoOff = (name: string) => name.endsWith('memo off');
const results: Record<string, { ms: number[]; rss: number[]; timings: Timing[]; ninja: Timing[] }> = Object.fromEntries(
  NOOPS.map((n) => [n, { ms: [], rss: [], timings: [], ninja: [] }]),
);
// A memo is recorded by a command and answers the next (a fresh build's first runs also write V8's
// code cache, which the memo reads): each command first, unmeasured, until the memo answers it.
const commandOf = (name: string) => (name.startsWith('no-op run') ? ['run', '--progress', 'plain'] : ['plan']);
function warmMemo(configFile: string, args: string[]): void {
  const memoLog = join(dirname(configFile), 'plan-memo.log');
  for (let i = 0; i < 4; i++) {
    rmSync(memoLog, { force: true });
    pairbench(configFile, args, { env: { ...BENCH_ENV, PAIRBENCH_MEMO_LOG: memoLog } });
    if (readFileSync(memoLog, 'utf8').startsWith('hit')) return;
  }
}
for (const name of NOOPS.filter((n) => !memoOff(n))) warmMemo(config, commandOf(name));
for (let i = 0; i < 5; i++) {
  for (const name of NOOPS) {
    const p = pairbench(config, commandOf(name), memoOff(name) ? { env: NO_MEMO_ENV } : {});
    if (commandOf(name)[0] === 'plan' && !p.stdout.includes(`nothing to run: all ${nodes} nodes are cached`))
      throw new Error(`plan is not a no-op:\n${p.stdout.slice(-500)}`);
    if (commandOf(name)[0] === 'run' && !p.stderr.includes(`${nodes} nodes: 0 ran, ${nodes} cached`))
      throw new Error(`run is not a no-op:\n${p.stderr.slice(-500)}`);
    const r = results[name]!;
    r.ms.push(p.ms);
    r.rss.push(p.rssMb);
    r.timings.push(p.timing);
    if (haveNinja) {
      r.ninja.push(timedRun('ninja', ['-C', ad]));
    }
  }
}

const tiny = join(dir, 'tiny');
mkdirSync(tiny, { recursive: true });
writeFileSync(join(tiny, 'bench.config.yaml'), 'steps:\n  a: { kind: command, cmd: "echo hi > o", outs: [o] }\n');
// The tiny plan and its anchor take ~0.1 s each: 21 alternating starts of each, where a median of 5
// moved by 0.1-0.3x between runs on this shared machine; ninja and make keep 5, like the no-ops they anchor.
for (let i = 0; i < TINY_REPS; i++) {
  if (i < 5 && haveMake) anchors['make']!.push(timedMs('make', ['-C', ad, '-q']));
  anchors['node -e 0']!.push(timedMs(process.execPath, ['-e', '0']));
  anchors['tiny plan']!.push(pairbench(join(tiny, 'bench.config.yaml'), ['plan'], { withRss: false }).ms);
}

console.log(
  `\nengine benchmark: ${nodes} cached nodes, ${existsSync('/proc/cpuinfo') ? 'this machine' : ''} (median of 5 fresh processes, 21 for the tiny plan; wall includes Node start-up)`,
);
let ok = true;
for (const [name, r] of Object.entries(results)) {
  const ms = median(r.ms);
  const rss = Math.max(...r.rss);
  const pass = ms < 1000 && rss < 300;
  if (!memoOff(name)) ok &&= pass;
  console.log(
    `  ${name.padEnd(21)} ${ms.toFixed(0).padStart(5)} ms wall   ${rss.toFixed(0).padStart(4)} MB peak RSS   ${pass ? 'within goal (<1000 ms, <300 MB)' : 'OVER GOAL (<1000 ms, <300 MB)'}`,
  );
}
const ratio = (a: number, b: number) => `${(a / b).toFixed(1)}x`;
if (haveNinja) {
  for (const name of NOOPS) {
    const r = results[name]!;
    const paired = pairedRatios(r.timings, r.ninja);
    const x = median(paired.wall);
    const cpuX = median(paired.cpu);
    // Goal (issue 38): <= 2x ninja, wall and CPU; the earlier goal was 4x, wall. A command without
    // its memo is printed beside, for what the memo saves; its goal is the command's.
    const pass = x <= 2 && cpuX <= 2;
    if (!memoOff(name)) ok &&= pass;
    console.log(
      `  ${name.padEnd(21)} vs ninja no-op on the same graph, paired A/B x5: wall ${spread(r.timings.map((t) => t.wallMs))} ms vs ${spread(r.ninja.map((t) => t.wallMs))} ms, ` +
        `CPU ${spread(r.timings.map((t) => t.cpuMs))} ms vs ${spread(r.ninja.map((t) => t.cpuMs))} ms (min/median/max); ` +
        `ratio wall ${spread(paired.wall, 1)}x, CPU ${spread(paired.cpu, 1)}x; goal <= 2x both ${pass ? 'PASS' : 'OVER GOAL'} (earlier goal <= 4x wall ${x <= 4 ? 'PASS' : 'OVER GOAL'})`,
    );
  }
}
if (haveMake)
  console.log(
    `  no-op run vs make -q on the same graph (${median(anchors['make']!).toFixed(0)} ms): ${ratio(median(results['no-op run']!.ms), median(anchors['make']!))}, memo off ${ratio(median(results['no-op run, memo off']!.ms), median(anchors['make']!))} (anchor only)`,
  );
const tinyX = median(anchors['tiny plan']!) / median(anchors['node -e 0']!);
ok &&= tinyX <= 2.5;
console.log(
  `  tiny config plan ${median(anchors['tiny plan']!).toFixed(0)} ms vs node -e 0 ${median(anchors['node -e 0']!).toFixed(0)} ms: ${tinyX.toFixed(1)}x; goal <= 2.5x ${tinyX <= 2.5 ? 'PASS' : 'OVER GOAL'}`,
);

// Store overhead: what the store holds besides the outputs themselves (cas/), per cached node, on disk.
const storeDir = join(dir, '.pairbench');
const overhead =
  readdirSync(storeDir)
    .filter((n) => n !== 'cas')
    .reduce((a, n) => a + diskBytes(join(storeDir, n)), 0) / nodes;
const outputs = diskBytes(join(storeDir, 'cas')) / nodes;
ok &&= overhead <= 3072;
console.log(
  `  store on disk per cached node: ${(overhead / 1024).toFixed(2)} KB besides the outputs (records, journals, roots, access), outputs ${(outputs / 1024).toFixed(2)} KB; goal <= 3 KB ${overhead <= 3072 ? 'PASS' : 'OVER GOAL'}`,
);

// 100,000 nodes: the no-op against ninja's, and its peak memory. Filled in-process once, then kept.
const dir100k = join(root, 'bench', '.cache', 'engine-100k');
{
  const config100k = writeConfig(dir100k, TASKS * 5, REPS);
  await populate(config100k, nodes * 5);
  // Made in full, for its memory (goal < 300 MB); as a user runs it (the memo answering), beside a
  // ninja no-op on the same 100,000-node graph, paired A/B x3 (goal <= 1x ninja, wall and CPU).
  const ad100k = anchorDir(dir100k, TASKS * 5);
  // Built (or brought up to date) before the pairs, as the 20k anchor is: each paired ninja run is a no-op.
  if (haveNinja) timedMs('ninja', ['-C', ad100k, '-j', '8']);
  for (const cmd of ['plan', 'run']) {
    const args = cmd === 'run' ? ['run', '--progress', 'none'] : ['plan'];
    const full = pairbench(config100k, args, { env: NO_MEMO_ENV });
    if (full.status !== 0) throw new Error(`100k ${cmd} failed: ${full.stderr.slice(-500)}`);
    const pass = full.rssMb < 300;
    ok &&= pass;
    warmMemo(config100k, args);
    const mine: Timing[] = [];
    const ninja: Timing[] = [];
    let rss = 0;
    for (let i = 0; i < 3; i++) {
      const p = pairbench(config100k, args);
      mine.push(p.timing);
      rss = Math.max(rss, p.rssMb);
      if (haveNinja) ninja.push(timedRun('ninja', ['-C', ad100k]));
    }
    console.log(
      `  100,000 nodes: no-op ${cmd} made in full ${(full.ms / 1000).toFixed(2)} s, ${full.rssMb.toFixed(0)} MB peak RSS; goal < 300 MB ${pass ? 'PASS' : 'OVER GOAL'}`,
    );
    if (haveNinja) {
      const paired = pairedRatios(mine, ninja);
      const x = median(paired.wall);
      const cpuX = median(paired.cpu);
      ok &&= x <= 1 && cpuX <= 1 && rss < 300;
      console.log(
        `  100,000 nodes: no-op ${cmd} (its memo answering) vs ninja no-op on the same graph, paired A/B x3: wall ${spread(mine.map((t) => t.wallMs))} ms vs ${spread(ninja.map((t) => t.wallMs))} ms, ` +
          `CPU ${spread(mine.map((t) => t.cpuMs))} ms vs ${spread(ninja.map((t) => t.cpuMs))} ms; ratio wall ${spread(paired.wall, 2)}x, CPU ${spread(paired.cpu, 2)}x, ${rss.toFixed(0)} MB peak RSS; ` +
          `goal <= 1x both, < 300 MB ${x <= 1 && cpuX <= 1 && rss < 300 ? 'PASS' : 'MISSED'}`,
      );
    }
  }
}
process.exitCode = ok ? 0 : 1;
