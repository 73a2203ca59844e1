import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gitApply } from './git-apply.js';
import { errorMessage, err, ok, type Result } from '../pipeline/result.js';
import { sandboxBackend, type BackendName } from '../sandboxes/index.js';
import type { EgressMode, ExecResult, Mount, Sandbox } from '../sandboxes/sandbox.js';
import { shellQuote } from './task-sources/swebench.js';
import type { Task } from './task.js';
import { graded, parseReport, type RunnerStatus } from './test-report.js';
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
  reason: 'canary-passed' | 'reward-files-disagree';
  detail: string;
}

export interface VerifierOutcome {
  pass: boolean;
  evidence: TestEvidence[];
  /** Harbor tasks: what the verifier wrote to /logs/verifier/reward.txt|json. */
  reward: Record<string, number> | null;
  /** Per test that passed and was canaried: what its canary did. */
  canaries: Record<string, CanaryOutcome>;
  /** Set when the verdict was forged (then `pass` is false). */
  forgery: Forgery | null;
  sandbox: { backend: string; isolation: string; image_id: string | null };
  /** Every verifier process's full output, in order: what a person reads to see why. */
  transcript: string;
  /** Per canaried test: the files its canary is planted into (found after the hidden patch is applied). */
  canaryTargets: Record<string, PlantTarget[]>;
}

export interface VerifierSandbox {
  backend: BackendName;
  egress: EgressMode;
  image: string | null;
  /** Docker: where the workspace is mounted (a task image's WORKDIR); default /work. */
  workdir?: string;
  allow?: readonly string[];
  resources?: { cpus?: number; memory_mb?: number; pids?: number };
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

/** A step's sandbox settings as the verifier takes them. */
export function verifierSandbox(s: { backend: BackendName; egress: string; image: string | null; allow: readonly string[]; resources: { cpus?: number; memory_mb?: number; pids?: number }; workdir?: string }): VerifierSandbox {
  return { backend: s.backend, egress: s.egress as EgressMode, image: s.image, allow: s.allow, resources: s.resources, ...(s.workdir ? { workdir: s.workdir } : {}) };
}

/** The evidence entry of a test runner's invocation; also the name its canary is calibrated under. */
export const RUNNER_TEST = 'runner';

/** The runner's command with `{tests}` replaced by the shell-quoted test ids. */
export function runnerCommand(command: string, ids: readonly string[]): string {
  return command.replaceAll('{tests}', ids.map(shellQuote).join(' '));
}

/** A report file the runner wrote in the workspace (JUnit XML); empty when it wrote none. */
function readReportFile(ws: string, path: string): string {
  try {
    return readFileSync(join(ws, path), 'utf8');
  } catch {
    return '';
  }
}

/** Every verifier process's command, exit and full output, capped so a runaway log cannot fill the store. */
class Transcript {
  private parts: string[] = [];
  private size = 0;
  private static readonly MAX = 16 * 1024 * 1024;

  add(label: string, command: string, r: ExecResult): void {
    const part = `=== ${label}\n$ ${command.length > 2000 ? `${command.slice(0, 2000)}... (${command.length} characters)` : command}\n--- exit ${r.timedOut ? 'timed out' : r.exitCode ?? r.signal} in ${r.durationMs} ms\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}\n`;
    if (this.size + part.length > Transcript.MAX) {
      this.parts.push(`=== ${label}: output dropped (the transcript is capped at ${Transcript.MAX} bytes)\n`);
      return;
    }
    this.parts.push(part);
    this.size += part.length;
  }

  text(): string {
    return this.parts.join('');
  }
}

function tail(s: string, n = 40): string {
  return s.trimEnd().split('\n').slice(-n).join('\n');
}

type RewardRead = { ok: true; reward: Record<string, number> | null } | { ok: false; forgery: Forgery };

/**
 * The Harbor reward. The verifier writes one of reward.txt / reward.json; code run by
 * the verifier can write the other. Two files that disagree are a forgery, not a choice.
 */
function readReward(dir: string): RewardRead {
  const txtPath = join(dir, 'reward.txt');
  const jsonPath = join(dir, 'reward.json');
  let fromJson: Record<string, number> | null = null;
  let fromTxt: Record<string, number> | null = null;
  if (existsSync(jsonPath)) {
    try {
      const data = JSON.parse(readFileSync(jsonPath, 'utf8')) as unknown;
      if (data && typeof data === 'object' && !Array.isArray(data)) fromJson = Object.fromEntries(Object.entries(data).filter(([, v]) => typeof v === 'number')) as Record<string, number>;
    } catch {
      fromJson = null;
    }
  }
  if (existsSync(txtPath)) {
    const v = Number(readFileSync(txtPath, 'utf8').trim());
    fromTxt = Number.isFinite(v) ? { reward: v } : null;
  }
  if (existsSync(jsonPath) && existsSync(txtPath)) {
    const jsonValues = Object.values(fromJson ?? {});
    const txtValue = fromTxt?.['reward'];
    const agree = fromJson !== null && fromTxt !== null && jsonValues.length > 0 && jsonValues.every((v) => v === txtValue);
    if (!agree) {
      return { ok: false, forgery: { reason: 'reward-files-disagree', detail: `reward.txt says ${JSON.stringify(fromTxt)} and reward.json says ${JSON.stringify(fromJson)}: a verifier writes one of them` } };
    }
  }
  return { ok: true, reward: fromJson ?? fromTxt };
}

/**
 * Runs a task's hidden verifier on a prepared workspace, in a fresh sandbox: the
 * hidden files at /verifier ($VERIFIER_DIR), the hidden patch (SWE-bench's
 * test_patch) applied first. The verdict comes from exit codes or the reward file,
 * never from text the agent could forge; FAIL_TO_PASS and PASS_TO_PASS must all hold,
 * and a test that passed must have its canary fail (verifier-canary.ts).
 * `scratch` is a host directory this call may use.
 */
export async function runVerifier(
  task: Task,
  ws: string,
  verifierFiles: string | null,
  scratch: string,
  settings: VerifierSandbox,
  signal?: AbortSignal,
  canary?: CanaryMode,
): Promise<Result<VerifierOutcome, string>> {
  const sandboxed = settings.backend !== 'local';
  const noSandbox = { backend: settings.backend, isolation: 'n/a', image_id: settings.image };
  if (task.verifier.result === 'reward-file' && !sandboxed) {
    return err(`task ${task.id} writes its verdict to ${LOGS_INSIDE}: verify it with the bubblewrap or docker backend`);
  }
  if (task.verifier.patch) {
    const applied = await gitApply(ws, task.verifier.patch);
    if (!applied.ok) {
      // The attempt's changes conflict with the hidden tests: not resolved (as SWE-bench scores it), not an infrastructure fault.
      const evidence: TestEvidence = { name: 'test_patch', kind: 'command', status: 'fail', exit_code: 1, duration_ms: 0, output_tail: tail(applied.stderr) };
      return ok({ pass: false, evidence: [evidence], reward: null, canaries: {}, forgery: null, sandbox: noSandbox, transcript: `=== test_patch did not apply\n${applied.stderr}\n`, canaryTargets: {} });
    }
  }
  const runner = task.verifier.runner;
  // With a test runner, one invocation runs every listed test; its canary is that invocation.
  const tests: [TestEvidence['kind'], string, string][] = runner
    ? [['command', RUNNER_TEST, runnerCommand(runner.command, Object.keys(task.verifier.failToPass))]]
    : [
        ...(task.verifier.command ? [['command', 'verifier', task.verifier.command] as [TestEvidence['kind'], string, string]] : []),
        ...Object.entries(task.verifier.failToPass).map(([n, c]) => ['fail_to_pass', n, c] as [TestEvidence['kind'], string, string]),
        ...Object.entries(task.verifier.passToPass).map(([n, c]) => ['pass_to_pass', n, c] as [TestEvidence['kind'], string, string]),
      ];
  // Canaries for the tests whose verdict is an exit code and that decide the task (not PASS_TO_PASS).
  const canaried = canary && task.verifier.result === 'exit-code' ? tests.filter(([kind]) => kind !== 'pass_to_pass') : [];
  const targets = new Map(canaried.map(([, name, command]) => [name, plantTargets(command, ws, verifierFiles)] as [string, PlantTarget[]]));
  const canaryDir = verifierFiles && [...targets.values()].some((ts) => ts.some((t) => t.where === 'verifier')) ? join(scratch, 'verifier-canary') : null;
  if (canaryDir) plant([...targets.values()].flat().filter((t) => t.where === 'verifier'), ws, verifierFiles, canaryDir);

  const mounts: Mount[] = [];
  if (verifierFiles && sandboxed) mounts.push({ host: verifierFiles, target: VERIFIER_INSIDE, readOnly: true });
  if (canaryDir && sandboxed) mounts.push({ host: canaryDir, target: CANARY_INSIDE, readOnly: true });
  // Harbor's test scripts expect their tests/ directory at /tests.
  if (verifierFiles && sandboxed && task.verifier.result === 'reward-file') mounts.push({ host: verifierFiles, target: '/tests', readOnly: true });
  const logs = join(scratch, 'verifier-logs');
  if (task.verifier.result === 'reward-file') {
    mkdirSync(logs, { recursive: true });
    mounts.push({ host: logs, target: LOGS_INSIDE, readOnly: false });
  }
  let sandbox: Sandbox | undefined;
  try {
    const backend = await sandboxBackend(settings.backend);
    const created = await backend.create({
      workspace: ws,
      mounts,
      ...(settings.image ? { image: settings.image } : {}),
      ...(settings.workdir ? { workdir: settings.workdir } : {}),
      egress: { mode: settings.egress, allow: [...(settings.allow ?? [])] },
      resources: { ...(settings.resources?.cpus ? { cpus: settings.resources.cpus } : {}), ...(settings.resources?.memory_mb ? { memoryMb: settings.resources.memory_mb } : {}), ...(settings.resources?.pids ? { pids: settings.resources.pids } : {}) },
      env: { ...(task.environment?.verifierEnv ?? {}), PATH: '/usr/local/bin:/usr/bin:/bin', LANG: 'C.UTF-8', VERIFIER_DIR: verifierFiles ? (sandboxed ? VERIFIER_INSIDE : verifierFiles) : '', HOME: sandboxed ? '/tmp' : scratch },
      labels: { 'pairbench.role': 'verifier' },
    });
    if (!created.ok) return err(`verifier sandbox: ${created.error.message}`);
    sandbox = created.value;
    const transcript = new Transcript();
    const runEnv: Record<string, string> = runner?.testTimeoutSec ? { PAIRBENCH_TEST_TIMEOUT: String(runner.testTimeoutSec) } : {};
    const run = async (label: string, command: string, env: Record<string, string> = {}): Promise<ExecResult> => {
      const r = await sandbox!.exec(['sh', '-c', command], { env: { ...runEnv, ...env }, timeoutMs: task.verifier.timeoutSec * 1000, ...(signal ? { signal } : {}) });
      transcript.add(label, command, r);
      return r;
    };
    const evidence: TestEvidence[] = [];
    if (runner) {
      // Every listed test in one invocation; each test's status from the runner's report.
      const ids = [...Object.keys(task.verifier.failToPass), ...Object.keys(task.verifier.passToPass)];
      const r = await run('runner (every listed test)', runnerCommand(runner.command, ids));
      const report = runner.reportFile ? readReportFile(ws, runner.reportFile) : `${r.stdout}\n${r.stderr}`;
      const statuses = parseReport(runner.report, report);
      for (const [kind, list] of [['fail_to_pass', task.verifier.failToPass], ['pass_to_pass', task.verifier.passToPass]] as const) {
        for (const id of Object.keys(list)) {
          const reported = statuses.get(id) ?? null;
          const status = r.timedOut && reported === null ? 'timeout' : graded(reported ?? undefined);
          evidence.push({ name: id, kind, status, reported, exit_code: r.exitCode, duration_ms: r.durationMs, output_tail: '' });
        }
      }
      // The invocation itself: its exit and output, once (the tests above share them).
      evidence.push({ name: RUNNER_TEST, kind: 'command', status: r.timedOut ? 'timeout' : 'pass', exit_code: r.exitCode, duration_ms: r.durationMs, output_tail: tail(`${r.stdout}\n${r.stderr}`) });
    } else {
      for (const [kind, name, command] of tests) {
        const r = await run(`${kind} ${name}`, command);
        evidence.push({ name, kind, status: r.timedOut ? 'timeout' : r.exitCode === 0 ? 'pass' : 'fail', exit_code: r.exitCode, duration_ms: r.durationMs, output_tail: tail(`${r.stdout}\n${r.stderr}`) });
      }
    }

    // The canaries, after every real test: the workspace's test files get their planted failure now.
    const canaries: Record<string, CanaryOutcome> = {};
    let forgery: Forgery | null = null;
    const passed = canaried.filter(([, name]) => evidence.find((e) => e.name === name)?.status === 'pass');
    plant([...new Map(passed.flatMap(([, name]) => targets.get(name)!).filter((t) => t.where === 'workspace').map((t) => [t.path, t])).values()], ws, null, null);
    for (const [, name, command] of passed) {
      if (targets.get(name)!.length === 0) {
        canaries[name] = { status: 'not-planted', note: 'the command names no test file a failure can be planted into' };
        continue;
      }
      const calibration = canary?.mode === 'verify' ? canary.calibrations?.[name] : undefined;
      if (canary?.mode === 'verify' && !calibration?.calibrated) {
        canaries[name] = { status: 'uncalibrated', note: calibration?.note ?? 'no certify step upstream calibrated this canary' };
        continue;
      }
      const canaryEnv: Record<string, string> = canaryDir ? { VERIFIER_DIR: sandboxed ? CANARY_INSIDE : canaryDir } : {};
      const r = await run(`canary of ${name}`, sandboxed && canaryDir ? command.replaceAll(`${VERIFIER_INSIDE}/`, `${CANARY_INSIDE}/`) : command, canaryEnv);
      // A runner's canary must also show in its report: some listed test no longer passes.
      const reportedFailure = runner ? [...parseReport(runner.report, runner.reportFile ? readReportFile(ws, runner.reportFile) : `${r.stdout}\n${r.stderr}`).values()].some((st) => graded(st) === 'fail') : false;
      if (r.exitCode !== 0 || r.timedOut || reportedFailure) canaries[name] = { status: 'failed-as-planted' };
      else {
        canaries[name] = { status: 'passed', calibrated: canary?.mode === 'verify' };
        if (canary?.mode === 'verify') forgery ??= { reason: 'canary-passed', detail: `test ${name}: with a failure planted after its checks, the command still exited 0; the exit code is forced` };
      }
    }

    let reward: Record<string, number> | null = null;
    if (task.verifier.result === 'reward-file') {
      const read = readReward(logs);
      if (read.ok) reward = read.reward;
      else forgery ??= read.forgery;
    }
    const honestPass =
      task.verifier.result === 'reward-file'
        ? reward !== null && Object.values(reward).length > 0 && Object.values(reward).every((v) => v >= 1)
        : evidence.length > 0 && evidence.every((e) => e.status === 'pass' || e.status === 'skipped') && evidence.some((e) => e.status === 'pass');
    const r = sandbox.receipt();
    return ok({ pass: honestPass && forgery === null, evidence, reward, canaries, forgery, sandbox: { backend: r.backend, isolation: r.isolation, image_id: r.image_id }, transcript: transcript.text(), canaryTargets: Object.fromEntries(targets) });
  } catch (e) {
    return err(`verifier could not run: ${errorMessage(e)}`);
  } finally {
    await sandbox?.close();
  }
}
