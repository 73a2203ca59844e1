import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AttemptContext } from '../agents/adapter.js';
import { oracleAgent } from '../agents/simple.js';
import { err, errorMessage, ok, type Result } from '../pipeline/result.js';
import type { ExecutionContext } from '../pipeline/step-kind.js';
import type { OutputManifest } from '../pipeline/store/action-cache.js';
import { sandboxBackend } from '../sandboxes/index.js';
import { networkNote } from './environment.js';
import type { sandboxOf } from './run.js';
import type { Task } from './task.js';
import type { CanaryCalibrations, CanaryRecord } from './verifier-canary.js';
import { jsonArtifact } from '../pipeline/artifact.js';
import { stepOutputProblems } from './step-output-checks.js';
import type { VerifierOutcome } from './verifier-run.js';

/**
 * Canary calibration, shared by certify (which calibrates as part of its discrimination check)
 * and calibrate (a verify step's own, for tasks no certify step covers): the reference solution
 * applied to the starting tree, the verifier run once with every canary planted; each must fail.
 */

/** The output that carries a task's calibrations (certify's and calibrate's): what verify reads. */
export const CANARY = jsonArtifact<CanaryRecord, 'canary.json'>(
  'canary.json',
  "each deciding test's canary, calibrated on the reference solution (verify trusts only a calibrated one)",
  stepOutputProblems('CanaryRecord'),
);

/** Applies the reference solution through the oracle agent itself (the same path its attempts take). */
/** Applies the reference solution to ws; its value is what the solution changed outside the workspace (where the sandbox can tell). */
export async function applySolution(task: Task, ws: string, settings: ReturnType<typeof sandboxOf> & { workdir?: string }): Promise<Result<string[], string>> {
  if (!task.solution.patch && !task.solution.script) return err('the task has no reference solution (solution.patch or solution.script)');
  const sandboxed = settings.backend !== 'local';
  const actx: AttemptContext = {
    prompt: task.prompt,
    workdir: sandboxed ? (settings.workdir ?? '/work') : ws,
    model: 'none',
    flags: [],
    limits: { turns: 1, wallSeconds: 600 },
    home: '/tmp',
    sandboxed,
    solution: task.solution,
  };
  try {
    await oracleAgent.beforeRun?.(actx, ws);
  } catch (e) {
    return err(errorMessage(e));
  }
  const inv = oracleAgent.invocation(actx);
  if (!inv || !task.solution.script) return ok([]); // a patch is applied on the host
  const backend = await sandboxBackend(settings.backend);
  const created = await backend.create({
    workspace: ws,
    mounts: inv.mounts,
    ...(settings.image ? { image: settings.image } : {}),
    ...(settings.workdir ? { workdir: settings.workdir } : {}),
    egress: { mode: settings.egress },
    env: { PATH: '/usr/local/bin:/usr/bin:/bin', HOME: '/tmp', ...inv.env },
  });
  if (!created.ok) return err(created.error.message);
  try {
    const r = await created.value.exec(inv.argv, { timeoutMs: 600_000 });
    if (r.exitCode === 0) return ok((await created.value.changedOutsideWorkspace?.()) ?? []);
    const note = networkNote(task, settings.egress, `${r.stdout}\n${r.stderr}`);
    // Harbor's agent may write anywhere in its live container; here only the workspace and /tmp are writable.
    const readOnly = /read-only file system/i.test(r.stderr)
      ? 'the reference solution writes outside the workspace, where the sandbox is read-only: pairbench verifies the workspace in a fresh container, so state made elsewhere would never reach the verifier (build it into the image, or have the tests make it)'
      : null;
    return err(
      `the reference script exited ${r.exitCode}: ${r.stderr.trim().slice(-400)}${[note, readOnly]
        .filter(Boolean)
        .map((n) => ` -- ${n}`)
        .join('')}`,
    );
  } finally {
    await created.value.close();
  }
}

/** A canary is calibrated when, with the reference solution, its test passed and its canary failed. */
export function calibrationsOf(outcome: VerifierOutcome): CanaryCalibrations {
  const out: CanaryCalibrations = {};
  for (const [name, t] of Object.entries(outcome.canaryTargets)) {
    const seen = outcome.canaries[name];
    const calibrated = seen?.status === 'failed-as-planted';
    const note = calibrated
      ? 'fails with the reference solution, as it must'
      : seen?.status === 'passed'
        ? 'passes even with the reference solution: the verifier exits 0 before the planted failure runs'
        : seen?.status === 'not-planted'
          ? seen.note
          : 'the test did not pass with the reference solution';
    out[name] = { targets: t, calibrated, note };
  }
  return out;
}

/** The canaried tests whose canary cannot be trusted even on the reference solution, with why. */
export function unusableCanaries(calibrations: CanaryCalibrations): string[] {
  return Object.entries(calibrations)
    .filter(([, c]) => !c.calibrated && c.targets.length > 0)
    .map(([name, c]) => `${name}: ${c.note}`);
}

/** Writes canary.json into the node's output directory; returns the entry. */
export function writeCanaries(ctx: ExecutionContext, task: string, tests: CanaryCalibrations): OutputManifest {
  const out = join(ctx.workDir, 'canary-out');
  mkdirSync(out, { recursive: true });
  const record: CanaryRecord = { schema_version: 1, task, tests };
  writeFileSync(join(out, CANARY.name), JSON.stringify(record, null, 2) + '\n');
  return { [CANARY.name]: ctx.artifacts.putPath(join(out, CANARY.name)) };
}
