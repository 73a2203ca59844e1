/**
 * `node dist/bench/pr-job-bench.js`: the pull-request job whose change touches nothing the cohort
 * reads (a README edit), as CI runs the action: its pairbench steps (base, review, doctor, head,
 * check, comment) on a repository built from the shipped example, main's store restored as
 * actions/cache restores it, no remote cache. Goal: at most 10 s together (npm install aside).
 * Anchor, measured in the same run, A/B pair by pair: the floor of as many pairbench starts as
 * the steps make (`pairbench --version`), so the figure says what the job spends beyond starting.
 * Prints wall and CPU, min/median/max over the jobs.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { claudeBinary } from '../agents/claude-code.js';
import { checkout, commit, fakeGitHub, FakeActionsCache, git, teamRepository } from './action-workspace.js';
import { runCompositeAction, type CompositeAction, type StepResult, type Value } from './actions-runner.js';
import { median, spread, timed, type Timing } from './measure.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const JOBS = Number(process.env['PR_JOBS'] ?? 3);
const GOAL_S = 10;
const TOKEN = 'ghs_bench';
/** The steps that are pairbench's: the job's work once pairbench is installed. */
const PAIRBENCH_STEPS = ['base', 'review', 'doctor', 'head', 'check'];
/** The pairbench processes those steps start: base (run, export), review, doctor, head (run, export), check. */
const PAIRBENCH_COMMANDS = 7;

if (!existsSync(claudeBinary())) {
  process.stdout.write('pr-job bench: skipped (no Claude Code CLI: npm ci installs it)\n');
  process.exit(0);
}
spawnSync(process.execPath, [join(ROOT, 'scripts', 'build-fixtures.mjs'), '--quiet'], { stdio: 'inherit' });
const action = parse(readFileSync(join(ROOT, 'action.yml'), 'utf8')) as CompositeAction;
const tmp = mkdtempSync(join(tmpdir(), 'pairbench-pr-bench-'));
const cache = new FakeActionsCache(join(tmp, 'cache'));
const api = fakeGitHub(TOKEN);
await new Promise<void>((r) => api.server.listen(0, '127.0.0.1', r));
const origin = join(tmp, 'origin');
teamRepository(origin, ROOT);
const mainSha = git(origin, 'rev-parse', 'HEAD');
let jobs = 0;

async function job(ref: string, github: Record<string, Value>): Promise<StepResult[]> {
  const name = `job-${++jobs}`;
  const workspace = join(tmp, name);
  const sha = checkout(origin, workspace, ref, ROOT);
  const pr = (github['event'] as { pull_request?: { number: number } }).pull_request?.number;
  const scope = pr ? `pr-${pr}` : 'main';
  return runCompositeAction({
    action,
    actionPath: ROOT,
    workspace,
    runnerTemp: join(tmp, `${name}-temp`),
    inputs: {},
    github: { sha, repository: 'team/app', token: TOKEN, ...github },
    env: { PATH: process.env['PATH'] ?? '', HOME: join(tmp, 'home'), CI: 'true', GITHUB_API_URL: api.url(), GITHUB_REPOSITORY: 'team/app' },
    uses: {
      'actions/cache/restore': (w) => cache.restore(scope, w, workspace),
      'actions/cache/save': (w) => cache.save(scope, w, workspace),
      'actions/upload-artifact': () => undefined,
    },
  });
}

const failed = (results: StepResult[]) => results.find((r) => r.code !== 0 && r.step.id !== undefined);
const main = await job('main', { event_name: 'push', ref: 'refs/heads/main', event: {} });
if (failed(main)) throw new Error(`the main job failed: ${failed(main)!.output}`);
git(origin, 'checkout', '-q', '-b', 'docs');
writeFileSync(join(origin, 'README.md'), 'How we keep money in cents.\n');
git(origin, 'add', 'README.md');
commit(origin, 'docs');
git(origin, 'checkout', '-q', 'main');

const jobTimes: Timing[] = [];
const floor: Timing[] = [];
const perStep = new Map<string, number[]>();
for (let i = 0; i < JOBS; i++) {
  // A: the no-op pull request's job (a new pull request each time: nothing of its own is cached).
  const results = await job('docs', {
    event_name: 'pull_request',
    event: { pull_request: { number: 100 + i, base: { sha: mainSha }, head: { sha: 'docs', repo: { fork: false } } } },
  });
  const bad = failed(results.slice(0, -1));
  if (bad) throw new Error(`step ${bad.step.id} failed: ${bad.output}`);
  const ours = results.filter((r) => PAIRBENCH_STEPS.includes(r.step.id ?? ''));
  const executed = ours.map((r) => /^(\d+) nodes: (\d+) ran/m.exec(r.output)).filter(Boolean);
  if (executed.some((m) => m![2] !== '0')) throw new Error('the no-op pull request executed nodes');
  jobTimes.push({ wallMs: ours.reduce((s, r) => s + r.wallMs, 0), cpuMs: ours.reduce((s, r) => s + r.cpuMs, 0) });
  for (const r of ours) perStep.set(r.step.id!, [...(perStep.get(r.step.id!) ?? []), r.wallMs]);
  // B: the same number of bare pairbench starts, back to back.
  floor.push(
    timed(() => {
      for (let k = 0; k < PAIRBENCH_COMMANDS; k++) spawnSync(process.execPath, [join(ROOT, 'bin', 'pairbench.js'), '--version']);
    }).timing,
  );
}
const medianWall = median(jobTimes.map((t) => t.wallMs));
const lines = [
  `pr-job bench: a pull request that touches nothing the cohort reads, the shipped example (32 attempts on main), no remote cache, ${JOBS} jobs`,
  `  pairbench steps (${PAIRBENCH_STEPS.join(', ')}): wall ${spread(
    jobTimes.map((t) => t.wallMs / 1000),
    2,
  )} s, CPU ${spread(
    jobTimes.map((t) => t.cpuMs / 1000),
    2,
  )} s (min/median/max); goal <= ${GOAL_S} s`,
  ...[...perStep].map(
    ([id, ms]) =>
      `    ${id.padEnd(7)} wall ${spread(
        ms.map((x) => x / 1000),
        2,
      )} s`,
  ),
  `  anchor: ${PAIRBENCH_COMMANDS} bare pairbench starts: wall ${spread(
    floor.map((t) => t.wallMs / 1000),
    2,
  )} s, CPU ${spread(
    floor.map((t) => t.cpuMs / 1000),
    2,
  )} s; the job is ${spread(
    jobTimes.map((t, i) => t.wallMs / floor[i]!.wallMs),
    1,
  )}x that in wall`,
  medianWall <= GOAL_S * 1000 ? '  PASS' : '  OVER GOAL',
];
process.stdout.write(lines.join('\n') + '\n');
api.server.close();
rmSync(tmp, { recursive: true, force: true });
if (medianWall > GOAL_S * 1000) process.exitCode = 1;
