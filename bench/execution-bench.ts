/**
 * Harness overhead per sandboxed node (nop agent, trivial verifier) for each sandbox backend,
 * against the bare cost of starting that sandbox, in pairs under the same load (wall and CPU).
 * Goals per node (a run node, a verify node): bubblewrap <= 2x a bare bwrap start
 * from Node, docker <= 1.1x a bare `docker run`; local is shown as an anchor only.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { git, median, nodeDurations, spread, timed, type Timing } from './measure.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const bin = join(root, 'bin', 'pairbench.js');
const REPS = 5;

function project(backend: string, image: string | undefined): string {
  const dir = mkdtempSync(join(tmpdir(), `pairbench-bench-${backend}-`));
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
    matrix: { task: [t1], arm: [control, treatment], rep: ${REPS} }
    agent: { adapter: nop }
    arms: { control: {}, treatment: {} }
    sandbox: ${sandbox}
  verify:
    kind: verify
    needs: [materialize, attempts]
    matrix: { task: [t1], arm: [control, treatment], rep: ${REPS} }
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
const backends: { name: string; bare: string[] | null; image?: string; skip?: string }[] = [
  { name: 'local', bare: ['sh', '-c', 'true'] },
  { name: 'bubblewrap', bare: spawnSync('bwrap', ['--version']).status === 0 ? bwrapBare : null },
  dockerImage
    ? { name: 'docker', bare: ['docker', 'run', '--rm', '--network', 'none', dockerImage, 'true'], image: dockerImage }
    : { name: 'docker', bare: null, skip: 'no engine or no pairbench-test image (run the docker tests once to build it)' },
];

// Per sandboxed node against one bare start of that sandbox (the issue's goals); local has none: it isolates nothing.
const GOALS: Record<string, number> = { bubblewrap: 2, docker: 1.1 };
/** The sandboxed nodes of one round: an attempt and a verification per arm and rep. */
const NODES = 4 * REPS;

/**
 * One round, A then B under the same load: NODES bare starts of the sandbox, then a fresh project's
 * NODES sandboxed nodes (materialize built first, unmeasured) and a no-op run of it. A node's wall
 * is what its record holds; its CPU is the run's CPU less the no-op's made in full (start-up and planning), per node.
 */
function round(b: { name: string; bare: string[]; image?: string }): { bare: Timing; run: Timing; verify: Timing } | string {
  const bare = timed(() => {
    for (let i = 0; i < NODES; i++) if (spawnSync(b.bare[0]!, b.bare.slice(1), { stdio: 'ignore' }).status !== 0) throw new Error(`${b.bare.join(' ')} failed`);
  }).timing;
  const dir = project(b.name, b.image);
  try {
    const pb = (args: string[] = [], env: Record<string, string> = {}) =>
      timed(() =>
        spawnSync(process.execPath, [bin, 'run', '--progress', 'none', ...args, '--config', join(dir, 'bench.config.yaml')], {
          encoding: 'utf8',
          env: { ...process.env, ...env },
        }),
      );
    const first = pb(['materialize']).value;
    if (first.status !== 0) return `materialize failed: ${first.stderr.slice(-500)}`;
    const full = pb();
    if (full.value.status !== 0) return `run failed: ${full.value.stderr.slice(-500)}`;
    // The baseline is a no-op made in full (the planning every run that builds pays), not a memo's replay.
    const noop = pb([], { PAIRBENCH_MEMO: '0' });
    const d = nodeDurations(dir);
    const cpuPerNode = Math.max(0, full.timing.cpuMs - noop.timing.cpuMs) / NODES;
    const wallOf = (step: string) => median([...d].filter(([n]) => n.startsWith(`${step}/`)).map(([, v]) => v));
    return {
      bare: { wallMs: bare.wallMs / NODES, cpuMs: bare.cpuMs / NODES },
      run: { wallMs: wallOf('attempts'), cpuMs: cpuPerNode },
      verify: { wallMs: wallOf('verify'), cpuMs: cpuPerNode },
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

let ok = true;
console.log(
  `execution benchmark: ${NODES} sandboxed nodes per round (${2 * REPS} attempts, nop agent; ${2 * REPS} verifications, verifier "true"), sequential, ` +
    `each round beside ${NODES} bare starts of the same sandbox (A/B; CPU per node: the run's less a no-op run's made in full, over ${NODES})\n`,
);
for (const b of backends) {
  if (!b.bare) {
    console.log(`  ${b.name.padEnd(10)} skipped: ${b.skip ?? 'not installed'}`);
    continue;
  }
  const rounds: { bare: Timing; run: Timing; verify: Timing }[] = [];
  let failed: string | undefined;
  for (let i = 0; i < (b.name === 'docker' ? 3 : 5) && !failed; i++) {
    const r = round({ name: b.name, bare: b.bare, ...(b.image ? { image: b.image } : {}) });
    if (typeof r === 'string') failed = r;
    else rounds.push(r);
  }
  if (failed) {
    console.log(`  ${b.name.padEnd(10)} FAILED: ${failed}`);
    ok = false;
    continue;
  }
  const bare = rounds.map((r) => r.bare);
  const node = rounds.map((r) => (r.run.wallMs >= r.verify.wallMs ? r.run : r.verify));
  // Per-start CPU is an average over NODES starts (a few clock ticks in all), so no tick floor here.
  const ratios = { wall: node.map((t, i) => t.wallMs / bare[i]!.wallMs), cpu: node.map((t, i) => t.cpuMs / Math.max(0.1, bare[i]!.cpuMs)) };
  const goal = GOALS[b.name];
  const met = goal === undefined || (median(ratios.wall) <= goal && median(ratios.cpu) <= goal);
  ok &&= met;
  console.log(
    `  ${b.name.padEnd(10)} bare start wall ${spread(
      bare.map((t) => t.wallMs),
      1,
    )} ms, CPU ${spread(
      bare.map((t) => t.cpuMs),
      1,
    )} ms | ` +
      `run node wall ${spread(rounds.map((r) => r.run.wallMs))} ms, verify node wall ${spread(rounds.map((r) => r.verify.wallMs))} ms, CPU per node ${spread(
        node.map((t) => t.cpuMs),
        1,
      )} ms | ` +
      `per node (the slower of the two) vs a bare start, paired x${rounds.length}: wall ${spread(ratios.wall, 2)}x, CPU ${spread(ratios.cpu, 2)}x` +
      (goal === undefined ? ' (anchor only)' : `; goal <= ${goal}x both ${met ? 'PASS' : 'MISSED'}`),
  );
}
process.exitCode = ok ? 0 : 1;
