/** The analyze step's entry point: audited attempts + spec -> AnalysisResult. */
import { err, ok, type Result } from '../pipeline/result.js';
import { armMetrics } from './arm-metrics.js';
import { compareArms, decide, type ArmInput } from './compare.js';
import { evalCost } from './cost.js';
import { ENVELOPE_FORMULA, MDE_FORMULA } from './envelope.js';
import { MONTE_CARLO_SAMPLES } from './inference.js';
import { holm } from './exact-tests.js';
import { pairAttempts } from './pairing.js';
import { excludeFlakyTasks, FLAKY_VERIFIER } from './flaky-tasks.js';
import { headlineWarnings } from './warnings.js';
import { analyzeFactorial, decideEffects, decideFactorial } from './factorial.js';
import { crossCells, crossedDesigns } from './crossed.js';
import { checkSpec, type SpecProblem } from './spec.js';
import { applySequential, sequentialAnalysis } from './sequential.js';
import type { AnalysisResult, AnalysisSpec, AttemptRecord, Comparison, HeadlineWarning, SequentialResult } from './types.js';

/** Analyze after checking the spec; every spec problem is named. */
export function analyzeChecked(attempts: readonly AttemptRecord[], spec: AnalysisSpec): Result<AnalysisResult, SpecProblem[]> {
  const checked = checkSpec(spec);
  return checked.ok ? ok(analyzeValid(attempts, spec)) : err(checked.error);
}

/**
 * Pure and deterministic for a given spec (the bootstrap is seeded by
 * spec.bootstrap.seed; attempt order does not matter). A spec that fails
 * checkSpec is a programming error here: use analyzeChecked for specs from users.
 */
export function analyze(attempts: readonly AttemptRecord[], spec: AnalysisSpec): AnalysisResult {
  const checked = checkSpec(spec);
  if (!checked.ok) throw new RangeError(`invalid analysis spec: ${checked.error.map((p) => `${p.field}: ${p.message}`).join('; ')}`);
  return analyzeValid(attempts, spec);
}

function analyzeValid(audited: readonly AttemptRecord[], cohortSpec: AnalysisSpec): AnalysisResult {
  const { attempts: given, tasks: flakyTasks } = excludeFlakyTasks(audited);
  // Crossed with models or agents: the arms at each level are cells, compared within their level.
  const crossing = cohortSpec.by ? crossCells(given, { ...cohortSpec, by: cohortSpec.by }) : null;
  const attempts = crossing?.attempts ?? given;
  const spec = crossing?.spec ?? cohortSpec;
  const byArm = new Map<string, AttemptRecord[]>();
  for (const a of attempts) {
    const list = byArm.get(a.arm);
    if (list) list.push(a);
    else byArm.set(a.arm, [a]);
  }
  const armNames = orderArms([...byArm.keys()], spec);
  const paired = pairedTaskSet(byArm, spec);
  const inputs = new Map<string, ArmInput>(
    armNames.map((name) => {
      const list = byArm.get(name)!;
      return [name, { metrics: armMetrics(name, list, spec.weights, paired), attempts: list }];
    }),
  );

  const compared = [
    ...spec.treatments.map((t) => compareArms(spec.control, t, inputs.get(spec.control), inputs.get(t), spec)),
    ...(spec.comparisons ?? []).map(([t, c]) => compareArms(c, t, inputs.get(c), inputs.get(t), spec)),
  ];
  const factorial = spec.factorial ? analyzeFactorial(spec.factorial, inputs, spec) : null;
  const crossed = crossing && cohortSpec.by ? crossedDesigns({ ...cohortSpec, by: cohortSpec.by }, crossing.levels, inputs) : null;
  // One Holm family: every comparison's test, every factorial effect's and every crossed interaction's.
  const tested = compared.map((c) => c.comparison).filter((c) => c.test !== null);
  const effects = [
    ...(factorial ? [...factorial.main_effects, ...(factorial.interaction ? [factorial.interaction] : [])] : []),
    ...(crossed?.designs ?? []).flatMap((d) => (d.interaction ? [d.interaction] : [])),
  ].filter((e) => e.test);
  const m = tested.length + effects.length;
  const adjusted = holm([...tested.map((c) => c.test!.p), ...effects.map((e) => e.test!.p)]);
  tested.forEach((c, i) => (c.test!.p_holm = adjusted[i]!));
  effects.forEach((e, i) => (e.test!.p_holm = adjusted[tested.length + i]!));
  const withMcNemar = tested.filter((c) => c.mcnemar !== null);
  holm(withMcNemar.map((c) => c.mcnemar!.p)).forEach((p, i) => (withMcNemar[i]!.mcnemar!.p_holm = p));
  const decided = compared.map((c) => decide(c, m));
  if (factorial) decideFactorial(factorial, m);
  for (const d of crossed?.designs ?? []) if (d.interaction) decideEffects([d.interaction], m);
  const sequential = spec.stopping ? sequentialAnalysis(attempts, spec) : undefined;
  const comparisons = sequential ? decided.map((c, i) => (i === 0 ? applySequential(c, sequential, compared[0]!.unisolatedArms) : c)) : decided;

  const notes = methodNotes(spec, m);
  if (flakyTasks.length)
    notes.push(
      `${flakyTasks.length} task(s) excluded whole (${FLAKY_VERIFIER}): the verifier gave an attempt's changes different verdicts, so no attempt of ${flakyTasks.join(', ')} is scored, in any arm.`,
    );
  const acceptedNullPass = attempts.filter((a) => a.admission === 'accepted' && a.pass === null).length;
  if (acceptedNullPass > 0) notes.push(`${acceptedNullPass} accepted attempt(s) had no pass value and were scored as failures.`);
  const duplicates = duplicateCount(attempts);
  if (duplicates > 0) notes.push(`${duplicates} attempt record(s) repeat an (arm, task, rep): pairing used the first of each.`);
  const unpaired = [...new Set([...inputs.values()].flatMap((i) => i.metrics.unpaired_tasks))].sort();
  if (paired && unpaired.length > 0) {
    notes.push(
      `Per-arm outcome figures are over the ${paired.size} task(s) with a valid pair in every comparison; left out of them (no valid pair in some comparison): ${unpaired.join(', ')}.`,
    );
  }
  const unknown = [spec.control, ...spec.treatments].filter((a) => !inputs.has(a));
  if (unknown.length > 0) notes.push(`No attempts for arm(s): ${unknown.join(', ')}.`);
  // Arms run interleaved so that drift hits them alike; say so when their windows did not overlap.
  for (const t of spec.treatments) {
    const a = inputs.get(spec.control)?.metrics.window;
    const b = inputs.get(t)?.metrics.window;
    if (!a?.started_at || !a.ended_at || !b?.started_at || !b.ended_at) continue;
    if (a.ended_at < b.started_at || b.ended_at < a.started_at) {
      notes.push(
        `Warning: arms ${spec.control} (${a.started_at} to ${a.ended_at}) and ${t} (${b.started_at} to ${b.ended_at}) ran in windows that do not overlap: drift in the model service or the machine may differ between them.`,
      );
    }
  }

  return {
    schema_version: 1,
    spec: cohortSpec,
    arms: [...inputs.values()].map((i) => i.metrics),
    comparisons,
    factorial,
    ...(crossed ? { crossed } : {}),
    cost_streams: {
      eval: [...inputs.values()].map((i) => evalCost(i.metrics.arm, i.attempts, spec.weights)),
      overhead: spec.overhead ?? null,
    },
    warnings: [
      ...headlineWarnings(
        [...inputs.values()].map((i) => i.metrics),
        byArm,
      ),
      ...zeroHurtWarnings(comparisons),
    ],
    notes: sequential ? [...notes, ...sequentialNotes(sequential)] : notes,
    ...(sequential ? { sequential } : {}),
  };
}

/**
 * The seeds' red flag, on the verifier's own (a)/(b)/(c) counts, judge or not: a comparison in
 * which no task got worse is suspect (can the tasks show harm at all?).
 */
function zeroHurtWarnings(comparisons: readonly Comparison[]): HeadlineWarning[] {
  return comparisons.flatMap((c) => {
    const n = c.outcomes?.counts;
    if (!n || n.a === 0 || n.c > 0) return []; // some task helped and none got worse
    return [
      {
        kind: 'zero-hurt' as const,
        arm: c.treatment,
        message: `the verifier found no task (c) hurt (${c.treatment} vs ${c.control}: ${n.a} helped, ${n.b} no difference, 0 hurt): a treatment that never hurts is a red flag; check that the tasks can show harm.`,
      },
    ];
  });
}

function sequentialNotes(seq: SequentialResult): string[] {
  const design = seq.design!;
  const rule =
    seq.rule === 'group-sequential'
      ? `Sequential stopping (preregistered): group-sequential, ${seq.looks.length} look(s) over ${seq.max_families} families in their preregistered order, ` +
        `Lan-DeMets ${design.spending}-type spending of one-sided alpha ${design.alpha} each way (boundaries by recursive numerical integration), futility ${design.futility}; ` +
        'statistic: the exact sign-flip test on the families of each look, on the Z scale (sign x Phi^-1(1 - p / 2)); interval: the repeated confidence interval at the stop, not the fixed-N interval.'
      : `Sequential stopping (preregistered): an anytime-valid betting confidence sequence (Waudby-Smith and Ramdas) at level ${1 - design.alpha} on family deltas, looked at after every family.`;
  return [rule, ...seq.notes];
}

/**
 * The tasks with at least one valid pair (same task and rep, both accepted) between the
 * control and every other compared arm (treatments, factorial cells): every arm's outcome
 * figures are computed over these, so no arm is described over tasks another arm lost.
 */
function pairedTaskSet(byArm: ReadonlyMap<string, AttemptRecord[]>, spec: AnalysisSpec): Set<string> | undefined {
  const control = byArm.get(spec.control);
  const others = [...new Set([...spec.treatments, ...Object.keys(spec.factorial?.levels ?? {})])].filter((a) => a !== spec.control && byArm.has(a));
  if (!control || others.length === 0) return undefined;
  let set: Set<string> | undefined;
  for (const arm of others) {
    const tasks = new Set(pairAttempts(control, byArm.get(arm)!).tasks.map((t) => t.task));
    set = set ? new Set([...set].filter((t) => tasks.has(t))) : tasks;
  }
  return set;
}

/** Control first, then treatments in spec order, then any other arm by name. */
function orderArms(names: string[], spec: AnalysisSpec): string[] {
  const listed = [spec.control, ...spec.treatments].filter((n) => names.includes(n));
  const others = names.filter((n) => !listed.includes(n)).sort();
  return [...listed, ...others];
}

function duplicateCount(attempts: readonly AttemptRecord[]): number {
  const seen = new Set<string>();
  let d = 0;
  for (const a of attempts) {
    const k = `${a.arm}\u0000${a.task}\u0000${a.rep}`;
    if (seen.has(k)) d++;
    else seen.add(k);
  }
  return d;
}

function methodNotes(spec: AnalysisSpec, nTested: number): string[] {
  const { resamples, seed } = spec.bootstrap;
  return [
    'Effect = mean over tasks of the per-task mean paired delta (treatment pass - control pass over the same reps); ' +
      'a pair with an excluded side is dropped from the estimate and counted in pairs.excluded.',
    'Units: families when tasks are grouped in families (tasks of one family are dependent), else tasks; reps of a task are never units.',
    `Test: exact two-sided sign-flip randomization test on the units' summed deltas (every sign pattern up to 2^20, else ${MONTE_CARLO_SAMPLES} seeded samples), ` +
      `Holm-adjusted over the cohort's ${nTested} comparison(s) and factorial effect(s). McNemar exact and the task sign test are reported, not used.`,
    `Intervals: the effect's ${Math.round(spec.confidence * 100)}% interval is a cluster-robust t interval on the units (k - 1 df). ` +
      `Paired cost and token medians: a cluster bootstrap (${resamples} resamples, mt19937 seed ${seed}), families drawn with replacement, each drawn family's tasks used once.`,
    `Noise envelope: ${ENVELOPE_FORMULA}`,
    'Verdict: refused when the arms differ (or are mixed) in model, provider, adapter, adapter version, sandbox backend, ' +
      `isolation, egress mode/enforcement, image id or resources, or their infra-error rates differ (Fisher exact p < ${spec.infra_error_threshold}); ` +
      `invalid when an arm's accepted fraction is under ${spec.validity_floor}, no pair is valid, or a control received a treatment; ` +
      'insufficient-n when there are fewer units than the test needs to reach alpha at all; positive / negative only when the adjusted p <= alpha, ' +
      'the interval has non-zero width and excludes 0, the effect is beyond the envelope, and the claim survives every excluded pair imputed against it; ' +
      'unisolated when that holds but an arm ran without isolation; within-noise (not distinguishable from 0 at this n) otherwise.',
    `Minimum detectable effect: ${MDE_FORMULA}; a comparison whose |effect| is under it is labelled directional.`,
    'Two cost streams, never summed: eval cost per arm (cost_streams.eval, every attempt) and overhead (cost_streams.overhead).',
  ];
}
