/** The analyze step's entry point: audited attempts + spec -> AnalysisResult. */
import { err, ok, type Result } from '../../pipeline/result.js';
import { armMetrics } from './arm-metrics.js';
import { compareArms, type ArmInput } from './compare.js';
import { evalCost } from './cost.js';
import { ENVELOPE_FORMULA, MDE_FORMULA } from './envelope.js';
import { holm } from './exact-tests.js';
import { analyzeFactorial } from './factorial.js';
import { checkSpec, type SpecProblem } from './spec.js';
import type { AnalysisResult, AnalysisSpec, AttemptRecord } from './types.js';

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

function analyzeValid(attempts: readonly AttemptRecord[], spec: AnalysisSpec): AnalysisResult {
  const byArm = new Map<string, AttemptRecord[]>();
  for (const a of attempts) {
    const list = byArm.get(a.arm);
    if (list) list.push(a);
    else byArm.set(a.arm, [a]);
  }
  const armNames = orderArms([...byArm.keys()], spec);
  const inputs = new Map<string, ArmInput>(
    armNames.map((name) => {
      const list = byArm.get(name)!;
      return [name, { metrics: armMetrics(name, list, spec.weights), attempts: list }];
    }),
  );

  const comparisons = spec.treatments.map((t) => compareArms(spec.control, t, inputs.get(spec.control), inputs.get(t), spec));
  const tested = comparisons.filter((c) => c.mcnemar !== null);
  const adjusted = holm(tested.map((c) => c.mcnemar!.p));
  tested.forEach((c, i) => {
    c.mcnemar!.p_holm = adjusted[i]!;
  });

  const notes = methodNotes(spec, tested.length);
  const acceptedNullPass = attempts.filter((a) => a.admission === 'accepted' && a.pass === null).length;
  if (acceptedNullPass > 0) notes.push(`${acceptedNullPass} accepted attempt(s) had no pass value and were scored as failures.`);
  const duplicates = duplicateCount(attempts);
  if (duplicates > 0) notes.push(`${duplicates} attempt record(s) repeat an (arm, task, rep): pairing used the first of each.`);
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
    spec,
    arms: [...inputs.values()].map((i) => i.metrics),
    comparisons,
    factorial: spec.factorial ? analyzeFactorial(spec.factorial, inputs, spec) : null,
    cost_streams: {
      eval: [...inputs.values()].map((i) => evalCost(i.metrics.arm, i.attempts, spec.weights)),
      overhead: spec.overhead ?? null,
    },
    notes,
  };
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
    `Intervals: ${Math.round(spec.confidence * 100)}% percentile bootstrap, ${resamples} resamples, mt19937 seed ${seed}; ` +
      'each resample draws families with replacement, then tasks with replacement within each drawn family. ' +
      'Paired cost and token medians resample the pairs of the drawn tasks.',
    `Noise envelope: ${ENVELOPE_FORMULA}`,
    'Verdict: refused when the arms differ (or are mixed) in model, provider, adapter, adapter version, sandbox backend, ' +
      `isolation, egress mode/enforcement, image id or resources, or their infra-error rates differ by more than ${spec.infra_error_threshold}; ` +
      `invalid when an arm's accepted fraction is under ${spec.validity_floor} or no pair is valid; ` +
      'within-noise when |effect| <= envelope or the interval contains 0; positive / negative otherwise.',
    `Minimum detectable effect: ${MDE_FORMULA}; a comparison whose |effect| is under it is labelled directional.`,
    nTested > 1
      ? `McNemar exact p values are Holm-adjusted over ${nTested} comparisons (p_holm); verdicts use the intervals, not the p values.`
      : 'McNemar exact test on paired attempts; p_holm equals p with a single comparison.',
    'Two cost streams, never summed: eval cost per arm (cost_streams.eval, every attempt) and overhead (cost_streams.overhead).',
  ];
}
