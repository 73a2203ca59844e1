/**
 * Harness overhead per sandboxed node (nop agent, trivial verifier) for each sandbox backend,
 * against the bare cost of starting that sandbox, in pairs under the same load (wall and CPU).
 * Goals per node (a run node, a verify node): bubblewrap <= 2x a bare bwrap start
 * from Node, docker <= 1.1x a bare `docker run`; local is shown as an anchor only, and bubblewrap
 * with everything on tmpfs as a reference (how much of a node is the disk's).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { git, median, nodeDurations, spread, timed, type Timing } from './measure.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const bin = join(root, 'bin', 'pairbench.js');
/** Preloaded into each measured run: says what its own process spent (bench/rss-report.cjs). */
const reporter = join(root, 'bench', 'rss-report.cjs');
/** Reps of the smaller project per round (the larger has 3x): docker's nodes take a second each. */
const REPS: Record<string, number> = { local: 5, bubblewrap: 5, docker: 2 };

function project(backend: string, image: string | undefined, reps: number, base: string): string {
  const dir = mkdtempSync(join(base, `pairbench-bench-${backend}-`));
  const repo = join(dir, 'repo');
  mkdirSync(join(repo, 'src'), { recursive: true });
  writeFileSync(join(repo, 'src', 'a.txt'), 'a\n');
  git(repo, 'init', '-q');
  git(repo, 'add', '-A');
  git(repo, 'commit', '-qm', 'x');
  const commit = git(repo, 'rev-parse', 'HEAD');
  mkdirSync(join(dir, 'tasks', 't1'), { recursive: true });
  writeFileSync(
    join(dir, 'tasks', 't1', 'task.yaml'),
    `id: t1\nrepo: { path: ../../repo, commit: ${commit} }\nprompt: nothing\nverifier: { command: "true" }\n`,
  );
  const sandbox = backend === 'local' ? '{ backend: local, egress: open }' : `{ backend: ${backend}, egress: none${image ? `, image: "${image}"` : ''} }`;
  writeFileSync(
    join(dir, 'bench.config.yaml'),
    `concurrency: { global: 1 }
steps:
  materialize: { kind: materialize, matrix: { task: [t1] } }
  attempts:
    kind: run
    needs: [materialize]
    matrix: { task: [t1], arm: [control, treatment], rep: ${reps} }
    agent: { adapter: nop }
    arms: { control: {}, treatment: {} }
    sandbox: ${sandbox}
  verify:
    kind: verify
    needs: [materialize, attempts]
    matrix: { task: [t1], arm: [control, treatment], rep: ${reps} }
    sandbox: ${sandbox}
`,
  );
  return dir;
}

const bwrapBare = [
  'bwrap',
  '--unshare-all',
  '--unshare-user',
  '--uid',
  '1000',
  '--gid',
  '1000',
  '--cap-drop',
  'ALL',
  '--die-with-parent',
  '--ro-bind',
  '/usr',
  '/usr',
  '--symlink',
  'usr/bin',
  '/bin',
  '--symlink',
  'usr/lib',
  '/lib',
  '--symlink',
  'usr/lib64',
  '/lib64',
  '--proc',
  '/proc',
  '--dev',
  '/dev',
  'true',
];
const dockerImage = spawnSync('docker', ['images', '--no-trunc', '-q', 'pairbench-test'], { encoding: 'utf8' }).stdout?.trim().split('\n')[0] || undefined;
/**
 * A row: a backend, its bare start, and where its project and the harness's scratch live. The
 * `on tmpfs` row (a reference, not a goal) puts the store, the work directories and TMPDIR on
 * /dev/shm: what a node costs without the disk's file creations and removals.
 */
interface Row {
  name: string;
  backend: string;
  bare: string[] | null;
  image?: string;
  skip?: string;
  /** Where the project (its store) and TMPDIR go; default os.tmpdir(). */
  base?: string;
  /** A reference beside the goal's row: its ratios are printed, not judged. */
  reference?: true;
}
const hasBwrap = spawnSync('bwrap', ['--version']).status === 0;
const shm = statSync('/dev/shm', { throwIfNoEntry: false })?.isDirectory() ? '/dev/shm' : undefined;
const backends: Row[] = [
  { name: 'local', backend: 'local', bare: ['sh', '-c', 'true'] },
  { name: 'bubblewrap', backend: 'bubblewrap', bare: hasBwrap ? bwrapBare : null },
  shm
    ? { name: 'bubblewrap on tmpfs', backend: 'bubblewrap', bare: hasBwrap ? bwrapBare : null, base: shm, reference: true }
    : { name: 'bubblewrap on tmpfs', backend: 'bubblewrap', bare: null, skip: 'no /dev/shm' },
  dockerImage
    ? { name: 'docker', backend: 'docker', bare: ['docker', 'run', '--rm', '--network', 'none', dockerImage, 'true'], image: dockerImage }
    : { name: 'docker', backend: 'docker', bare: null, skip: 'no engine or no pairbench-test image (run the docker tests once to build it)' },
];

// Per sandboxed node against one bare start of that sandbox (the issue's goals); local has none: it isolates nothing.
const GOALS: Record<string, number> = { bubblewrap: 2, docker: 1.1 };
/** A project's sandboxed nodes: an attempt and a verification per arm and rep. */
const nodes = (reps: number): number => 4 * reps;

/** CPU of this process (every thread), in ms: what Node spends itself to start a child. */
const ownCpuMs = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

/**
 * A project's run: its materialize built first (unmeasured), then a full run and (`noop`) a no-op
 * made in full, timed; `ownCpuMs` is what the full run's pairbench process spent itself (its
 * preloaded reporter says), the rest of its CPU being the processes it started (the sandboxes).
 */
function runProject(b: Row, reps: number, noop: boolean): { full: Timing; ownCpuMs: number; noop?: Timing; durations: Map<string, number> } | string {
  const base = b.base ?? tmpdir();
  const dir = project(b.backend, b.image, reps, base);
  try {
    const pb = (args: string[] = [], env: Record<string, string> = {}) =>
      timed(() =>
        spawnSync(process.execPath, ['--require', reporter, bin, 'run', '--progress', 'none', ...args, '--config', join(dir, 'bench.config.yaml')], {
          encoding: 'utf8',
          // The sandbox's private directory (os.tmpdir()) beside the project.
          env: { ...process.env, TMPDIR: base, ...env },
        }),
      );
    const first = pb(['materialize']).value;
    if (first.status !== 0) return `materialize failed: ${first.stderr.slice(-500)}`;
    const full = pb();
    if (full.value.status !== 0) return `run failed: ${full.value.stderr.slice(-500)}`;
    const own = /@@own_cpu_ms=([\d.]+)/.exec(full.value.stderr);
    if (!own) return `the run's CPU report is missing (${reporter} not preloaded?)`;
    // The baseline is a no-op made in full (the planning every run that builds pays), not a memo's replay.
    return { full: full.timing, ownCpuMs: Number(own[1]), ...(noop ? { noop: pb([], { PAIRBENCH_MEMO: '0' }).timing } : {}), durations: nodeDurations(dir) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

interface Round {
  bare: Timing;
  /** CPU of a bare start's child alone (bare.cpuMs less what this process spent starting it). */
  bareChildCpuMs: number;
  run: Timing;
  verify: Timing;
  /** Of a node's CPU, what pairbench's own process spent (the rest is the sandbox's processes). */
  ownCpuMs: number;
  /** CPU per node of the smaller run, its fixed costs (start-up, planning, loading what executing needs) spread over its nodes. */
  amortizedCpuMs: number;
}

/**
 * One round, A then B under the same load: `nodes(reps)` bare starts of the sandbox from Node (its
 * CPU: the child's and what this process spent starting it), then two fresh projects, of `reps`
 * and 3 x `reps` reps. A node's wall is what its record holds (the larger run's median); its CPU is
 * the difference of the two runs' CPU over the difference of their nodes: what one more node costs,
 * without the run's fixed costs (which the amortized figure spreads over the smaller run's nodes).
 */
function round(b: Row & { bare: string[] }, reps: number): Round | string {
  const starts = nodes(reps);
  const own0 = ownCpuMs();
  const bare = timed(() => {
    for (let i = 0; i < starts; i++)
      if (spawnSync(b.bare[0]!, b.bare.slice(1), { stdio: 'ignore' }).status !== 0) throw new Error(`${b.bare.join(' ')} failed`);
  }).timing;
  const bareChildCpuMs = bare.cpuMs / starts;
  bare.cpuMs += ownCpuMs() - own0;
  const small = runProject(b, reps, true);
  if (typeof small === 'string') return small;
  const large = runProject(b, 3 * reps, false);
  if (typeof large === 'string') return large;
  const extra = nodes(3 * reps) - nodes(reps);
  const perNode = Math.max(0, large.full.cpuMs - small.full.cpuMs) / extra;
  const wallOf = (step: string) => median([...large.durations].filter(([n]) => n.startsWith(`${step}/`)).map(([, v]) => v));
  return {
    bare: { wallMs: bare.wallMs / starts, cpuMs: bare.cpuMs / starts },
    bareChildCpuMs,
    ownCpuMs: Math.max(0, large.ownCpuMs - small.ownCpuMs) / extra,
    run: { wallMs: wallOf('attempts'), cpuMs: perNode },
    verify: { wallMs: wallOf('verify'), cpuMs: perNode },
    amortizedCpuMs: Math.max(0, small.full.cpuMs - small.noop!.cpuMs) / nodes(reps),
  };
}

let ok = true;
console.log(
  'execution benchmark: sequential sandboxed nodes (per rep, an attempt of the nop agent and a verification with the verifier "true", per arm), ' +
    "each round beside as many bare starts of the same sandbox from Node (A/B; a start's CPU: the child's and what Node spent starting it). " +
    'CPU per node: what one more node costs (a run of 3x the reps less a run of the reps, over the extra nodes); ' +
    'amortized: the smaller run less its no-op made in full, over its nodes (its fixed costs spread over them)\n',
);
for (const b of backends) {
  if (!b.bare) {
    console.log(`  ${b.name.padEnd(19)} skipped: ${b.skip ?? 'not installed'}`);
    continue;
  }
  const reps = REPS[b.backend]!;
  const rounds: Round[] = [];
  let failed: string | undefined;
  for (let i = 0; i < (b.backend === 'docker' ? 3 : 5) && !failed; i++) {
    const r = round({ ...b, bare: b.bare }, reps);
    if (typeof r === 'string') failed = r;
    else rounds.push(r);
  }
  if (failed) {
    console.log(`  ${b.name.padEnd(19)} FAILED: ${failed}`);
    ok = false;
    continue;
  }
  const bare = rounds.map((r) => r.bare);
  const node = rounds.map((r) => (r.run.wallMs >= r.verify.wallMs ? r.run : r.verify));
  // Per-start CPU is an average over many starts (a few clock ticks in all), so no tick floor here.
  const ratios = { wall: node.map((t, i) => t.wallMs / bare[i]!.wallMs), cpu: node.map((t, i) => t.cpuMs / Math.max(0.1, bare[i]!.cpuMs)) };
  const goal = b.reference ? undefined : GOALS[b.backend];
  const met = goal === undefined || (median(ratios.wall) <= goal && median(ratios.cpu) <= goal);
  ok &&= met;
  const ms = (xs: number[], digits = 1) => `${spread(xs, digits)} ms`;
  console.log(
    `  ${b.name.padEnd(19)} ${nodes(reps)} and ${nodes(3 * reps)} nodes | bare start wall ${ms(bare.map((t) => t.wallMs))}, CPU ${ms(bare.map((t) => t.cpuMs))} | ` +
      `run node wall ${ms(
        rounds.map((r) => r.run.wallMs),
        0,
      )}, verify node wall ${ms(
        rounds.map((r) => r.verify.wallMs),
        0,
      )}, ` +
      `CPU per node ${ms(node.map((t) => t.cpuMs))} (amortized ${ms(rounds.map((r) => r.amortizedCpuMs))}; ` +
      `pairbench's own process ${ms(rounds.map((r) => r.ownCpuMs))}, the processes it started ${ms(rounds.map((r, i) => node[i]!.cpuMs - r.ownCpuMs))}, ` +
      `against a bare start's child ${ms(rounds.map((r) => r.bareChildCpuMs))}) | ` +
      `per node (the slower of the two) vs a bare start, paired x${rounds.length}: wall ${spread(ratios.wall, 2)}x, CPU ${spread(ratios.cpu, 2)}x` +
      (goal === undefined
        ? b.reference
          ? ` (reference: the goal is judged on the row above)`
          : ' (anchor only)'
        : `; goal <= ${goal}x both ${met ? 'PASS' : 'MISSED'}`),
  );
}
process.exitCode = ok ? 0 : 1;
