import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { JsonEncodable } from '../pipeline/canonical-json.js';
import type { StepConfig } from '../pipeline/config/load.js';
import { closest, type Diagnostic } from '../pipeline/diagnostic.js';
import { sha256 } from '../pipeline/digest.js';
import { fieldName } from '../pipeline/config/yaml-source.js';
import { err, errorMessage, ok, type Result } from '../pipeline/result.js';
import type { Checkpoint, ExecutionContext, GraphNode, StepKind } from '../pipeline/step-kind.js';
import { taskOf } from './agent-step-config.js';
import { checkSpec, defaultSpec } from '../stats/spec.js';
import { lookSchedule } from '../stats/look-schedule.js';
import { LOOK_DECISION, NOT_RUN, notRunReason, type LookDecision } from './not-run.js';
import type { AnalysisSpec, AttemptRecord, JudgementRecord, StoppingSpec } from '../stats/types.js';
import { specOf, type SpecByKind } from './step-spec.js';
import { artifact, jsonArtifact, optional, readJsonArtifact } from '../pipeline/artifact.js';
import { analysisProblems, auditedAttemptsProblems } from '../stats/output-checks.js';
import type { AnalysisResult, AuditedAttempt } from '../stats/types.js';
import { AUDIT_RECORD, auditStep } from './audit.js';
import { runStep } from './run.js';
import { JUDGEMENT, judgeStep } from './judge.js';

/** analysis.json: the cohort's analysis, what gate, export and the run's summary read. */
export const ANALYSIS = jsonArtifact<AnalysisResult>('analysis.json', "the cohort's paired statistics and verdicts", analysisProblems);
/** A look's analysis of the attempts so far (what its decision was made from; export bundles it). */
const LOOK_ANALYSIS = artifact('look.json', 'the interim analysis at this look');
/** attempts.json: the audited attempts the analysis read, in node order (what the bundle lists). */
export const ANALYZED_ATTEMPTS = jsonArtifact<AuditedAttempt[]>('attempts.json', 'every attempt record the analysis read', auditedAttemptsProblems);

type AnalyzeConfig = SpecByKind['analyze'];

const cfg = (step: StepConfig): AnalyzeConfig => specOf(step, 'analyze');

/** The arms (matrix.arm values) of every run step upstream of `step`. */
function upstreamArms(step: StepConfig, steps: ReadonlyMap<string, StepConfig>): Set<string> {
  const arms = new Set<string>();
  const seen = new Set<string>();
  const stack = [...step.needs];
  while (stack.length) {
    const name = stack.pop()!;
    if (seen.has(name)) continue;
    seen.add(name);
    const s = steps.get(name);
    if (!s) continue;
    if (s.kind === runStep.name) for (const v of s.matrix.find((d) => d.name === 'arm')?.values ?? []) arms.add(v);
    stack.push(...s.needs);
  }
  return arms;
}

/** The run steps whose attempts reach `step` through the audit steps it needs. */
function runStepsUpstream(step: StepConfig, steps: ReadonlyMap<string, StepConfig>): Set<string> {
  const runs = new Set<string>();
  for (const need of step.needs) {
    const audit = steps.get(need);
    if (audit?.kind !== auditStep.name) continue;
    for (const n of audit.needs) if (steps.get(n)?.kind === runStep.name) runs.add(n);
  }
  return runs;
}

/** The audit nodes a cohort analyses (its attempts, one per task x arm x rep). */
function auditsOf(nodes: readonly GraphNode[]): GraphNode[] {
  return nodes.filter((n) => n.kind === auditStep);
}

/**
 * The families of the cohort in their preregistered order (seeded by the run step's
 * order_seed, as its attempts are), grouped by look: the same for every node of the cohort.
 */
function scheduleOf(audits: readonly GraphNode[], stopping: Omit<StoppingSpec, 'schedule'>): string[][] {
  const families = new Set<string>();
  let seed = '0';
  for (const a of audits) {
    families.add(taskOf(a).family);
    const run = a.upstream.find((u) => u.kind === runStep);
    if (run) seed = String(specOf(run.step, 'run').order_seed ?? 0);
  }
  const rank = (f: string) => sha256(`${seed}:family:${f}`);
  return lookSchedule(
    [...families].sort((a, b) => (rank(a) < rank(b) ? -1 : rank(a) > rank(b) ? 1 : 0)),
    stopping,
  );
}

/** The cohort's spec at its analyze node (which needs every attempt). */
function cohortSpec(node: GraphNode): AnalysisSpec {
  const stopping = cfg(node.step).stopping;
  return analysisSpecOf(node.step, stopping ? scheduleOf(auditsOf(node.upstream), stopping) : []);
}

/** The spec; with stopping, its looks over the cohort's families (`schedule`). */
export function analysisSpecOf(step: StepConfig, schedule: string[][] = []): AnalysisSpec {
  const c = cfg(step);
  return defaultSpec(c.control, c.treatments, {
    ...(c.stopping ? { stopping: { ...c.stopping, schedule } } : {}),
    ...(c.weights ? { weights: c.weights } : {}),
    ...(c.bootstrap ? { bootstrap: c.bootstrap } : {}),
    ...(c.confidence !== undefined ? { confidence: c.confidence } : {}),
    ...(c.power !== undefined ? { power: c.power } : {}),
    ...(c.validity_floor !== undefined ? { validity_floor: c.validity_floor } : {}),
    ...(c.infra_error_threshold !== undefined ? { infra_error_threshold: c.infra_error_threshold } : {}),
    ...(c.factorial ? { factorial: c.factorial } : {}),
    ...(c.comparisons?.length ? { comparisons: c.comparisons } : {}),
    ...(c.by ? { by: c.by } : {}),
    ...(c.gate ? { gate: c.gate } : {}),
  });
}

/**
 * `analyze` (per cohort): the paired statistics over every audited attempt. Every
 * number is reproducible from the bundle: the attempts and the spec are its inputs.
 */
export const analyzeStep: StepKind = {
  name: 'analyze',
  observes: true,
  // The version number names the preregistration; bumping it changes nothing the analysis reads.
  unfrozen: ['version'],
  title: { one: 'paired analysis', many: 'paired analyses' },
  outputs: () => [ANALYSIS, ANALYZED_ATTEMPTS],
  // 3: the verifier's own zero-(c) red flag, judge or not.
  // 2: the verdict rests on a Holm-adjusted family-level sign-flip test, a cluster t interval
  // and worst-case exclusions; insufficient-n; infra rates over every try by Fisher's exact test.
  version: 3,
  check(step, steps) {
    const problems: Diagnostic[] = [];
    // The arms compared must be arms the run steps upstream actually run.
    const arms = upstreamArms(step, steps);
    if (arms.size) {
      const c = cfg(step);
      const refs: [string, (string | number)[]][] = [
        [c.control, ['control']],
        ...(c.treatments ?? []).map((t, i): [string, (string | number)[]] => [t, ['treatments', i]]),
        ...(c.comparisons ?? []).flatMap(([t, k], i): [string, (string | number)[]][] => [
          [t, ['comparisons', i, 0]],
          [k, ['comparisons', i, 1]],
        ]),
      ];
      for (const [arm, field] of refs) {
        if (typeof arm !== 'string' || arms.has(arm)) continue;
        const guess = closest(arm, [...arms]);
        problems.push({
          field: `steps.${step.name}.${fieldName(field)}`,
          message: `"${arm}" is not an arm of the run steps this cohort analyses; they run: ${[...arms].join(', ')}`,
          location: step.source.locate([...step.path, ...field]),
          ...(guess ? { hint: `did you mean "${guess}"?` } : {}),
        });
      }
    }
    const spec = checkSpec(analysisSpecOf(step));
    if (!spec.ok) {
      for (const p of spec.error) problems.push({ field: `steps.${step.name}`, message: p.message, location: step.source.locate(step.path) });
    }
    const j = cfg(step).judge;
    if (j !== undefined && (steps.get(j)?.kind !== judgeStep.name || !step.needs.includes(j))) {
      problems.push({
        field: `steps.${step.name}.judge`,
        message: `judge "${j}" must be a judge step in needs`,
        location: step.source.locate([...step.path, 'judge']),
      });
    }
    if (cfg(step).stopping && runStepsUpstream(step, steps).size !== 1) {
      problems.push({
        field: `steps.${step.name}.stopping`,
        message: `sequential stopping needs the cohort's attempts from exactly one run step, through audit steps in needs (found: ${[...runStepsUpstream(step, steps)].join(', ') || 'none'})`,
        location: step.source.locate([...step.path, 'stopping']),
        hint: 'the looks order the families of that run step; analyse one run step per sequential cohort',
      });
    }
    const g = cfg(step).gate;
    if (g?.fail_on?.includes('not-noninferior') && g.noninferiority_margin === undefined) {
      problems.push({
        field: `steps.${step.name}.gate.noninferiority_margin`,
        message: 'gate.fail_on lists not-noninferior, which needs its preregistered margin: set gate.noninferiority_margin (e.g. 0.2 for 20 pp)',
        location: step.source.locate([...step.path, 'gate']),
        hint: '`pairbench size` says which margin this cohort can carry',
      });
    }
    const o = cfg(step).overhead;
    if (o && !step.needs.includes(o.step)) {
      problems.push({
        field: `steps.${step.name}.overhead.step`,
        message: `overhead comes from step "${o.step}", which is not in needs`,
        location: step.source.locate([...step.path, 'overhead', 'step']),
      });
    }
    return problems;
  },
  keyConfig: (node): JsonEncodable => ({
    spec: cohortSpec(node),
    overhead: cfg(node.step).overhead ?? null,
    ...(cfg(node.step).judge ? { judge: cfg(node.step).judge! } : {}),
  }),
  fileInputs: () => [],
  selectUpstream(node, upstream) {
    // An attempt a stopping rule or a closed gate did not run has no audit record.
    if (upstream.kind === auditStep) return [optional(AUDIT_RECORD), optional(NOT_RUN)];
    if (upstream.kind === judgeStep && upstream.step.name === cfg(node.step).judge) return [JUDGEMENT.name];
    const o = cfg(node.step).overhead;
    return o && upstream.step.name === o.step ? [o.out] : [];
  },

  checkpoints(step, nodesOf): Checkpoint[] {
    const stopping = cfg(step).stopping;
    if (!stopping) return [];
    const audits = auditsOf(step.needs.flatMap((n) => nodesOf(n)));
    const schedule = scheduleOf(audits, stopping);
    const groupOf = new Map(schedule.flatMap((families, g) => families.map((f): [string, number] => [f, g])));
    const group = (a: GraphNode) => groupOf.get(taskOf(a).family)!;
    // Look k (1-based) needs every attempt of groups 1..k and comes before every attempt of group k + 1.
    return schedule.slice(0, -1).map((_, i) => ({
      name: `look-${i + 1}`,
      kind: lookStep,
      matrix: { look: String(i + 1) },
      annotation: { schedule },
      after: audits.filter((a) => group(a) <= i),
      before: audits.filter((a) => group(a) === i + 1).flatMap((a) => a.upstream.filter((u) => u.kind === runStep)),
    }));
  },

  async execute(ctx: ExecutionContext) {
    const attempts: AttemptRecord[] = [];
    let notRun = 0;
    const notRunWhy = new Map<string, number>();
    let overhead: AnalysisSpec['overhead'] = null;
    const judgements: JudgementRecord[] = [];
    const o = cfg(ctx.node.step).overhead;
    for (const u of ctx.upstream) {
      const audit = readJsonArtifact(AUDIT_RECORD, u.outputs, (d) => ctx.artifacts.read(d), u.node);
      if (audit && !audit.ok) return err({ reason: 'store-error', message: audit.error });
      if (audit) attempts.push(audit.value);
      const skipped = u.outputs[NOT_RUN.name];
      if (skipped) {
        notRun++;
        const why = notRunReason(ctx.artifacts.read(skipped.digest).toString('utf8'), u.node);
        if (!why.ok) return err({ reason: 'store-error', message: why.error });
        notRunWhy.set(why.value, (notRunWhy.get(why.value) ?? 0) + 1);
      }
      const judgement = readJsonArtifact(JUDGEMENT, u.outputs, (d) => ctx.artifacts.read(d), u.node);
      if (judgement && !judgement.ok) return err({ reason: 'store-error', message: judgement.error });
      if (judgement) judgements.push(judgement.value);
      if (o && u.node.split('/')[0] === o.step && u.outputs[o.out]) {
        const read = overheadOf(ctx.artifacts.read(u.outputs[o.out]!.digest).toString('utf8'), `${u.node}'s ${o.out}`);
        if (!read.ok) return err({ reason: 'refused', message: read.error });
        const v = read.value;
        overhead = {
          usd: v.usd ?? null,
          tokens: v.tokens ?? null,
          source: `${o.step}:${o.out}`,
          ...(v.confidence ? { confidence: v.confidence } : {}),
          ...(v.model_source ? { model_source: v.model_source } : {}),
        };
      }
    }
    attempts.sort((a, b) => (a.node < b.node ? -1 : a.node > b.node ? 1 : 0));
    const spec: AnalysisSpec = { ...cohortSpec(ctx.node), overhead };
    // Loaded when a cohort is analysed, not when the config is (a no-op run stays fast).
    const { analyze } = await import('../stats/analyze.js');
    const result = analyze(attempts, spec);
    if (result.sequential) {
      result.sequential.attempts_not_run = notRun;
      if (notRun > 0) result.notes.push(`${notRun} attempt(s) were not run: the cohort stopped at look ${result.sequential.stopped_at}.`);
    } else
      for (const [why, n] of notRunWhy) result.warnings.push({ kind: 'not-run', arm: null, message: `${n} attempt(s) were not run, as preregistered: ${why}` });
    const judgeStepName = cfg(ctx.node.step).judge;
    if (judgeStepName) {
      const { judgeSummary } = await import('../stats/judge-summary.js');
      const j = judgeSummary(judgeStepName, judgements, result.comparisons);
      result.judge = j.summary;
      result.warnings.push(...j.warnings);
    }
    const out = join(ctx.workDir, 'out');
    mkdirSync(out, { recursive: true });
    writeFileSync(join(out, ANALYSIS.name), JSON.stringify(result, null, 2) + '\n');
    writeFileSync(join(out, ANALYZED_ATTEMPTS.name), JSON.stringify(attempts, null, 2) + '\n');
    return ok({
      [ANALYSIS.name]: ctx.artifacts.putPath(join(out, ANALYSIS.name)),
      [ANALYZED_ATTEMPTS.name]: ctx.artifacts.putPath(join(out, ANALYZED_ATTEMPTS.name)),
    });
  },
};

/**
 * An interim look of a sequential cohort (a checkpoint node of its analyze step): the
 * looks so far over the attempts of the families they cover. It passes `decision.json`
 * to the next group's attempts, which do not run once a look has stopped the cohort.
 * A family with an attempt whose infrastructure fault is to be retried is never used:
 * the look fails (not cached) and is taken on the next run, after the retry.
 */
export const lookStep: StepKind = {
  name: 'look',
  observes: true,
  title: { one: 'interim look', many: 'interim looks' },
  outputs: () => [LOOK_ANALYSIS, LOOK_DECISION],
  version: 1,
  keyConfig: (node): JsonEncodable => ({ look: Number(node.matrix['look']), spec: lookSpec(node) }),
  fileInputs: () => [],
  selectUpstream: (_node, upstream) => (upstream.kind === auditStep ? [optional(AUDIT_RECORD), optional(NOT_RUN)] : []),

  async execute(ctx: ExecutionContext) {
    const k = Number(ctx.node.matrix['look']);
    const attempts: AttemptRecord[] = [];
    for (const u of ctx.upstream) {
      const audit = readJsonArtifact(AUDIT_RECORD, u.outputs, (d) => ctx.artifacts.read(d), u.node);
      if (audit && !audit.ok) return err({ reason: 'store-error', message: audit.error });
      if (audit) attempts.push(audit.value);
    }
    const spec = lookSpec(ctx.node);
    const { sequentialAnalysis } = await import('../stats/sequential.js');
    const result = sequentialAnalysis(attempts, spec, k);
    const look = result.looks[k - 1]!;
    if (look.decision !== 'stopped-earlier' && look.pending_families.length > 0) {
      const message = `look ${k} waits: family ${look.pending_families.join(', ')} has an attempt with an infrastructure fault, retried on the next run; a look never uses a family before all its pairs are in. Run again.`;
      ctx.log(message);
      return err({ reason: 'infra', message });
    }
    const stop = result.stopped_at !== null;
    const because =
      look.decision === 'stopped-earlier'
        ? `stopped at look ${result.stopped_at}`
        : look.statistic === null
          ? `look ${k}: no family has a valid pair yet`
          : `look ${k}: ${look.families} families, Z = ${look.statistic.toFixed(3)}` +
            (look.upper !== null ? `, boundary ±${look.upper.toFixed(3)}` : '') +
            (look.lower !== null ? `, futility ${look.lower.toFixed(3)}` : '') +
            (look.interval ? `, interval [${look.interval.low.toFixed(3)}, ${look.interval.high.toFixed(3)}]` : '') +
            `: ${look.decision}`;
    ctx.log(because);
    ctx.outcome?.(stop ? 'stop' : 'continue', because);
    const out = join(ctx.workDir, 'out');
    mkdirSync(out, { recursive: true });
    writeFileSync(join(out, LOOK_ANALYSIS.name), JSON.stringify(result, null, 2) + '\n');
    // Only the decision reaches the attempts: their keys do not move with the statistic.
    const next: LookDecision = { schema_version: 1, cohort: ctx.node.step.name, stop, stopped_at: result.stopped_at, decision: result.decision };
    writeFileSync(join(out, LOOK_DECISION.name), JSON.stringify(next, null, 2) + '\n');
    return ok({
      [LOOK_ANALYSIS.name]: ctx.artifacts.putPath(join(out, LOOK_ANALYSIS.name)),
      [LOOK_DECISION.name]: ctx.artifacts.putPath(join(out, LOOK_DECISION.name)),
    });
  },
};

/** A look's schedule: the cohort's, which its analyze step gave it when it made the look (annotation). */
function lookSpec(look: GraphNode): AnalysisSpec {
  return analysisSpecOf(look.step, (look.annotation as { schedule: string[][] }).schedule);
}

/** What a generation step's cost file (`overhead: {step, out}`) says, checked field by field: it is the user's command's output. */
function overheadOf(text: string, what: string): Result<{ usd?: number; tokens?: number; confidence?: string; model_source?: string }, string> {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    return err(`${what} is not JSON (${errorMessage(e)}): the overhead file must be an object such as {"usd": 0.12, "tokens": 3400}`);
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return err(`${what} must be a JSON object such as {"usd": 0.12, "tokens": 3400}`);
  const o = v as Record<string, unknown>;
  const bad = [
    ...(['usd', 'tokens'] as const).filter((k) => o[k] !== undefined && o[k] !== null && typeof o[k] !== 'number').map((k) => `${k} must be a number`),
    ...(['confidence', 'model_source'] as const).filter((k) => o[k] !== undefined && typeof o[k] !== 'string').map((k) => `${k} must be a string`),
  ];
  if (bad.length) return err(`${what}: ${bad.join('; ')}`);
  const num = (k: string) => (typeof o[k] === 'number' ? { [k]: o[k] } : {});
  const str = (k: string) => (typeof o[k] === 'string' ? { [k]: o[k] } : {});
  return ok({ ...num('usd'), ...num('tokens'), ...str('confidence'), ...str('model_source') });
}
