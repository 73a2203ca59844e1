import { chmodSync, copyFileSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { gitApply } from '../sandboxes/git-apply.js';
import { errorMessage, err, ok, unreachable, type Result } from '../pipeline/result.js';
import { sandboxBackend, type BackendName } from '../sandboxes/index.js';
import type { EgressMode, ExecResult, Mount, Sandbox } from '../sandboxes/sandbox.js';
import { shellQuote } from './task-sources/swebench.js';
import type { Task, TestRunner } from './task.js';
import { exitCodeProblem, graded, parseReport, REPORT_CHANNEL, reportedStatus, reportFileName, type RunnerStatus } from '../test-results/index.js';
import { reportAmbiguity } from '../test-results/ambiguity.js';
import { plant, plantTargets, type CanaryCalibrations, type CanaryOutcome, type PlantTarget } from './verifier-canary.js';

export interface TestEvidence {
  name: string;
  kind: 'command' | 'fail_to_pass' | 'pass_to_pass';
  /** `skipped`: a test runner reported it skipped (counted neither way, as SWE-bench grades). */
  status: 'pass' | 'fail' | 'timeout' | 'skipped';
  /** With a test runner: the status its report gave the test (absent: not in the report). */
  reported?: RunnerStatus | null;
  exit_code: number | null;
  duration_ms: number;
  output_tail: string;
}

/** Why a pass was not believed: the code under test forced the verifier's verdict. */
export interface Forgery {
  reason: 'canary-passed' | 'reward-files-disagree' | 'report-contradicts-exit-code';
  detail: string;
}

export interface VerifierOutcome {
  /** null: the verifier gave no verdict (a verifier error: the attempt is excluded, never scored 0). */
  pass: boolean | null;
  evidence: TestEvidence[];
  /** Harbor tasks: what the verifier wrote to /logs/verifier/reward.txt|json. */
  reward: Record<string, number> | null;
  /** Which of the two files it wrote (reward.json when both, agreeing): an export writes the same one. */
  rewardFile?: RewardFile | null;
  /** Per test that passed and was canaried: what its canary did. */
  canaries: Record<string, CanaryOutcome>;
  /** Set when the verdict was forged (then `pass` is false). */
  forgery: Forgery | null;
  sandbox: { backend: string; isolation: string; image_id: string | null };
  /** Every verifier process's full output, in order: what a person reads to see why. */
  transcript: string;
  /** Per canaried test: the files its canary is planted into (found after the hidden patch is applied). */
  canaryTargets: Record<string, PlantTarget[]>;
  /** Why there is no verdict (pass null): e.g. the verifier wrote no reward. */
  error?: string;
}

export interface VerifierSandbox {
  backend: BackendName;
  egress: EgressMode;
  image: string | null;
  /** Docker: where the workspace is mounted (a task image's WORKDIR); default /work. */
  workdir?: string;
  /** Docker: the user the verifier runs as (a Harbor task's verifier user; root by Harbor's default). */
  user?: string;
  allow?: readonly string[];
  resources?: { cpus?: number; memory_mb?: number; pids?: number };
  /** bubblewrap: the declared, digested host paths bound instead of the system directories. */
  hostPaths?: readonly string[];
}

/**
 * The canary (verifier-canary.ts): `verify` passes what certify calibrated (null: no
 * certify step upstream, so no canary can be trusted); `calibrate` is certify's run
 * with the reference solution, where every canary must fail.
 */
export type CanaryMode = { mode: 'verify'; calibrations: CanaryCalibrations | null } | { mode: 'calibrate' };

const VERIFIER_INSIDE = '/verifier';
const CANARY_INSIDE = '/verifier-canary';
const LOGS_INSIDE = '/logs/verifier';
/** Where a runner writes its report file (`{report}`): pairbench's, outside the workspace, fresh per invocation. */
const REPORT_INSIDE = '/pairbench-report';

/** A step's sandbox settings as the verifier takes them. */
export function verifierSandbox(s: {
  backend: BackendName;
  egress: string;
  image: string | null;
  allow: readonly string[];
  resources: { cpus?: number; memory_mb?: number; pids?: number };
  workdir?: string;
  user?: string;
  hostPaths?: readonly string[];
}): VerifierSandbox {
  return {
    backend: s.backend,
    egress: s.egress as EgressMode,
    image: s.image,
    allow: s.allow,
    resources: s.resources,
    ...(s.workdir ? { workdir: s.workdir } : {}),
    ...(s.user ? { user: s.user } : {}),
    ...(s.hostPaths ? { hostPaths: s.hostPaths } : {}),
  };
}

/** The evidence entry of a test runner's invocation; also the name its canary is calibrated under. */
export const RUNNER_TEST = 'runner';

/**
 * The runner's command: `{tests}` becomes the shell-quoted test ids; `{test_files}` the files
 * the hidden test patch touches and `{test_modules}` the same as Django's runner names them
 * (`tests/` taken off, no `.py`, dots for slashes), as SWE-bench's eval scripts pass them.
 */
export function runnerCommand(command: string, ids: readonly string[], testPatch: string | null = null, report: string | null = null): string {
  const files = testPatch ? patchedFiles(testPatch).filter((f) => f !== '/dev/null') : [];
  const modules = files
    .filter((f) => f.endsWith('.py'))
    .map((f) =>
      f
        .replace(/^tests\//, '')
        .replace(/\.py$/, '')
        .replaceAll('/', '.'),
    );
  return command
    .replaceAll('{report}', report ? shellQuote(report) : '')
    .replaceAll('{tests}', ids.map(shellQuote).join(' '))
    .replaceAll('{test_files}', files.map(shellQuote).join(' '))
    .replaceAll('{test_modules}', modules.map(shellQuote).join(' '));
}

/** The test output between SWE-bench's eval-script markers when they are there (the rest is setup), else all of it. */
function testOutput(log: string): string {
  const start = log.indexOf('>>>>> Start Test Output');
  const end = log.lastIndexOf('>>>>> End Test Output');
  if (start < 0 || end < start) return log;
  return log.slice(log.indexOf('\n', start) + 1, end);
}

/** SWE-bench's eval script records its test command's own exit status after the output markers. */
const TEST_EXIT_CODE = />>>>> Test Exit Code:\s*(-?\d+)/;

/** The report file the runner wrote at `{report}` (empty when it wrote none). */
function readReport(dir: string, name: string): string {
  try {
    return readFileSync(join(dir, name), 'utf8');
  } catch {
    return '';
  }
}

/** A runner invocation's report: each test's status, why there is none (a file missing or not parsing), and a contradiction with its exit code. */
interface RunnerReport {
  statuses: Map<string, RunnerStatus>;
  /** No report to read: every listed test is then unreported, so it fails. */
  problem: string | null;
  /** The report names passes and no failure while the test command failed (SWE-bench's exit-code rule). */
  contradiction: string | null;
  /** A report printed as text that has two readings (a second summary, text after the runner's last line): it decides nothing. */
  ambiguous: string | null;
}

/** `root`: the workspace as the runner saw it (a report naming files by absolute path is read relative to it). */
function runnerReport(runner: TestRunner, r: ExecResult, reportDir: string, root: string): RunnerReport {
  const file = REPORT_CHANNEL[runner.report] === 'file';
  const output = `${r.stdout}\n${r.stderr}`;
  const text = file ? readReport(reportDir, reportName(runner)) : testOutput(output);
  const ambiguous = reportAmbiguity(runner.report, text);
  const parsed = parseReport(runner.report, text, root);
  if (!parsed.ok) return { statuses: new Map(), problem: parsed.error, contradiction: null, ambiguous };
  // The test command's own exit status: recorded by an eval script, else the runner's.
  const recorded = TEST_EXIT_CODE.exec(output);
  const exitCode = recorded ? Number(recorded[1]) : runner.env?.['PAIRBENCH_EVAL_SCRIPT'] ? null : r.exitCode;
  return { statuses: parsed.value, problem: null, contradiction: exitCodeProblem(parsed.value, exitCode), ambiguous };
}

/** The report file's name in pairbench's report directory. */
function reportName(runner: TestRunner): string {
  return runner.reportFile ?? reportFileName(runner.report);
}

/** Every verifier process's command, exit and full output, capped so a runaway log cannot fill the store. */
class Transcript {
  private parts: string[] = [];
  private size = 0;
  private static readonly MAX = 16 * 1024 * 1024;

  add(label: string, command: string, r: ExecResult): void {
    const part = `=== ${label}\n$ ${command.length > 2000 ? `${command.slice(0, 2000)}... (${command.length} characters)` : command}\n--- exit ${r.timedOut ? 'timed out' : (r.exitCode ?? r.signal)} in ${r.durationMs} ms\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}\n`;
    if (this.size + part.length > Transcript.MAX) {
      this.parts.push(`=== ${label}: output dropped (the transcript is capped at ${Transcript.MAX} bytes)\n`);
      return;
    }
    this.parts.push(part);
    this.size += part.length;
  }

  note(line: string): void {
    this.parts.push(`=== ${line}\n`);
  }

  text(): string {
    return this.parts.join('');
  }
}

/** The paths a unified diff changes (old and new names). */
export function patchedFiles(patch: string): string[] {
  const out = new Set<string>();
  for (const m of patch.matchAll(/^(?:\+\+\+ b\/|--- a\/)(.+?)\s*$/gm)) out.add(m[1]!);
  for (const m of patch.matchAll(/^diff --git a\/(\S+) b\/(\S+)/gm)) out.add(m[1]!).add(m[2]!);
  return [...out];
}

/** Each path as the pristine tree has it: copied back, or removed when the base has no such file. */
function resetToBase(ws: string, pristine: string, paths: readonly string[]): void {
  for (const p of paths) {
    if (p.split('/').includes('..') || p.startsWith('/')) continue;
    const from = join(pristine, p);
    const to = join(ws, p);
    rmSync(to, { recursive: true, force: true });
    if (existsSync(from)) {
      mkdirSync(dirname(to), { recursive: true });
      copyFileSync(from, to);
    }
  }
}

function tail(s: string, n = 40): string {
  return s.trimEnd().split('\n').slice(-n).join('\n');
}

export type RewardFile = 'reward.txt' | 'reward.json';

type RewardRead = { ok: true; reward: Record<string, number>; file: RewardFile } | { ok: false; forgery: Forgery } | { ok: false; error: string };

/**
 * The Harbor reward, as Harbor reads it: reward.txt holds one number, reward.json an object
 * of numbers. Missing, empty, or anything but numbers is a verifier error (no verdict), never
 * a 0. The verifier writes one of the two files; code run by the verifier can write the
 * other: two files that disagree are a forgery, not a choice.
 */
function readReward(dir: string): RewardRead {
  const txtPath = join(dir, 'reward.txt');
  const jsonPath = join(dir, 'reward.json');
  const hasJson = existsSync(jsonPath);
  const hasTxt = existsSync(txtPath);
  if (!hasJson && !hasTxt) return { ok: false, error: 'the verifier wrote no reward (/logs/verifier/reward.txt or reward.json)' };
  let fromJson: Record<string, number> | null = null;
  let fromTxt: Record<string, number> | null = null;
  if (hasJson) {
    const text = readFileSync(jsonPath, 'utf8');
    let data: unknown;
    try {
      data = JSON.parse(text);
    } catch {
      return { ok: false, error: `reward.json is not JSON: ${JSON.stringify(text.slice(0, 80))}` };
    }
    if (typeof data === 'number' && Number.isFinite(data)) fromJson = { reward: data };
    else if (data && typeof data === 'object' && !Array.isArray(data) && Object.keys(data).length > 0) {
      const bad = Object.entries(data).filter(([, v]) => typeof v !== 'number' || !Number.isFinite(v));
      if (bad.length)
        return { ok: false, error: `reward.json holds values that are not numbers: ${bad.map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(', ')}` };
      fromJson = data as Record<string, number>;
    } else return { ok: false, error: `reward.json holds ${JSON.stringify(data)}, not a number or an object of numbers` };
  }
  if (hasTxt) {
    const text = readFileSync(txtPath, 'utf8').trim();
    const v = text === '' ? NaN : Number(text);
    if (!Number.isFinite(v))
      return { ok: false, error: text === '' ? 'reward.txt is empty' : `reward.txt holds ${JSON.stringify(text.slice(0, 80))}, not a number` };
    fromTxt = { reward: v };
  }
  if (fromJson && fromTxt) {
    const txtValue = fromTxt['reward'];
    if (!Object.values(fromJson).every((v) => v === txtValue)) {
      return {
        ok: false,
        forgery: {
          reason: 'reward-files-disagree',
          detail: `reward.txt says ${JSON.stringify(fromTxt)} and reward.json says ${JSON.stringify(fromJson)}: a verifier writes one of them`,
        },
      };
    }
  }
  return fromJson ? { ok: true, reward: fromJson, file: 'reward.json' } : { ok: true, reward: fromTxt!, file: 'reward.txt' };
}

/** How a verdict is scored beyond exit codes: the reward every value must reach (Harbor; default 1, all-ones). */
export interface Scoring {
  rewardThreshold: number;
}

export const DEFAULT_SCORING: Scoring = { rewardThreshold: 1 };

/** A verify or certify step's scoring (`reward: { threshold }`): part of its key and of the cohort's freeze. */
export function scoringOf(spec: { reward?: { threshold?: number } }): Scoring {
  return { rewardThreshold: spec.reward?.threshold ?? DEFAULT_SCORING.rewardThreshold };
}

/** One run of a task's hidden verifier: what it runs on, where, and how it is scored. */
export interface VerifierRequest {
  task: Task;
  /** The prepared workspace (the tree with the attempt's changes, or the reference solution). */
  workspace: string;
  /** The hidden verifier files on the host (mounted at $VERIFIER_DIR), or null when the task has none. */
  verifierFiles: string | null;
  /** A host directory this run may use. */
  scratch: string;
  sandbox: VerifierSandbox;
  signal?: AbortSignal | undefined;
  /** Calibrate the canaries (certify, calibrate) or check them (verify); absent: no canary. */
  canary?: CanaryMode | undefined;
  scoring?: Scoring;
  /** The base tree, for the files a hidden test patch resets (as SWE-bench's harness does). */
  pristine?: string | null;
  /** The node this verifier runs for (its sandbox names it: `docker ps` says whose a container is). */
  node?: string;
}

/** Why the verifier could not run at all (no verdict; an infrastructure fault, never the attempt's). */
export type VerifierFault =
  /** The task writes its verdict to a file only a sandbox separates from the code under test. */
  | { reason: 'needs-isolation'; task: string; backend: BackendName }
  /** The sandbox for the verifier did not start. */
  | { reason: 'sandbox'; backend: BackendName; message: string }
  /** Something failed while it ran (the message says what). */
  | { reason: 'crashed'; message: string };

/** A fault in words, for a log, a receipt or a verdict's no-verdict reason. */
export function describeVerifierFault(f: VerifierFault): string {
  switch (f.reason) {
    case 'needs-isolation':
      return `task ${f.task} writes its verdict to ${LOGS_INSIDE}: verify it with the bubblewrap or docker backend (not ${f.backend})`;
    case 'sandbox':
      return `verifier sandbox (${f.backend}): ${f.message}`;
    case 'crashed':
      return `verifier could not run: ${f.message}`;
    default:
      return unreachable(f);
  }
}

/**
 * Runs a task's hidden verifier on a prepared workspace, in a fresh sandbox: the
 * hidden files at /verifier ($VERIFIER_DIR), the hidden patch (SWE-bench's
 * test_patch) applied first. The verdict comes from exit codes or the reward file,
 * never from text the agent could forge; FAIL_TO_PASS and PASS_TO_PASS must all hold,
 * and a test that passed must have its canary fail (verifier-canary.ts).
 * `scratch` is a host directory this call may use.
 */
// eslint-disable-next-line max-lines-per-function -- 274 lines, to be split into named phases (issue 63)
export async function runVerifier(request: VerifierRequest): Promise<Result<VerifierOutcome, VerifierFault>> {
  const { task, workspace: ws, verifierFiles, scratch, sandbox: settings, signal, canary } = request;
  const scoring = request.scoring ?? DEFAULT_SCORING;
  const sandboxed = settings.backend !== 'local';
  const noSandbox = { backend: settings.backend, isolation: 'n/a', image_id: settings.image };
  if (task.verifier.result === 'reward-file' && !sandboxed) {
    return err({ reason: 'needs-isolation', task: task.id, backend: settings.backend });
  }
  if (task.verifier.patch) {
    // As SWE-bench's harness does: the files the hidden patch touches are put back as the
    // base commit has them first, so an attempt's edits to them are discarded, not merged.
    if (request.pristine) resetToBase(ws, request.pristine, patchedFiles(task.verifier.patch));
    const applied = await gitApply(ws, task.verifier.patch);
    if (!applied.ok) {
      // The attempt's changes conflict with the hidden tests: not resolved (as SWE-bench scores it), not an infrastructure fault.
      const evidence: TestEvidence = { name: 'test_patch', kind: 'command', status: 'fail', exit_code: 1, duration_ms: 0, output_tail: tail(applied.stderr) };
      return ok({
        pass: false,
        evidence: [evidence],
        reward: null,
        canaries: {},
        forgery: null,
        sandbox: noSandbox,
        transcript: `=== test_patch did not apply\n${applied.stderr}\n`,
        canaryTargets: {},
      });
    }
  }
  const runner = task.verifier.runner;
  // With a test runner, one invocation runs every listed test; its canary is that invocation.
  const tests: [TestEvidence['kind'], string, string][] = runner
    ? [
        [
          'command',
          RUNNER_TEST,
          runnerCommand(runner.command, Object.keys(task.verifier.failToPass), task.verifier.patch ?? task.verifier.scanOnlyPatch ?? null),
        ],
      ]
    : [
        ...(task.verifier.command ? [['command', 'verifier', task.verifier.command] as [TestEvidence['kind'], string, string]] : []),
        ...Object.entries(task.verifier.failToPass).map(([n, c]) => ['fail_to_pass', n, c] as [TestEvidence['kind'], string, string]),
        ...Object.entries(task.verifier.passToPass).map(([n, c]) => ['pass_to_pass', n, c] as [TestEvidence['kind'], string, string]),
      ];
  // Canaries for the tests whose verdict is an exit code and that decide the task (not PASS_TO_PASS).
  const canaried = canary && task.verifier.result === 'exit-code' ? tests.filter(([kind]) => kind !== 'pass_to_pass') : [];
  const targets = new Map(canaried.map(([, name, command]) => [name, plantTargets(command, ws, verifierFiles)] as [string, PlantTarget[]]));
  const canaryDir = verifierFiles && [...targets.values()].some((ts) => ts.some((t) => t.where === 'verifier')) ? join(scratch, 'verifier-canary') : null;
  if (canaryDir)
    plant(
      [...targets.values()].flat().filter((t) => t.where === 'verifier'),
      ws,
      verifierFiles,
      canaryDir,
    );

  const mounts: Mount[] = [];
  if (verifierFiles && sandboxed) mounts.push({ host: verifierFiles, target: VERIFIER_INSIDE, readOnly: true });
  if (canaryDir && sandboxed) mounts.push({ host: canaryDir, target: CANARY_INSIDE, readOnly: true });
  // Harbor's test scripts expect their tests/ directory at /tests, a copy they may write into
  // (Harbor uploads one per trial): this run's own, so the hidden files stay as they are.
  if (verifierFiles && sandboxed && task.verifier.result === 'reward-file') {
    const tests = join(scratch, 'tests');
    cpSync(verifierFiles, tests, { recursive: true });
    mounts.push({ host: tests, target: '/tests', readOnly: false });
  }
  const logs = join(scratch, 'verifier-logs');
  if (task.verifier.result === 'reward-file') {
    mkdirSync(logs, { recursive: true });
    mounts.push({ host: logs, target: LOGS_INSIDE, readOnly: false });
  }
  // A runner's report file goes to pairbench's own directory, never the workspace: an attempt
  // cannot leave one there for a runner that crashes before writing its own.
  const reportDir = join(scratch, 'runner-report');
  const reportFileChannel = runner !== undefined && REPORT_CHANNEL[runner.report] === 'file';
  if (reportFileChannel) {
    mkdirSync(reportDir, { recursive: true, mode: 0o777 });
    chmodSync(reportDir, 0o777); // written by the sandbox's unprivileged uid
    if (sandboxed) mounts.push({ host: reportDir, target: REPORT_INSIDE, readOnly: false });
  }
  const reportPath = reportFileChannel && runner ? join(sandboxed ? REPORT_INSIDE : reportDir, reportName(runner)) : null;
  /** Empties the report directory before an invocation: each one's report is its own. */
  const freshReport = () => {
    if (!reportFileChannel) return;
    for (const f of readdirSync(reportDir)) rmSync(join(reportDir, f), { recursive: true, force: true });
  };
  // Where the runner runs: the sandbox's mount of the workspace, or the workspace itself.
  const workspaceInside = sandboxed ? (settings.workdir ?? '/work') : ws;
  let sandbox: Sandbox | undefined;
  try {
    const backend = await sandboxBackend(settings.backend);
    const created = await backend.create({
      workspace: ws,
      mounts,
      ...(settings.image ? { image: settings.image } : {}),
      ...(settings.workdir ? { workdir: settings.workdir } : {}),
      ...(settings.user ? { user: settings.user } : {}),
      ...(settings.hostPaths ? { system: settings.hostPaths } : {}),
      egress: { mode: settings.egress, allow: [...(settings.allow ?? [])] },
      resources: {
        ...(settings.resources?.cpus ? { cpus: settings.resources.cpus } : {}),
        ...(settings.resources?.memory_mb ? { memoryMb: settings.resources.memory_mb } : {}),
        ...(settings.resources?.pids ? { pids: settings.resources.pids } : {}),
      },
      env: {
        ...(task.environment?.verifierEnv ?? {}),
        PATH: '/usr/local/bin:/usr/bin:/bin',
        LANG: 'C.UTF-8',
        VERIFIER_DIR: verifierFiles ? (sandboxed ? VERIFIER_INSIDE : verifierFiles) : '',
        // Harbor's root verifier has HOME=/root (the docker backend makes it writable); anyone else /tmp.
        HOME: sandboxed ? (settings.user === 'root' ? '/root' : '/tmp') : scratch,
      },
      ...(request.node ? { node: request.node } : {}),
      labels: { 'pairbench.role': 'verifier' },
    });
    if (!created.ok) return err({ reason: 'sandbox', backend: settings.backend, message: created.error.message });
    sandbox = created.value;
    const transcript = new Transcript();
    const runEnv: Record<string, string> = {
      ...(runner?.env ?? {}),
      ...(runner?.testTimeoutSec ? { PAIRBENCH_TEST_TIMEOUT: String(runner.testTimeoutSec) } : {}),
    };
    const run = async (label: string, command: string, env: Record<string, string> = {}): Promise<ExecResult> => {
      const r = await sandbox!.exec(['sh', '-c', command], {
        env: { ...runEnv, ...env },
        timeoutMs: task.verifier.timeoutSec * 1000,
        ...(signal ? { signal } : {}),
      });
      transcript.add(label, command, r);
      return r;
    };
    const evidence: TestEvidence[] = [];
    let contradicted: string | null = null;
    let ambiguous: string | null = null;
    if (runner) {
      // Every listed test in one invocation; each test's status from the runner's report.
      const ids = [...Object.keys(task.verifier.failToPass), ...Object.keys(task.verifier.passToPass)];
      freshReport();
      const r = await run(
        'runner (every listed test)',
        runnerCommand(runner.command, ids, task.verifier.patch ?? task.verifier.scanOnlyPatch ?? null, reportPath),
      );
      const report = runnerReport(runner, r, reportDir, workspaceInside);
      if (report.problem) transcript.note(`no report: ${report.problem}; every listed test is unreported, so it fails`);
      // Passes that the test command's own failure contradicts were printed by the code under test: a forged verdict.
      if (report.contradiction) contradicted = report.contradiction;
      if (report.ambiguous) ambiguous = `the runner's report is ambiguous: ${report.ambiguous}`;
      const statuses = report.statuses;
      for (const [kind, list] of [
        ['fail_to_pass', task.verifier.failToPass],
        ['pass_to_pass', task.verifier.passToPass],
      ] as const) {
        for (const id of Object.keys(list)) {
          const reported = reportedStatus(statuses, id);
          if (reported === null && !report.problem)
            transcript.note(`${kind} ${id}: not in the runner's report, so it fails (its file did not load, or no test has that id)`);
          const g = graded(reported ?? undefined);
          // As SWE-bench grades: a skipped FAIL_TO_PASS test is a failure, a skipped PASS_TO_PASS one is fine.
          const status = r.timedOut && reported === null ? 'timeout' : g === 'skipped' && kind === 'fail_to_pass' ? 'fail' : g;
          evidence.push({ name: id, kind, status, reported, exit_code: r.exitCode, duration_ms: r.durationMs, output_tail: '' });
        }
      }
      // The invocation itself: its exit and output, once (the tests above share them).
      evidence.push({
        name: RUNNER_TEST,
        kind: 'command',
        status: r.timedOut ? 'timeout' : 'pass',
        exit_code: r.exitCode,
        duration_ms: r.durationMs,
        output_tail: tail(`${r.stdout}\n${r.stderr}`),
      });
    } else {
      for (const [kind, name, command] of tests) {
        const r = await run(`${kind} ${name}`, command);
        evidence.push({
          name,
          kind,
          status: r.timedOut ? 'timeout' : r.exitCode === 0 ? 'pass' : 'fail',
          exit_code: r.exitCode,
          duration_ms: r.durationMs,
          output_tail: tail(`${r.stdout}\n${r.stderr}`),
        });
      }
    }

    // The canaries, after every real test: the workspace's test files get their planted failure now.
    const canaries: Record<string, CanaryOutcome> = {};
    let forgery: Forgery | null = contradicted && !ambiguous ? { reason: 'report-contradicts-exit-code', detail: contradicted } : null;
    let unverifiable: string | null = null;
    // A runner's canary only matters when its FAIL_TO_PASS tests passed (a failing run needs none).
    const runnerPassed = evidence.filter((e) => e.kind === 'fail_to_pass').every((e) => e.status === 'pass');
    const passed = canaried.filter(([, name]) => evidence.find((e) => e.name === name)?.status === 'pass' && (name !== RUNNER_TEST || runnerPassed));
    plant(
      [
        ...new Map(
          passed
            .flatMap(([, name]) => targets.get(name)!)
            .filter((t) => t.where === 'workspace')
            .map((t) => [t.path, t]),
        ).values(),
      ],
      ws,
      null,
      null,
    );
    for (const [, name, command] of passed) {
      if (targets.get(name)!.length === 0) {
        canaries[name] = { status: 'not-planted', note: 'the command names no test file a failure can be planted into' };
        continue;
      }
      const calibration = canary?.mode === 'verify' ? canary.calibrations?.[name] : undefined;
      if (canary?.mode === 'verify' && !calibration?.calibrated) {
        // Without a calibrated canary a pass proves nothing: the code under test could have forced it.
        const note = calibration?.note ?? 'no calibration of this canary reached verify';
        canaries[name] = { status: 'uncalibrated', note };
        unverifiable ??= `test ${name} passed, but its canary is not calibrated (${note}): a pass the code under test could have forced is never scored`;
        continue;
      }
      const canaryEnv: Record<string, string> = canaryDir ? { VERIFIER_DIR: sandboxed ? CANARY_INSIDE : canaryDir } : {};
      const canaryCommand = runner
        ? runnerCommand(
            runner.command,
            [...Object.keys(task.verifier.failToPass), ...Object.keys(task.verifier.passToPass)],
            task.verifier.patch ?? task.verifier.scanOnlyPatch ?? null,
            reportPath,
          )
        : command;
      freshReport();
      const r = await run(
        `canary of ${name}`,
        sandboxed && canaryDir ? canaryCommand.replaceAll(`${VERIFIER_INSIDE}/`, `${CANARY_INSIDE}/`) : canaryCommand,
        canaryEnv,
      );
      // A runner's canary is read from its report: with a failure planted in its test files, some
      // listed test must no longer pass there (a test the report leaves out is not passing). A report
      // that still passes every one is forged, whatever the exit code says.
      const planted = runner
        ? (() => {
            const rep = runnerReport(runner, r, reportDir, workspaceInside);
            return rep.contradiction === null && Object.keys(task.verifier.failToPass).some((id) => graded(reportedStatus(rep.statuses, id)) !== 'pass');
          })()
        : r.exitCode !== 0 || r.timedOut;
      if (planted) canaries[name] = { status: 'failed-as-planted' };
      else {
        canaries[name] = { status: 'passed', calibrated: canary?.mode === 'verify' };
        if (canary?.mode === 'verify')
          forgery ??= {
            reason: 'canary-passed',
            detail: `test ${name}: with a failure planted after its checks, the command still exited 0; the exit code is forced`,
          };
      }
    }

    let reward: Record<string, number> | null = null;
    let rewardFile: RewardFile | null = null;
    let rewardError: string | null = null;
    if (task.verifier.result === 'reward-file') {
      const read = readReward(logs);
      if (read.ok) ({ reward, file: rewardFile } = read);
      else if ('forgery' in read) forgery ??= read.forgery;
      else rewardError = read.error;
    }
    const honestPass =
      task.verifier.result === 'reward-file'
        ? reward !== null && Object.values(reward).every((v) => v >= scoring.rewardThreshold)
        : evidence.length > 0 && evidence.every((e) => e.status === 'pass' || e.status === 'skipped') && evidence.some((e) => e.status === 'pass');
    // No reward at all is the verifier's failure, and so is a pass no calibrated canary stands behind:
    // no verdict (the attempt is excluded, an infrastructure-class fault), never a 0 or a 1.
    // A report with two readings decides nothing, whichever way it reads.
    const noVerdict = forgery === null ? (ambiguous ?? rewardError ?? (honestPass ? unverifiable : null)) : null;
    if (noVerdict) {
      transcript.note(`no verdict: ${noVerdict}`);
      const rs = sandbox.receipt();
      return ok({
        pass: null,
        evidence,
        reward: null,
        canaries,
        forgery: null,
        sandbox: { backend: rs.backend, isolation: rs.isolation, image_id: rs.image_id },
        transcript: transcript.text(),
        canaryTargets: Object.fromEntries(targets),
        error: noVerdict,
      });
    }
    const r = sandbox.receipt();
    return ok({
      pass: honestPass && forgery === null,
      evidence,
      reward,
      rewardFile,
      canaries,
      forgery,
      sandbox: { backend: r.backend, isolation: r.isolation, image_id: r.image_id },
      transcript: transcript.text(),
      canaryTargets: Object.fromEntries(targets),
    });
  } catch (e) {
    return err({ reason: 'crashed', message: errorMessage(e) });
  } finally {
    await sandbox?.close();
  }
}
