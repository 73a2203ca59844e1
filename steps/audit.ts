import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import picomatch from 'picomatch';
import type { Json } from '../pipeline/canonical-json.js';
import type { StepConfig } from '../pipeline/config/load.js';
import { err, ok, unreachable, type Result } from '../pipeline/result.js';
import type { RunResult } from './run-result.js';
import type { Task } from './task.js';
import type { VerifierVerdict } from './verifier-verdict.js';
import { EARLIER_TRIES, type ExecutionContext, type FileInputSpec, type StepKind } from '../pipeline/step-kind.js';
import { surfaceFromDir } from './certify/scan.js';
import { scanLeakage } from './leakage.js';
import type { AttemptRecord, AttemptTry, AuditedAttempt } from '../stats/types.js';
import { mcpToolNameOf, type AtifTrajectory } from '../agents/adapter.js';
import { agentAdapters } from '../agents/index.js';
import { checkTasks, taskMatrixSource, taskOf } from './agent-step-config.js';
import { AGENT_LOG, armOf, BUDGET_EXITS, GATEWAY_LOG, RUN_RESULT, runStep, TRAJECTORY } from './run.js';
import { VERIFIER_OWNED, verifierOwned } from './verifier-owned.js';
import { CHANGES, type WorkspaceChanges } from './workspace.js';
import { NOT_RUN, passedNotRun } from './not-run.js';
import { specIf, specOf, type SpecByKind } from './step-spec.js';
import { jsonArtifact, optional, parseJsonArtifact, readJsonArtifact, type Artifact, type JsonArtifact } from '../pipeline/artifact.js';
import { auditedAttemptProblems } from '../stats/output-checks.js';
import { FLAKY_VERIFIER } from '../stats/flaky-tasks.js';
import { VERIFIER_VERDICT, verifyStep } from './verify.js';

/** audit.json: the attempt's record as analyze reads it (checked against its generated schema by every reader). */
export const AUDIT_RECORD = jsonArtifact<AuditedAttempt>(
  'audit.json',
  "the attempt's record: admission and reason code, outcome, cost, integrity findings",
  auditedAttemptProblems,
);

/** What the admission policy does with an attempt that is flagged. */
type Consequence = 'flag' | 'score-zero' | 'exclude';

type AuditSpec = SpecByKind['audit'];

const spec = (step: StepConfig): AuditSpec => specOf(step, 'audit');

/**
 * A write out of bounds (outside the allowed paths, or to a file the verifier owns)
 * fails the attempt unless the cohort says otherwise: `flag` only records it.
 */
function policyOf(step: StepConfig): { out_of_bounds: Consequence; leakage: Consequence } {
  const p = spec(step).policy ?? {};
  return { out_of_bounds: p.out_of_bounds ?? 'score-zero', leakage: p.leakage ?? 'score-zero' };
}

/**
 * The tries of this attempt before the one audited (infrastructure faults the engine kept
 * when it retried the attempt), oldest first: the infra-error rate counts every try.
 */
function earlierTries(ctx: ExecutionContext): Result<AttemptTry[], string> {
  const from = ctx.upstream.find((u) => u.outputs[EARLIER_TRIES]);
  if (!from) return ok([]);
  const dir = join(ctx.workDir, EARLIER_TRIES);
  ctx.artifacts.materialize(from.outputs[EARLIER_TRIES]!, dir);
  const tries: AttemptTry[] = [];
  for (const name of readdirSync(dir).sort()) {
    const r = parseJsonArtifact(RUN_RESULT, readFileSync(join(dir, name, RUN_RESULT.name), 'utf8'), `${from.node} (try ${name})`);
    if (!r.ok) return r;
    tries.push({ exit_reason: r.value.exit_reason, infra_error: r.value.infra_error, started_at: r.value.started_at, ended_at: r.value.ended_at });
  }
  return ok(tries);
}

/** The upstream output `a` holds (the first upstream that has it), checked: undefined when none has it. */
function upstreamJson<T>(ctx: ExecutionContext, a: JsonArtifact<T>): Result<T, string> | undefined {
  const u = ctx.upstream.find((x) => x.outputs[a.name]);
  return u && readJsonArtifact(a, u.outputs, (d) => ctx.artifacts.read(d), u.node);
}

/** The text of upstream output `a`, or null when no upstream has it. */
function upstreamText(ctx: ExecutionContext, a: Artifact): string | null {
  const entry = ctx.upstream.find((x) => x.outputs[a.name])?.outputs[a.name];
  return entry ? ctx.artifacts.read(entry.digest).toString('utf8') : null;
}

const producerOf = (ctx: ExecutionContext, a: Artifact): string | undefined => ctx.upstream.find((u) => u.outputs[a.name])?.node;

/** The reason code of an attempt the harness failed: from the part that failed, as run recorded it. */
function infraReason(run: RunResult): 'infra-sandbox' | 'infra-agent-start' | 'infra-provider' | 'infra-treatment' | 'infra-script' {
  // Recorded before infra_kind was: run's own words for the cause, which begin with the part.
  const kind =
    run.infra_kind ?? (run.infra_error?.startsWith('sandbox') ? 'sandbox' : run.infra_error?.startsWith('agent did not start') ? 'agent-start' : 'provider');
  switch (kind) {
    case 'sandbox':
      return 'infra-sandbox';
    case 'agent-start':
      return 'infra-agent-start';
    case 'provider':
      return 'infra-provider';
    case 'treatment':
      return 'infra-treatment';
    case 'script':
      return 'infra-script';
    default:
      return unreachable(kind);
  }
}

/**
 * "Used": the agent observably read or called the treatment (its files, or its MCP tools) in a
 * call that succeeded: one the agent reported failed (no such tool: the server was not there) used nothing.
 */
function usedTreatment(trajectory: Pick<AtifTrajectory, 'steps'>, files: string[], mcpPrefixes: string[]): boolean {
  return trajectory.steps.some((s) =>
    (s.tool_calls ?? []).some((c) => {
      const failed = (s.observation?.results ?? []).some((r) => r.source_call_id === c.tool_call_id && r.extra?.['is_error'] === true);
      if (failed) return false;
      if (mcpPrefixes.some((p) => c.function_name.startsWith(p))) return true;
      const text = JSON.stringify(c.arguments ?? '');
      return files.some((f) => text.includes(f));
    }),
  );
}

/** What the audit reads of its attempt: the run's result, the verdict, the changes, the trajectory, the gateway's log. */
function auditInputs(
  ctx: ExecutionContext,
): Result<
  { run: RunResult | null; verdict: VerifierVerdict | null; changes: WorkspaceChanges; trajectory: Pick<AtifTrajectory, 'steps'>; gatewayLog: string },
  string
> {
  const run = upstreamJson(ctx, RUN_RESULT);
  if (run && !run.ok) return run;
  const verdict = upstreamJson(ctx, VERIFIER_VERDICT);
  if (verdict && !verdict.ok) return verdict;
  const withChanges = ctx.upstream.find((u) => u.outputs[CHANGES.name]);
  const changes = withChanges && readJsonArtifact(CHANGES, withChanges.outputs, (d) => ctx.artifacts.read(d), withChanges.node);
  if (changes && !changes.ok) return changes;
  const trajectory = upstreamJson(ctx, TRAJECTORY);
  if (trajectory && !trajectory.ok) return trajectory;
  return ok({
    run: run?.value ?? null,
    verdict: verdict?.value ?? null,
    changes: changes?.value ?? { schema_version: 1, written: {}, deleted: [] },
    trajectory: trajectory?.value ?? { steps: [] },
    gatewayLog: upstreamText(ctx, GATEWAY_LOG) ?? '',
  });
}

/** The mutation audit: what the attempt touched, what of it the verifier owns (tests, runner settings), what is out of bounds. */
function mutationOf(task: Task, changes: WorkspaceChanges): { touched: string[]; verifierFiles: string[]; outOfBounds: string[] } {
  const allowed = picomatch(task.allowedPaths, { dot: true });
  const owned = verifierOwned(task);
  const touched = [...Object.keys(changes.written), ...changes.deleted];
  return { touched, verifierFiles: touched.filter(owned), outOfBounds: touched.filter((p) => !allowed(p) || owned(p)) };
}

/**
 * Mechanism evidence: delivered (the gateway saw the treatment), used (the trajectory reads or calls it);
 * null for an arm without a treatment. "Changed" is per pair: analyze's.
 */
function mechanismOf(ctx: ExecutionContext, run: RunResult, trajectory: Pick<AtifTrajectory, 'steps'>): AuditedAttempt['mechanism'] {
  const runSpec = specIf(ctx.node.upstream.find((u) => u.kind === runStep)?.step, 'run');
  const arm = armOf({ arms: runSpec?.arms ?? {} }, run.arm);
  // An arm's treatment: its files, the repository's own files it restored, its MCP servers (as its agent names their tools).
  const treatmentFiles = [...Object.keys(arm.files ?? {}), ...(run.restored ?? []).map((r) => r.path)];
  const mcp = Object.keys(arm.mcp_servers ?? {});
  if (treatmentFiles.length === 0 && mcp.length === 0) return { delivered: null, used: null };
  const adapter = agentAdapters.get(runSpec?.agent.adapter ?? '') ?? {};
  return {
    delivered: run.delivered[run.arm] ?? false,
    used: usedTreatment(
      trajectory,
      treatmentFiles,
      mcp.map((m) => mcpToolNameOf(adapter, m, '')),
    ),
  };
}

interface Admission {
  admission: AttemptRecord['admission'];
  reason: string;
  explanation: string;
  pass: boolean | null;
  noAnswer: boolean;
}

/** Admission from the run and the verdict alone (the mutation and leakage policies act on it after). */
function admissionOf(run: RunResult, verdict: VerifierVerdict | null, taskId: string): Admission {
  const excluded = (reason: string, explanation: string): Admission => ({ admission: 'excluded', reason, explanation, pass: null, noAnswer: false });
  const scored = (reason: string, explanation: string, pass: boolean, noAnswer = false): Admission => ({
    admission: 'accepted',
    reason,
    explanation,
    pass,
    noAnswer,
  });
  if (run.exit_reason === 'infra-error')
    return excluded(infraReason(run), `infrastructure fault, not attributable to the agent: ${run.infra_error ?? 'unknown'}`);
  if (verdict?.flaky_verifier)
    return excluded(FLAKY_VERIFIER, `${verdict.flaky_verifier}: no verdict, and the analysis excludes every attempt of task ${taskId}`);
  if (verdict === null || verdict.pass === null)
    return excluded('infra-verifier', `the verifier did not produce a verdict${verdict?.no_verdict ? `: ${verdict.no_verdict}` : ''}`);
  if (verdict.forgery)
    return scored('verdict-forged', `the verdict was forged by the code under test (${verdict.forgery.reason}): ${verdict.forgery.detail}`, false);
  if (BUDGET_EXITS.has(run.exit_reason))
    return scored(run.exit_reason, `over budget (${run.exit_reason}${run.over_budget ? `: ${run.over_budget}` : ''}): no answer, scored 0`, false, true);
  if (run.exit_reason === 'agent-crash') return scored('agent-crash', 'the agent crashed: failures count, scored 0', false);
  if (run.files_changed === 0) return scored('empty-diff', `the attempt changed nothing; the verifier says ${verdict.pass ? 'pass' : 'fail'}`, verdict.pass);
  return scored('ok', 'scored by the hidden verifier', verdict.pass);
}

/**
 * `audit` (per attempt): admission, separately from execution. Infrastructure
 * faults are excluded (and kept); the agent's own failures are accepted and score 0
 * (over budget is "no answer"). Also the mutation audit (changes against the
 * allowed paths), mechanism evidence (delivered, used) and trajectory leakage.
 */
export const auditStep: StepKind = {
  name: 'audit',
  matrixSource: taskMatrixSource,
  title: { one: 'admission audit', many: 'admission audits' },
  outputs: () => [AUDIT_RECORD, NOT_RUN],
  // 4: earlier tries of the attempt (retried infrastructure faults) are on its record.
  // 3: verifier-owned writes are out of bounds, out of bounds fails by default, forged verdicts,
  // leakage over the whole trajectory (tool results, reassembled text, agent output, normalised probes).
  // 5: the record names the run and verify nodes it was made from (sources).
  // 7: a provider's failure is infra-provider (was infra-gateway).
  // 8: a verdict whose verifier runs disagreed is a flaky-verifier exclusion.
  version: 8,
  check: (step) => checkTasks(step),
  keyConfig(node): Json {
    const task = taskOf(node);
    return {
      allowed_paths: task.allowedPaths,
      owned: [...VERIFIER_OWNED, ...(task.verifier.owned ?? [])],
      canary: task.canary,
      family: task.family,
      category: task.category,
      policy: policyOf(node.step),
    };
  },
  // The hidden verifier's files: their lines must never be in what the agent was shown.
  fileInputs(node): FileInputSpec[] {
    const task = taskOf(node);
    return task.verifier.filesDir ? [{ pattern: relative(node.step.rootDir, task.verifier.filesDir), field: ['tasks'] }] : [];
  },
  selectUpstream: (_node, upstream) =>
    upstream.kind === runStep
      ? [RUN_RESULT, CHANGES, TRAJECTORY, GATEWAY_LOG, AGENT_LOG, EARLIER_TRIES, NOT_RUN].map(optional)
      : upstream.kind === verifyStep
        ? [optional(VERIFIER_VERDICT), optional(NOT_RUN)]
        : undefined,

  async execute(ctx: ExecutionContext) {
    const notRun = passedNotRun(ctx);
    if (notRun) return ok(notRun);
    const task = taskOf(ctx.node);
    const policy = policyOf(ctx.node.step);
    const inputs = auditInputs(ctx);
    if (!inputs.ok) return err({ reason: 'store-error', message: inputs.error });
    const { run, verdict, changes, trajectory, gatewayLog } = inputs.value;
    if (!run) return ok({});
    const tries = earlierTries(ctx);
    if (!tries.ok) return err({ reason: 'store-error', message: tries.error });

    // Mutation audit: outside the allowed paths, or a file the verifier owns (tests, runner settings).
    const { touched, verifierFiles, outOfBounds } = mutationOf(task, changes);
    const hiddenFiles: { path: string; text: string }[] = [];
    if (ctx.files[0]) {
      const dir = join(ctx.workDir, 'verifier');
      ctx.artifacts.materialize(ctx.files[0].entry, dir);
      hiddenFiles.push(...surfaceFromDir('tree', 'verifier', dir).files);
    }
    const leakage = scanLeakage({ task, trajectory, gatewayLog, agentLog: upstreamText(ctx, AGENT_LOG) ?? '', hiddenFiles });

    const admitted = admissionOf(run, verdict, task.id);
    let { admission, reason, explanation, pass } = admitted;
    const apply = (consequence: Consequence, code: string, why: string) => {
      if (admission === 'excluded' || consequence === 'flag') return;
      if (consequence === 'exclude') {
        admission = 'excluded';
        pass = null;
      } else pass = false;
      reason = code;
      explanation = why;
    };
    if (outOfBounds.length) {
      const why = verifierFiles.length
        ? `wrote files the verifier owns (the verifier ran with the pristine ones): ${verifierFiles.slice(0, 5).join(', ')}`
        : `wrote outside the allowed paths: ${outOfBounds.slice(0, 5).join(', ')}`;
      apply(policy.out_of_bounds, 'out-of-bounds', why);
    }
    // Digging in version history is recorded (the trees have none to dig in); reaching hidden
    // files or using the canary is what the policy acts on.
    const acted = leakage.filter((l) => l.kind !== 'version-history');
    if (acted.length) apply(policy.leakage, 'leakage', `trajectory leakage: ${acted[0]!.kind} at ${acted[0]!.where}`);

    const record: AuditedAttempt = {
      node: ctx.node.id,
      sources: { run: producerOf(ctx, RUN_RESULT)!, verify: producerOf(ctx, VERIFIER_VERDICT) ?? null },
      task: task.id,
      family: task.family,
      category: task.category,
      arm: run.arm,
      rep: run.rep,
      admission,
      reason_code: reason,
      explanation,
      pass,
      no_answer: admitted.noAnswer,
      exit_reason: run.exit_reason,
      infra_error: run.exit_reason === 'infra-error' || reason === 'infra-verifier',
      infra_cause:
        run.exit_reason === 'infra-error'
          ? (run.infra_error ?? 'unknown')
          : reason === 'infra-verifier'
            ? `the verifier did not produce a verdict${verdict?.no_verdict ? `: ${verdict.no_verdict}` : ''}`
            : null,
      usage: run.usage,
      cost_usd: run.cost_usd,
      cost_confidence: run.cost_confidence,
      scripted: run.model_source === 'scripted',
      wall_ms: run.wall_ms,
      ...(run.harness_ms !== undefined ? { harness_ms: run.harness_ms } : {}),
      ...(run.restored ? { restored: run.restored.length } : {}),
      turns: run.turns,
      tool_calls: run.tool_calls,
      agent: run.agent,
      sandbox: {
        backend: run.sandbox.backend,
        isolation: run.sandbox.isolation,
        egress_mode: run.sandbox.egress_mode,
        egress_enforced: run.sandbox.egress_enforced,
        image_id: run.sandbox.image_id,
        resources: run.sandbox.resources,
      },
      mechanism: mechanismOf(ctx, run, trajectory),
      integrity: { out_of_bounds: outOfBounds.length, leakage: acted.length, verdict_forged: Boolean(verdict?.forgery) },
      delivery: { marker_lines: run.delivery?.marker?.lines ?? [], instruction_lines: run.delivery?.instruction_lines ?? [] },
      started_at: run.started_at,
      ended_at: run.ended_at,
      tries: tries.value,
      mutation: { touched, out_of_bounds: outOfBounds, verifier_owned: verifierFiles, allowed_paths: task.allowedPaths },
      leakage,
    };
    const out = join(ctx.workDir, 'out');
    mkdirSync(out, { recursive: true });
    writeFileSync(join(out, AUDIT_RECORD.name), JSON.stringify(record, null, 2) + '\n');
    ctx.log(`${ctx.node.id}: ${admission} (${reason}) ${explanation}`);
    return ok({ [AUDIT_RECORD.name]: ctx.artifacts.putPath(join(out, AUDIT_RECORD.name)) });
  },
};
