import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gitApply } from './git-apply.js';
import { errorMessage, err, ok, type Result } from '../pipeline/result.js';
import { sandboxBackend, type BackendName } from '../sandboxes/index.js';
import type { EgressMode, ExecResult, Mount, Sandbox } from '../sandboxes/sandbox.js';
import type { Task } from './task.js';
import { openForSandbox } from './workspace.js';

export interface TestEvidence {
  name: string;
  kind: 'command' | 'fail_to_pass' | 'pass_to_pass';
  status: 'pass' | 'fail' | 'timeout';
  exit_code: number | null;
  duration_ms: number;
  output_tail: string;
}

export interface VerifierOutcome {
  pass: boolean;
  evidence: TestEvidence[];
  /** Harbor tasks: what the verifier wrote to /logs/verifier/reward.txt|json. */
  reward: Record<string, number> | null;
  sandbox: { backend: string; isolation: string; image_id: string | null };
}

export interface VerifierSandbox {
  backend: BackendName;
  egress: EgressMode;
  image: string | null;
  allow?: readonly string[];
  resources?: { cpus?: number; memory_mb?: number; pids?: number };
}

const VERIFIER_INSIDE = '/verifier';
const LOGS_INSIDE = '/logs/verifier';

function tail(s: string, n = 40): string {
  return s.trimEnd().split('\n').slice(-n).join('\n');
}

function readReward(dir: string): Record<string, number> | null {
  const txt = join(dir, 'reward.txt');
  const json = join(dir, 'reward.json');
  if (existsSync(json)) {
    const data = JSON.parse(readFileSync(json, 'utf8')) as Record<string, unknown>;
    return Object.fromEntries(Object.entries(data).filter(([, v]) => typeof v === 'number')) as Record<string, number>;
  }
  if (existsSync(txt)) {
    const v = Number(readFileSync(txt, 'utf8').trim());
    return Number.isFinite(v) ? { reward: v } : null;
  }
  return null;
}

/**
 * Runs a task's hidden verifier on a prepared workspace, in a fresh sandbox: the
 * hidden files at /verifier ($VERIFIER_DIR), the hidden patch (SWE-bench's
 * test_patch) applied first. The verdict comes from exit codes or the reward file,
 * never from text the agent could forge; FAIL_TO_PASS and PASS_TO_PASS must all hold.
 * `scratch` is a host directory this call may use.
 */
export async function runVerifier(task: Task, ws: string, verifierFiles: string | null, scratch: string, settings: VerifierSandbox, signal?: AbortSignal): Promise<Result<VerifierOutcome, string>> {
  const sandboxed = settings.backend !== 'local';
  if (task.verifier.result === 'reward-file' && !sandboxed) {
    return err(`task ${task.id} writes its verdict to ${LOGS_INSIDE}: verify it with the bubblewrap or docker backend`);
  }
  if (task.verifier.patch) {
    const applied = await gitApply(ws, task.verifier.patch);
    if (!applied.ok) {
      // The attempt's changes conflict with the hidden tests: not resolved (as SWE-bench scores it), not an infrastructure fault.
      const evidence: TestEvidence = { name: 'test_patch', kind: 'command', status: 'fail', exit_code: 1, duration_ms: 0, output_tail: tail(applied.stderr) };
      return ok({ pass: false, evidence: [evidence], reward: null, sandbox: { backend: settings.backend, isolation: 'n/a', image_id: settings.image } });
    }
  }
  openForSandbox(ws);
  const mounts: Mount[] = [];
  if (verifierFiles && sandboxed) mounts.push({ host: verifierFiles, target: VERIFIER_INSIDE, readOnly: true });
  // Harbor's test scripts expect their tests/ directory at /tests.
  if (verifierFiles && sandboxed && task.verifier.result === 'reward-file') mounts.push({ host: verifierFiles, target: '/tests', readOnly: true });
  const logs = join(scratch, 'verifier-logs');
  if (task.verifier.result === 'reward-file') {
    mkdirSync(logs, { recursive: true });
    openForSandbox(logs);
    mounts.push({ host: logs, target: LOGS_INSIDE, readOnly: false });
  }
  let sandbox: Sandbox | undefined;
  try {
    const backend = await sandboxBackend(settings.backend);
    const created = await backend.create({
      workspace: ws,
      mounts,
      ...(settings.image ? { image: settings.image } : {}),
      egress: { mode: settings.egress, allow: [...(settings.allow ?? [])] },
      resources: { ...(settings.resources?.cpus ? { cpus: settings.resources.cpus } : {}), ...(settings.resources?.memory_mb ? { memoryMb: settings.resources.memory_mb } : {}), ...(settings.resources?.pids ? { pids: settings.resources.pids } : {}) },
      env: { PATH: '/usr/local/bin:/usr/bin:/bin', LANG: 'C.UTF-8', VERIFIER_DIR: verifierFiles ? (sandboxed ? VERIFIER_INSIDE : verifierFiles) : '', HOME: sandboxed ? '/tmp' : scratch },
      labels: { 'pairbench.role': 'verifier' },
    });
    if (!created.ok) return err(`verifier sandbox: ${created.error.message}`);
    sandbox = created.value;
    const tests: [TestEvidence['kind'], string, string][] = [
      ...(task.verifier.command ? [['command', 'verifier', task.verifier.command] as [TestEvidence['kind'], string, string]] : []),
      ...Object.entries(task.verifier.failToPass).map(([n, c]) => ['fail_to_pass', n, c] as [TestEvidence['kind'], string, string]),
      ...Object.entries(task.verifier.passToPass).map(([n, c]) => ['pass_to_pass', n, c] as [TestEvidence['kind'], string, string]),
    ];
    const evidence: TestEvidence[] = [];
    for (const [kind, name, command] of tests) {
      const r: ExecResult = await sandbox.exec(['sh', '-c', command], { timeoutMs: task.verifier.timeoutSec * 1000, ...(signal ? { signal } : {}) });
      evidence.push({ name, kind, status: r.timedOut ? 'timeout' : r.exitCode === 0 ? 'pass' : 'fail', exit_code: r.exitCode, duration_ms: r.durationMs, output_tail: tail(`${r.stdout}\n${r.stderr}`) });
    }
    const reward = task.verifier.result === 'reward-file' ? readReward(logs) : null;
    const pass =
      task.verifier.result === 'reward-file'
        ? reward !== null && Object.values(reward).length > 0 && Object.values(reward).every((v) => v >= 1)
        : evidence.length > 0 && evidence.every((e) => e.status === 'pass');
    const r = sandbox.receipt();
    return ok({ pass, evidence, reward, sandbox: { backend: r.backend, isolation: r.isolation, image_id: r.image_id } });
  } catch (e) {
    return err(`verifier could not run: ${errorMessage(e)}`);
  } finally {
    await sandbox?.close();
  }
}
