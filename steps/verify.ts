import { join, relative } from 'node:path';
import type { JsonEncodable } from '../pipeline/canonical-json.js';
import type { StepConfig } from '../pipeline/config/load.js';
import { err, errorMessage, ok, type Result } from '../pipeline/result.js';
import { produces, type Checkpoint, type ExecutionContext, type FileInputSpec, type GraphNode, type StepKind } from '../pipeline/step-kind.js';
import { canonicalJson } from '../pipeline/canonical-json.js';
import { calibrateStep } from './calibrate.js';
import { CANARY } from './canary-calibration.js';
import { certifyStep } from './certify.js';
import { checkTasks, taskMatrixSource, taskOf } from './agent-step-config.js';
import { ENVIRONMENT_OUTPUTS, environmentStep, startingPoint, verifierPhase } from './environment.js';
import { materializeStep, TREE } from './materialize.js';
import { runStep, sandboxFor, sandboxOf } from './run.js';
import { describeVerifierFault, runVerifier, scoringOf, verifierSandbox, type TestEvidence, type VerifierOutcome } from './verifier-run.js';
import { VERIFIER_OWNED, verifierOwned } from './verifier-owned.js';
import { applyChanges, CHANGED, CHANGES, type WorkspaceChanges } from './workspace.js';
import { NOT_RUN, passedNotRun } from './not-run.js';
import { specOf, type SpecByKind } from './step-spec.js';
import { annotateVerifierEnvironment } from './host-paths.js';
import { artifact, jsonArtifact, optional, parseJsonArtifact, putFileOutput, readJsonArtifact } from '../pipeline/artifact.js';
import { stepOutputProblems } from './step-output-checks.js';
import type { VerifierVerdict } from './verifier-verdict.js';
import type { CanaryCalibrations } from './verifier-canary.js';
import type { Task } from './task.js';
import { combineRuns, runsOf, type VerifierRuns } from './verifier-repeats.js';

type VerifySpec = SpecByKind['verify'];

const spec = (step: StepConfig): VerifySpec => specOf(step, 'verify');

/** How many times the verifier runs on each attempt (the schema's default when not given). */
export const DEFAULT_VERIFY_REPEATS = 3;
const repeatsOf = (s: VerifySpec): number => s.repeats ?? DEFAULT_VERIFY_REPEATS;

/** Whether two steps read the same task source (a task id names the same task in both). */
function sameTasks(a: StepConfig, b: StepConfig): boolean {
  const tasksOf = (s: StepConfig) => canonicalJson((s.spec as { tasks?: unknown }).tasks ?? null);
  return tasksOf(a) === tasksOf(b);
}
export const VERIFIER_VERDICT = jsonArtifact<VerifierVerdict, 'verdict.json'>(
  'verdict.json',
  "the hidden verifier's verdict (pass, fail or an infrastructure fault)",
  stepOutputProblems('VerifierVerdict'),
);
export const EVIDENCE = artifact('evidence.json', 'the tests that ran and what each gave');
export const VERIFIER_LOG = artifact('verifier.log', "the verifier's output");

/**
 * `verify` (task x arm x rep): the attempt's changes applied to a fresh copy of the
 * tree, in a fresh sandbox the agent never saw, with the hidden verifier files added.
 * The verdict comes from exit codes only (never from text the agent could forge);
 * FAIL_TO_PASS and PASS_TO_PASS must both hold.
 */
/** The attempt's changes without the verifier's own files (tests, runner settings, manifests), which stay as the pristine tree has them. */
function withoutVerifierFiles(task: Task, changes: WorkspaceChanges): { applied: WorkspaceChanges; keptPristine: string[] } {
  const owned = verifierOwned(task);
  return {
    keptPristine: [...Object.keys(changes.written), ...changes.deleted].filter(owned).sort(),
    applied: {
      ...changes,
      written: Object.fromEntries(Object.entries(changes.written).filter(([p]) => !owned(p))),
      deleted: changes.deleted.filter((p) => !owned(p)),
    },
  };
}

/**
 * The canaries certify (or the step's own calibrate node) calibrated with the reference solution:
 * from a node whose kind declares them, never from another output of that name (a command's outs).
 */
function calibrationsOf(ctx: ExecutionContext): Result<CanaryCalibrations | null, string> {
  const calibrators = new Set(ctx.node.upstream.filter((u) => produces(u, CANARY)).map((u) => u.id));
  const withCanaries = ctx.upstream.find((u) => calibrators.has(u.node) && u.outputs[CANARY.name]);
  if (!withCanaries) return ok(null);
  const canaries = readJsonArtifact(CANARY, withCanaries.outputs, (d) => ctx.artifacts.read(d), withCanaries.node)!;
  return canaries.ok ? ok(canaries.value.tests) : err(canaries.error);
}

export const verifyStep: StepKind = {
  name: 'verify',
  draws: true,
  matrixSource: taskMatrixSource,
  title: { one: 'verification', many: 'verifications' },
  outputs: () => [VERIFIER_VERDICT, EVIDENCE, VERIFIER_LOG, NOT_RUN],
  sandboxed: true,
  // The image a per-task template names is part of the key (as the engine has it now).
  annotate: annotateVerifierEnvironment,
  // 5: the verifier runs `repeats` times (default 3), each in a fresh sandbox; runs that disagree are no verdict (flaky-verifier).
  // 4: a pass no calibrated canary stands behind is no verdict (its canaries are calibrated by certify, needed or not, or by calibrate).
  // 3: one test-runner invocation per verification (verifier.runner); the full verifier output kept (verifier.log).
  // 2: verifier-owned files are taken from the pristine tree; canaries.
  version: 5,
  check: (step) => checkTasks(step, { hostPaths: true }),
  // The canaries of its tasks are calibrated by their certify step whatever needs says; a task
  // no certify step covers gets a calibrate node of its own (checkpoints, below).
  impliedNeeds: (step, steps) => [...steps.values()].filter((s) => s.kind === certifyStep.name && sameTasks(s, step)).map((s) => s.name),
  checkpoints(step, nodesOf): Checkpoint[] {
    const byTask = new Map<string, GraphNode[]>();
    for (const n of nodesOf(step.name)) {
      if (n.kind !== verifyStep || n.matrix['task'] === undefined) continue;
      byTask.set(n.matrix['task'], [...(byTask.get(n.matrix['task']) ?? []), n]);
    }
    const out: Checkpoint[] = [];
    for (const [task, nodes] of byTask) {
      const calibrated = (n: GraphNode) => n.upstream.some((u) => produces(u, CANARY));
      if (nodes.every(calibrated)) continue;
      // Calibrated on the tree the task starts from: the tree producer its verify nodes read.
      const trees = [...new Set(nodes.flatMap((n) => n.upstream.filter((u) => produces(u, TREE) && u.matrix['task'] === task)))];
      if (!trees.length) continue;
      out.push({
        name: `${task}/canary`,
        kind: calibrateStep,
        matrix: { task },
        after: trees,
        before: nodes.filter((n) => !calibrated(n)),
      });
    }
    return out;
  },
  keyConfig(node): JsonEncodable {
    const task = taskOf(node);
    return {
      repeats: repeatsOf(spec(node.step)),
      command: task.verifier.command,
      fail_to_pass: task.verifier.failToPass,
      pass_to_pass: task.verifier.passToPass,
      timeout: task.verifier.timeoutSec,
      patch: task.verifier.patch,
      result: task.verifier.result,
      runner: task.verifier.runner ?? null,
      // The reward every value must reach (Harbor tasks): part of the key and of the cohort's freeze.
      scoring: scoringOf(spec(node.step)),
      ...(spec(node.step).strict_verifier ? { strict_verifier: true } : {}),
      ...(task.environment ? { environment: task.environment } : {}),
      ...(task.workdir ? { workdir: task.workdir } : {}),
      // What the verifier owns (taken from the pristine tree) depends on these.
      owned: [...VERIFIER_OWNED, ...(task.verifier.owned ?? [])],
      allowed_paths: task.allowedPaths,
      sandbox: sandboxOf(spec(node.step)),
    };
  },
  fileInputs(node): FileInputSpec[] {
    const task = taskOf(node);
    if (!task.verifier.filesDir) return [];
    return [{ pattern: relative(node.step.rootDir, task.verifier.filesDir), field: ['tasks'] }];
  },
  selectUpstream: (_node, upstream) =>
    upstream.kind === materializeStep
      ? [TREE.name]
      : upstream.kind === environmentStep
        ? ENVIRONMENT_OUTPUTS
        : upstream.kind === runStep
          ? [optional(CHANGES), optional(CHANGED), optional(NOT_RUN)]
          : produces(upstream, CANARY)
            ? [CANARY.name]
            : undefined,
  describeConfigField: (path) =>
    path[0] === 'command' || path[0] === 'fail_to_pass' || path[0] === 'pass_to_pass' ? `verifier ${path.join('.')}` : path.join('.'),

  async execute(ctx: ExecutionContext) {
    const notRun = passedNotRun(ctx);
    if (notRun) return ok(notRun);
    const task = taskOf(ctx.node);
    // A task with its own environment is verified in its image, on the tree its attempts started from.
    const start = startingPoint(ctx);
    if (!start.ok) return start;
    const point = start.value;
    const configured = sandboxFor(ctx.node, spec(ctx.node.step));
    if (!configured.ok) return err({ reason: 'infra', message: configured.error });
    const settings = verifierPhase(configured.value, point.environment, task, spec(ctx.node.step).strict_verifier === true);
    const run = ctx.upstream.find((u) => u.outputs[CHANGES.name]);
    if (!run) return err({ reason: 'internal', message: 'verify needs a run upstream (changes)' });
    if (point.environment && settings.backend !== 'docker') {
      return err({
        reason: 'refused',
        message: `task ${task.id} is verified in the image its environment step built: give step ${ctx.node.step.name} sandbox: { backend: docker }`,
      });
    }
    const read = parseJsonArtifact(CHANGES, ctx.artifacts.read(run.outputs[CHANGES.name]!.digest).toString('utf8'), run.node);
    if (!read.ok) return err({ reason: 'store-error', message: read.error });
    const changes = read.value;
    const changedDir = join(ctx.workDir, CHANGED.name);
    ctx.artifacts.materialize(run.outputs[CHANGED.name]!, changedDir);
    const { applied, keptPristine } = withoutVerifierFiles(task, changes);
    // Each run of the verifier gets a fresh copy of the tree with the changes applied (it may write there).
    const freshWorkspace = (run: number) => {
      const ws = join(ctx.workDir, run === 0 ? 'ws' : `ws-${run + 1}`);
      ctx.artifacts.materialize(point.tree, ws);
      applyChanges(applied, changedDir, ws);
      return ws;
    };
    let ws: string;
    try {
      ws = freshWorkspace(0);
    } catch (e) {
      // An attempt whose changes would write outside the tree is scored, not applied: it fails.
      return writeVerdict(ctx, {
        task: task.id,
        pass: false,
        evidence: [{ name: 'changes', kind: 'command', status: 'fail', exit_code: null, duration_ms: 0, output_tail: errorMessage(e) }],
        sandbox: { backend: settings.backend, isolation: 'n/a', image_id: settings.image },
      });
    }

    let verifierHost: string | null = null;
    const staged = ctx.files[0];
    if (staged) {
      verifierHost = join(ctx.workDir, 'verifier');
      // Read-only inside, and readable by the sandbox user: materialized files are 0644/0755.
      ctx.artifacts.materialize(staged.entry, verifierHost);
    }
    const calibrations = calibrationsOf(ctx);
    if (!calibrations.ok) return err({ reason: 'store-error', message: calibrations.error });
    // The pristine tree, for the files a hidden test patch resets to base (as SWE-bench's harness does).
    let pristine: string | null = null;
    if (task.verifier.patch) {
      pristine = join(ctx.workDir, 'pristine');
      ctx.artifacts.materialize(point.tree, pristine);
    }
    // Verdict stability: `repeats` runs, each in a fresh sandbox on a fresh copy (no agent cost).
    const repeats = repeatsOf(spec(ctx.node.step));
    const outcomes: VerifierOutcome[] = [];
    for (let i = 0; i < repeats; i++) {
      const outcome = await runVerifier({
        task,
        workspace: i === 0 ? ws : freshWorkspace(i),
        verifierFiles: verifierHost,
        scratch: i === 0 ? ctx.workDir : join(ctx.workDir, `run-${i + 1}`),
        sandbox: verifierSandbox(settings),
        signal: ctx.signal,
        node: ctx.node.id,
        canary: { mode: 'verify', calibrations: calibrations.value },
        scoring: scoringOf(spec(ctx.node.step)),
        pristine,
      });
      if (!outcome.ok) {
        const fault = describeVerifierFault(outcome.error);
        // The verifier could not run: an infrastructure fault. No verdict (audit excludes the
        // attempt), and not cached, so the next run tries again.
        ctx.doNotCache(`infrastructure error: ${fault}`);
        return writeVerdict(ctx, {
          task: task.id,
          pass: null,
          evidence: [{ name: 'verifier', kind: 'command', status: 'fail', exit_code: null, duration_ms: 0, output_tail: fault }],
          sandbox: { backend: settings.backend, isolation: 'n/a', image_id: settings.image },
          noVerdict: `the verifier could not run: ${fault}`,
        });
      }
      outcomes.push(outcome.value);
      if (repeats > 1) ctx.log(`verifier run ${i + 1}/${repeats}: ${outcome.value.pass === null ? 'no verdict' : outcome.value.pass ? 'pass' : 'fail'}`);
    }
    const { outcome: v, runs, flaky } = combineRuns(outcomes);
    return writeVerdict(ctx, {
      runs,
      flaky,
      task: task.id,
      pass: v.pass,
      evidence: v.evidence,
      reward: v.reward,
      rewardFile: v.rewardFile ?? null,
      sandbox: v.sandbox,
      canaries: v.canaries,
      forgery: v.forgery,
      keptPristine,
      transcript: v.transcript,
      noVerdict: v.pass === null ? (v.error ?? 'the verifier gave no verdict') : null,
    });
  },
};

/** What one verification found. */
interface Verdict {
  task: string;
  pass: boolean | null;
  evidence: TestEvidence[];
  reward?: Record<string, number> | null;
  rewardFile?: VerifierOutcome['rewardFile'];
  sandbox: VerifierOutcome['sandbox'];
  canaries?: VerifierOutcome['canaries'];
  forgery?: VerifierOutcome['forgery'];
  keptPristine?: string[];
  transcript?: string;
  /** How many times the verifier ran on these changes and what the runs gave. */
  runs?: VerifierRuns;
  /** Why the runs cannot be believed (they disagree). */
  flaky?: string | null;
  /** Why there is no verdict (pass null): what audit tells the reader. */
  noVerdict?: string | null;
}

/** Writes verdict.json (statuses only: what audit keys on) and evidence.json (logs and timings). */
function writeVerdict(ctx: ExecutionContext, v: Verdict) {
  const {
    task: taskId,
    pass,
    evidence,
    reward = null,
    rewardFile = null,
    sandbox,
    canaries = {},
    forgery = null,
    keptPristine = [],
    transcript = '',
    noVerdict = null,
    runs = runsOf([{ pass }]),
    flaky = null,
  } = v;
  const verdict: VerifierVerdict = {
    schema_version: 1,
    task: taskId,
    node: ctx.node.id,
    pass,
    fail_to_pass: Object.fromEntries(evidence.filter((e) => e.kind === 'fail_to_pass').map((e) => [e.name, e.status])),
    pass_to_pass: Object.fromEntries(evidence.filter((e) => e.kind === 'pass_to_pass').map((e) => [e.name, e.status])),
    command: evidence.find((e) => e.kind === 'command')?.status ?? null,
    reward,
    // The file the reward came from (Harbor: reward.txt or reward.json), as the task wrote it.
    reward_file: rewardFile,
    // A pass the code under test forced (a canary that passed, reward files that disagree): failed.
    forgery,
    canaries,
    // Verifier-owned files the attempt changed: the verifier ran with the pristine ones.
    verifier_owned_kept_pristine: keptPristine,
    // Why there is no verdict (an unrunnable verifier, no reward, a pass no calibrated canary stands behind).
    no_verdict: pass === null ? noVerdict : null,
    runs,
    flaky_verifier: flaky,
    sandbox,
  };
  ctx.log(
    `${ctx.node.id}: ${pass === null ? 'NO VERDICT' : pass ? 'PASS' : forgery ? `FAIL (forged: ${forgery.detail})` : 'FAIL'} (${evidence.map((e) => `${e.name}=${e.status}`).join(', ')})`,
  );
  // Stored from memory: nothing is written to be read back.
  return ok({
    [VERIFIER_VERDICT.name]: putFileOutput(ctx.artifacts, JSON.stringify(verdict, null, 2) + '\n'),
    [EVIDENCE.name]: putFileOutput(ctx.artifacts, JSON.stringify(evidence, null, 2) + '\n'),
    // Every verifier process's full output: what a person reads to see why.
    [VERIFIER_LOG.name]: putFileOutput(ctx.artifacts, transcript),
  });
}
