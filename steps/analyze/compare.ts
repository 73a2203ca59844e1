/** One paired comparison: control vs a treatment, with its verdict. */
import { refusalProblems, validityProblems } from './arm-config.js';
import { scored } from './arm-metrics.js';
import { clusteredMedian, familiesOf, hierarchicalBootstrap, weightedMean, type ResampleStatistic } from './bootstrap.js';
import { totalTokens, weightedCost } from './cost.js';
import { mean, ratio } from './describe.js';
import { minimumDetectableEffect, noiseEnvelope } from './envelope.js';
import { mcnemarExactP, signTestP } from './exact-tests.js';
import { countOutcomes, taskOutcome } from './outcomes.js';
import { pairAttempts } from './pairing.js';
import type {
  AnalysisSpec,
  ArmMetrics,
  AttemptRecord,
  Comparison,
  ComparisonProblem,
  Interval,
  NoiseEnvelope,
  PairedDifference,
  Verdict,
} from './types.js';

/** Numerical slack when comparing an effect with the envelope (1/n is not exact in floating point). */
const EPS = 1e-9;

export interface ArmInput {
  metrics: ArmMetrics;
  attempts: readonly AttemptRecord[];
}

/**
 * Control attempts whose model received the treatment: every line of a treatment
 * attempt's delivery fingerprint among the control attempt's instruction lines.
 */
function controlsThatReceived(control: readonly AttemptRecord[], treatment: readonly AttemptRecord[]): string[] {
  const fingerprints = new Map<string, string[]>();
  for (const t of treatment) {
    const lines = t.delivery?.marker_lines ?? [];
    if (lines.length) fingerprints.set(lines.join(','), lines);
  }
  if (!fingerprints.size) return [];
  return control
    .filter((c) => {
      const seen = new Set(c.delivery?.instruction_lines ?? []);
      return [...fingerprints.values()].some((lines) => lines.every((l) => seen.has(l)));
    })
    .map((c) => c.node);
}

/** p_holm is set to p here; analyze() replaces it once every comparison is known. */
export function compareArms(
  controlName: string,
  treatmentName: string,
  control: ArmInput | undefined,
  treatment: ArmInput | undefined,
  spec: AnalysisSpec,
): Comparison {
  const pairing = pairAttempts(control?.attempts ?? [], treatment?.attempts ?? []);
  const empty: Comparison = {
    control: controlName,
    treatment: treatmentName,
    verdict: 'invalid',
    problems: [],
    pairs: pairing.counts,
    n_tasks: pairing.tasks.length,
    n_families: new Set(pairing.tasks.map((t) => t.family)).size,
    delta: null,
    ci: null,
    envelope: null,
    mde: null,
    directional: null,
    mcnemar: null,
    sign_test: null,
    paired: null,
    cost_ratio: null,
    outcomes: null,
    mechanism: null,
  };
  if (!control || !treatment) {
    const missing = [!control ? controlName : null, !treatment ? treatmentName : null].filter((x): x is string => x !== null);
    return {
      ...empty,
      problems: missing.map((arm) => ({ reason: 'arm-missing', arm, message: `arm "${arm}" has no attempts` })),
    };
  }
  const refused = refusalProblems(control.metrics, [treatment.metrics], spec.infra_error_threshold);
  const invalid: ComparisonProblem[] = validityProblems([control.metrics, treatment.metrics], spec.validity_floor);
  if (pairing.tasks.length === 0) invalid.push({ reason: 'no-valid-pairs', message: 'no (task, rep) pair has both attempts accepted' });
  const contaminated = controlsThatReceived(control.attempts, treatment.attempts);
  if (contaminated.length) {
    invalid.push({
      reason: 'control-received-treatment',
      attempts: contaminated,
      message: `${contaminated.length} control attempt(s) received the treatment's fingerprint in their instructions (${contaminated.slice(0, 3).join(', ')}): the arms do not differ in their treatment`,
    });
  }
  if (refused.length > 0) return { ...empty, verdict: 'refused', problems: [...refused, ...invalid] };
  if (invalid.length > 0) return { ...empty, verdict: 'invalid', problems: invalid };

  const w = spec.weights;
  const tasks = pairing.tasks;
  const scores = tasks.map((t) => ({ control: t.control.map(scored), treatment: t.treatment.map(scored) }));
  const deltas = Float64Array.from(scores, (s) => {
    let d = 0;
    for (let i = 0; i < s.control.length; i++) d += s.treatment[i]! - s.control[i]!;
    return d / s.control.length;
  });
  const effect = mean([...deltas])!;

  // Paired differences per valid pair (treatment - control), each tagged with its task.
  const diffs = { tokens: new Diffs(), weighted_cost: new Diffs(), cost_usd: new Diffs() };
  let b = 0;
  let c = 0;
  const mechanism = { pairs: 0, delivered: 0, used: 0, changed: 0, delivered_and_changed: 0 };
  const cCosts: number[] = [];
  const tCosts: number[] = [];
  tasks.forEach((t, ti) => {
    for (let i = 0; i < t.control.length; i++) {
      const ca = t.control[i]!;
      const ta = t.treatment[i]!;
      const cs = scored(ca);
      const ts = scored(ta);
      if (cs === 0 && ts === 1) b++;
      if (cs === 1 && ts === 0) c++;
      mechanism.pairs++;
      if (ta.mechanism.delivered) mechanism.delivered++;
      if (ta.mechanism.used) mechanism.used++;
      if (cs !== ts) mechanism.changed++;
      if (ta.mechanism.delivered && cs !== ts) mechanism.delivered_and_changed++;
      diffs.tokens.add(totalTokens(ta), totalTokens(ca), ti);
      const cw = weightedCost(ca, w);
      const tw = weightedCost(ta, w);
      diffs.weighted_cost.add(tw, cw, ti);
      if (cw !== null) cCosts.push(cw);
      if (tw !== null) tCosts.push(tw);
      diffs.cost_usd.add(ta.cost_usd, ca.cost_usd, ti);
    }
  });

  const plan = { ...spec.bootstrap, confidence: spec.confidence };
  const stats: ResampleStatistic[] = [
    weightedMean(deltas),
    diffs.tokens.statistic(),
    diffs.weighted_cost.statistic(),
    diffs.cost_usd.statistic(),
  ];
  const [ci, ciTokens, ciWeighted, ciUsd] = hierarchicalBootstrap(familiesOf(tasks.map((t) => t.family)), tasks.length, plan, stats);

  const envelope = noiseEnvelope(scores, spec.confidence);
  const mde = minimumDetectableEffect([...deltas], spec.confidence, spec.power);
  let positive = 0;
  let negative = 0;
  for (const d of deltas) {
    if (d > 0) positive++;
    else if (d < 0) negative++;
  }
  const p = mcnemarExactP(b, c);
  const rows = tasks.map((t) => taskOutcome(t, w));
  // No claim from arms that could see each other or the host: the numbers stand, the verdict does not.
  const claimed = verdictOf(effect, ci ?? null, envelope);
  const unisolatedArms = [controlName, treatmentName].filter((_, i) => [control, treatment][i]!.attempts.some(unisolated));
  const withheld = unisolatedArms.length > 0 && (claimed === 'positive' || claimed === 'negative');
  return {
    ...empty,
    verdict: withheld ? 'unisolated' : claimed,
    problems: withheld
      ? [{ reason: 'unisolated', arms: unisolatedArms, message: `${unisolatedArms.join(' and ')} ran without isolation (the local backend, or egress open on a shared network): the effect would be ${claimed}, but no claim is made` }]
      : [],
    delta: effect,
    ci: ci ?? null,
    envelope,
    mde,
    directional: Math.abs(effect) < mde.value - EPS,
    mcnemar: { b, c, p, p_holm: p },
    sign_test: { positive, negative, ties: tasks.length - positive - negative, p: signTestP(positive, negative) },
    paired: {
      tokens: diffs.tokens.result(ciTokens ?? null),
      weighted_cost: diffs.weighted_cost.result(ciWeighted ?? null),
      cost_usd: diffs.cost_usd.result(ciUsd ?? null),
    },
    cost_ratio: ratio(mean(tCosts), mean(cCosts)),
    mechanism,
    outcomes: { counts: countOutcomes(rows), tasks: rows },
  };
}

/** An attempt that ran without a sandbox of its own, or on a network shared with other attempts and the host. */
export function unisolated(a: AttemptRecord): boolean {
  return a.sandbox.isolation === 'none' || a.sandbox.egress_mode === 'open';
}

/**
 * within-noise when |effect| <= envelope or the interval contains 0 (or disagrees
 * with the effect's sign); positive / negative otherwise.
 */
export function verdictOf(effect: number, ci: Interval | null, envelope: NoiseEnvelope): Verdict {
  if (ci === null || Math.abs(effect) <= envelope.value + EPS) return 'within-noise';
  if (effect > 0 && ci.low > 0) return 'positive';
  if (effect < 0 && ci.high < 0) return 'negative';
  return 'within-noise';
}

class Diffs {
  private readonly values: number[] = [];
  private readonly taskOf: number[] = [];

  add(treatment: number | null, control: number | null, task: number): void {
    if (treatment === null || control === null) return;
    this.values.push(treatment - control);
    this.taskOf.push(task);
  }

  statistic(): ResampleStatistic {
    return this.values.length === 0 ? () => Number.NaN : clusteredMedian(this.values, this.taskOf);
  }

  result(ci: Interval | null): PairedDifference {
    const sorted = [...this.values].sort((x, y) => x - y);
    const n = sorted.length;
    const median = n === 0 ? null : n % 2 === 1 ? sorted[n >> 1]! : (sorted[n / 2 - 1]! + sorted[n / 2]!) / 2;
    return { n_pairs: n, median, ci: n === 0 ? null : ci };
  }
}
