/**
 * pairbench against turbo on the same workload: 200 packages, each one cached task (its
 * input.txt copied to out.txt), as an npm workspace for turbo and as one command step of 200
 * nodes for pairbench. A/B x5 in one run, wall and CPU: the no-op (every task cached) and the
 * rebuild after one package's input changed. turbo is installed on first use into bench/.cache/
 * (from the npm registry; skipped when it cannot be). Goal (issue 38): both <= 0.5x turbo.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { git, median, must, pairedRatios, spread, timed, type Timing } from './measure.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const bin = join(root, 'bin', 'pairbench.js');
const cache = join(root, 'bench', '.cache', 'turbo');
const TURBO_VERSION = '2.11.13';
const PACKAGES = 200;
const REPS = 5;
// The same environment for both: no telemetry (there is no network), CI output.
const ENV: Record<string, string | undefined> = {
  PATH: process.env['PATH'],
  HOME: join(cache, 'home'),
  CI: '1',
  TURBO_TELEMETRY_DISABLED: '1',
  DO_NOT_TRACK: '1',
};

function installTurbo(): string | undefined {
  const turbo = join(cache, 'tool', 'node_modules', '.bin', 'turbo');
  if (existsSync(turbo)) return turbo;
  const r = spawnSync('npm', ['install', '--no-audit', '--no-fund', '--prefix', join(cache, 'tool'), `turbo@${TURBO_VERSION}`], { encoding: 'utf8' });
  return r.status === 0 && existsSync(turbo) ? turbo : undefined;
}

/** The monorepo for turbo and the project for pairbench, each with PACKAGES inputs; rebuilt from scratch. */
function workloads(): { mono: string; project: string } {
  const mono = join(cache, 'mono');
  const project = join(cache, 'project');
  rmSync(mono, { recursive: true, force: true });
  rmSync(project, { recursive: true, force: true });
  mkdirSync(mono, { recursive: true });
  writeFileSync(join(mono, 'package.json'), JSON.stringify({ name: 'mono', private: true, packageManager: 'npm@10.8.2', workspaces: ['packages/*'] }));
  writeFileSync(join(mono, 'turbo.json'), JSON.stringify({ tasks: { build: { inputs: ['input.txt'], outputs: ['out.txt'] } } }));
  const names = Array.from({ length: PACKAGES }, (_, i) => `p${i}`);
  for (const n of names) {
    mkdirSync(join(mono, 'packages', n), { recursive: true });
    writeFileSync(join(mono, 'packages', n, 'package.json'), JSON.stringify({ name: n, version: '1.0.0', scripts: { build: 'cp input.txt out.txt' } }));
    writeFileSync(join(mono, 'packages', n, 'input.txt'), `input ${n}\n`);
    mkdirSync(join(project, 'packages', n), { recursive: true });
    writeFileSync(join(project, 'packages', n, 'input.txt'), `input ${n}\n`);
  }
  const npm = spawnSync('npm', ['install', '--no-audit', '--no-fund', '--offline'], { cwd: mono, env: ENV, encoding: 'utf8' });
  if (npm.status !== 0) throw new Error(`npm install in the monorepo failed: ${npm.stderr}`);
  git(mono, 'init', '-q');
  git(mono, 'add', '-A');
  git(mono, 'commit', '-qm', 'workload');
  writeFileSync(
    join(project, 'bench.config.yaml'),
    `steps:
  build:
    kind: command
    matrix: { pkg: [${names.join(', ')}] }
    deps: ["packages/{{matrix.pkg}}/input.txt"]
    cmd: cp packages/{{matrix.pkg}}/input.txt out.txt
    outs: [out.txt]
`,
  );
  return { mono, project };
}

const turbo = installTurbo();
if (!turbo) {
  console.log(`turbo benchmark: skipped (turbo@${TURBO_VERSION} could not be installed from the npm registry)`);
  process.exit(0);
}
const { mono, project } = workloads();
const runTurbo = () => timed(() => spawnSync(turbo, ['run', 'build', '--output-logs=none'], { cwd: mono, env: ENV, encoding: 'utf8' }));
const runPairbench = (cmd: 'run' | 'plan', env: Record<string, string> = {}) =>
  timed(() =>
    spawnSync(process.execPath, [bin, cmd, ...(cmd === 'run' ? ['--progress', 'plain'] : []), '--config', join(project, 'bench.config.yaml')], {
      env: { ...ENV, ...env },
      encoding: 'utf8',
    }),
  );
const memoLog = join(cache, 'plan-memo.log');
// Both caches filled first, unmeasured.
must(runTurbo().value, 'turbo run build');
must(runPairbench('run').value, 'pairbench run');

const pairs: Record<string, { a: Timing[]; b: Timing[] }> = {
  'no-op run vs turbo no-op': { a: [], b: [] },
  'no-op plan vs turbo no-op': { a: [], b: [] },
  'one input changed: run vs turbo': { a: [], b: [] },
};
// The no-ops first: the run and the plan as a user runs them, their memo answering (each until it does, unmeasured).
for (const cmd of ['run', 'plan'] as const)
  for (let i = 0; i < 4; i++) {
    rmSync(memoLog, { force: true });
    must(runPairbench(cmd, { PAIRBENCH_MEMO_LOG: memoLog }).value, `pairbench ${cmd}`);
    if (readFileSync(memoLog, 'utf8').startsWith('hit')) break;
  }
for (let i = 0; i < REPS; i++) {
  const t = runTurbo();
  must(t.value, 'turbo run build');
  if (!t.value.stdout.includes(`${PACKAGES} cached, ${PACKAGES} total`)) throw new Error(`turbo's no-op was not one:\n${t.value.stdout}`);
  const r = runPairbench('run');
  must(r.value, 'pairbench run');
  if (!r.value.stderr.includes(`${PACKAGES} nodes: 0 ran, ${PACKAGES} cached`)) throw new Error(`pairbench's no-op was not one:\n${r.value.stderr}`);
  pairs['no-op run vs turbo no-op']!.a.push(r.timing);
  pairs['no-op run vs turbo no-op']!.b.push(t.timing);
  const t2 = runTurbo();
  const p = runPairbench('plan');
  must(p.value, 'pairbench plan');
  pairs['no-op plan vs turbo no-op']!.a.push(p.timing);
  pairs['no-op plan vs turbo no-op']!.b.push(t2.timing);
}
// Then one package's input changed the same way in both, and each rebuilds it.
for (let i = 0; i < REPS; i++) {
  const pkg = `p${i * 7}`;
  writeFileSync(join(mono, 'packages', pkg, 'input.txt'), `changed ${i}\n`);
  writeFileSync(join(project, 'packages', pkg, 'input.txt'), `changed ${i}\n`);
  const tc = runTurbo();
  must(tc.value, 'turbo run build');
  if (!tc.value.stdout.includes(`${PACKAGES - 1} cached, ${PACKAGES} total`)) throw new Error(`turbo did not rebuild one task:\n${tc.value.stdout}`);
  const rc = runPairbench('run');
  must(rc.value, 'pairbench run');
  if (!rc.value.stderr.includes(`${PACKAGES} nodes: 1 ran, ${PACKAGES - 1} cached`)) throw new Error(`pairbench did not rebuild one node:\n${rc.value.stderr}`);
  pairs['one input changed: run vs turbo']!.a.push(rc.timing);
  pairs['one input changed: run vs turbo']!.b.push(tc.timing);
}

let ok = true;
console.log(`turbo benchmark: ${PACKAGES} packages, one cached task each (turbo ${TURBO_VERSION}, an npm workspace; pairbench, one step of ${PACKAGES} nodes)`);
for (const [name, { a, b }] of Object.entries(pairs)) {
  const r = pairedRatios(a, b);
  // Goal (issue 38): <= 0.5x turbo for the no-op and the one-input rebuild (the run; the plan is shown beside).
  const goal = name.startsWith('no-op plan') ? undefined : 0.5;
  const pass = goal === undefined || (median(r.wall) <= goal && median(r.cpu) <= goal);
  if (goal !== undefined) ok &&= pass;
  console.log(
    `  ${name.padEnd(32)} wall ${spread(a.map((t) => t.wallMs))} ms vs ${spread(b.map((t) => t.wallMs))} ms, CPU ${spread(a.map((t) => t.cpuMs))} ms vs ${spread(b.map((t) => t.cpuMs))} ms; ` +
      `paired x${a.length}: wall ${spread(r.wall, 2)}x, CPU ${spread(r.cpu, 2)}x` +
      (goal === undefined ? ' (anchor only)' : `; goal <= ${goal}x both ${pass ? 'PASS' : 'MISSED'}`),
  );
}
process.exitCode = ok ? 0 : 1;
