/** One paired comparison: control vs a treatment, with its verdict. */
import { refusalProblems, validityProblems } from './arm-config.js';
import { scored } from './arm-metrics.js';
import { clusterBootstrap, clusteredMedian, familiesOf, weightedMean, type ResampleStatistic } from './bootstrap.js';
import { alphaOf, clusterTInterval, degenerate, minimumP, signFlipTest, unitsNeeded, unitsOf } from './inference.js';
import { totalTokens, weightedCost } from './cost.js';
import { mean, ratio } from './describe.js';
import { minimumDetectableEffect, noiseEnvelope } from './envelope.js';
import { mcnemarExactP, signTestP } from './exact-tests.js';
import { countOutcomes, taskOutcome } from './outcomes.js';
import { pairAttempts } from './pairing.js';
import type { AnalysisSpec, ArmMetrics, AttemptRecord, Comparison, ComparisonProblem, Interval, PairedDifference, Verdict } from './types.js';

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

/**
 * A comparison before its verdict: every figure, and what deciding it needs that the
 * result does not keep (the isolation of its attempts, its excluded pairs). The
 * verdict waits for Holm's adjustment over every comparison of the cohort (decide()).
 */
export interface Compared {
  comparison: Comparison;
  unisolatedArms: string[];
  /** The effect, test and interval with excluded pairs imputed against a claim of this sign. */
  worstCase: ((sign: 1 | -1) => { effect: number; p: number; ci: Comparison['ci'] }) | null;
}

/** The verdict is provisional here ('within-noise' unless refused or invalid); decide() sets it. */
export function compareArms(
  controlName: string,
  treatmentName: string,
  control: ArmInput | undefined,
  treatment: ArmInput | undefined,
  spec: AnalysisSpec,
): Compared {
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
    test: null,
    mcnemar: null,
    sign_test: null,
    lost_tasks: pairing.lostTasks,
    worst_case: null,
    paired: null,
    cost_ratio: null,
    outcomes: null,
    mechanism: null,
  };
  const bare = (comparison: Comparison): Compared => ({ comparison, unisolatedArms: [], worstCase: null });
  if (!control || !treatment) {
    const missing = [!control ? controlName : null, !treatment ? treatmentName : null].filter((x): x is string => x !== null);
    return bare({
      ...empty,
      problems: missing.map((arm) => ({ reason: 'arm-missing', arm, message: `arm "${arm}" has no attempts` })),
    });
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
  if (refused.length > 0) return bare({ ...empty, verdict: 'refused', problems: [...refused, ...invalid] });
  if (invalid.length > 0) return bare({ ...empty, verdict: 'invalid', problems: invalid });

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
  const diffs = {
    tokens: new Diffs(),
    weighted_cost: new Diffs(),
    cost_usd: new Diffs(),
    turns: new Diffs(),
    tool_calls: new Diffs(),
    reasoning_tokens: new Diffs(),
  };
  // Per task: the summed weighted cost of each side over the pairs where both have one (the cost ratio's bootstrap).
  const costSums = { treatment: new Float64Array(pairing.tasks.length), control: new Float64Array(pairing.tasks.length) };
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
      diffs.turns.add(ta.turns, ca.turns, ti);
      diffs.tool_calls.add(ta.tool_calls, ca.tool_calls, ti);
      diffs.reasoning_tokens.add(ta.usage?.reasoning_tokens ?? null, ca.usage?.reasoning_tokens ?? null, ti);
      if (cw !== null && tw !== null) {
        costSums.treatment[ti] = costSums.treatment[ti]! + tw;
        costSums.control[ti] = costSums.control[ti]! + cw;
      }
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
    diffs.turns.statistic(),
    diffs.tool_calls.statistic(),
    diffs.reasoning_tokens.statistic(),
    ratioOfSums(costSums.treatment, costSums.control),
  ];
  const families = tasks.map((t) => t.family);
  const [, ciTokens, ciWeighted, ciUsd, ciTurns, ciTools, ciReasoning, ciRatio] = clusterBootstrap(familiesOf(families), tasks.length, plan, stats);
  // The test and the interval, at the level where observations are independent (inference.ts).
  const units = unitsOf(deltas, families);
  const k = units.sums.length;
  const ci = clusterTInterval(units, spec.confidence);
  const flip = signFlipTest(units.sums, spec.bootstrap.seed);
  const alpha = alphaOf(spec.confidence);

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
  const unisolatedArms = [controlName, treatmentName].filter((_, i) => [control, treatment][i]!.attempts.some(unisolated));

  // Worst case: every excluded pair (and every pair of a task that lost them all) scored against the claim.
  const excludedByTask = new Map<string, { family: string; n: number }>();
  for (const x of pairing.excludedPairs) {
    const e = excludedByTask.get(x.task) ?? { family: x.family, n: 0 };
    e.n++;
    excludedByTask.set(x.task, e);
  }
  const worstCase =
    excludedByTask.size === 0
      ? null
      : (sign: 1 | -1) => {
          const all = new Map<string, { family: string; sum: number; n: number }>();
          tasks.forEach((t, i) => all.set(t.task, { family: t.family, sum: deltas[i]! * t.control.length, n: t.control.length }));
          for (const [task, e] of excludedByTask) {
            const row = all.get(task) ?? { family: e.family, sum: 0, n: 0 };
            row.sum -= sign * e.n; // treatment fails and control passes (or the reverse)
            row.n += e.n;
            all.set(task, row);
          }
          const rowsW = [...all.values()];
          const dW = Float64Array.from(rowsW, (r) => r.sum / r.n);
          const uW = unitsOf(
            dW,
            rowsW.map((r) => r.family),
          );
          return { effect: mean([...dW])!, p: signFlipTest(uW.sums, spec.bootstrap.seed).p, ci: clusterTInterval(uW, spec.confidence) };
        };

  const comparison: Comparison = {
    ...empty,
    verdict: 'within-noise',
    problems: [],
    ...(unisolatedArms.length ? { unisolated_arms: unisolatedArms } : {}),
    delta: effect,
    ci,
    envelope,
    mde,
    directional: mde.value === null ? null : Math.abs(effect) < mde.value - EPS,
    test: {
      method: 'sign-flip',
      unit: units.kind,
      n_units: k,
      p: flip.p,
      p_holm: flip.p,
      exact: flip.exact,
      samples: flip.samples,
      min_p: minimumP(k),
      units_needed: unitsNeeded(alpha, 1),
      alpha,
    },
    mcnemar: { b, c, p, p_holm: p },
    sign_test: { positive, negative, ties: tasks.length - positive - negative, p: signTestP(positive, negative) },
    paired: {
      tokens: diffs.tokens.result(ciTokens ?? null),
      weighted_cost: diffs.weighted_cost.result(ciWeighted ?? null),
      cost_usd: diffs.cost_usd.result(ciUsd ?? null),
      turns: diffs.turns.result(ciTurns ?? null),
      tool_calls: diffs.tool_calls.result(ciTools ?? null),
      ...(diffs.reasoning_tokens.size() > 0 ? { reasoning_tokens: diffs.reasoning_tokens.result(ciReasoning ?? null) } : {}),
    },
    cost_ratio: ratio(mean(tCosts), mean(cCosts)),
    cost_ratio_ci: ratio(mean(tCosts), mean(cCosts)) === null ? null : (ciRatio ?? null),
    mechanism,
    outcomes: { counts: countOutcomes(rows), tasks: rows },
  };
  return { comparison, unisolatedArms, worstCase };
}

/**
 * The verdict, once the test's p is Holm-adjusted over the cohort's `m` comparisons.
 * A claim (positive / negative) needs all of: enough units for the test to reach alpha
 * at all (else insufficient-n), the adjusted p at or under alpha, an interval of
 * non-zero width that excludes 0 on the effect's side, the effect beyond the noise
 * envelope, the claim surviving every excluded pair imputed against it, and isolated arms.
 */
export function decide(compared: Compared, m: number): Comparison {
  const c = compared.comparison;
  if (c.verdict === 'refused' || c.verdict === 'invalid' || !c.test || c.delta === null || !c.envelope) return c;
  const alpha = c.test.alpha;
  c.test.units_needed = unitsNeeded(alpha, m);
  const problems: ComparisonProblem[] = [];
  if (c.test.n_units < c.test.units_needed) {
    const unit = c.test.unit === 'family' ? 'families' : 'tasks';
    problems.push({
      reason: 'insufficient-n',
      n_units: c.test.n_units,
      units_needed: c.test.units_needed,
      message:
        `with ${c.test.n_units} ${unit} the smallest p the test can give is ${c.test.min_p.toPrecision(3)}, above alpha ${alpha}${m > 1 ? ` / ${m} comparisons` : ''}: ` +
        `no claim is possible below ${c.test.units_needed} ${unit}; the figures are descriptive`,
    });
    if (c.mde) c.mde = { ...c.mde, value: null, not_computable: `not computable at this n: the test cannot reach alpha with ${c.test.n_units} ${unit}` };
    c.directional = null;
    return { ...c, verdict: 'insufficient-n', problems: [...c.problems, ...problems] };
  }
  const effect = c.delta;
  const side = effect > 0 ? 1 : -1;
  // The first condition a claim does not meet, or null. An interval of no width because every unit
  // moved alike is the effect itself: the exact test decides (it does not turn evidence into noise).
  const unmet = (p: number, ci: Comparison['ci'], e: number): ComparisonProblem | null => {
    if (p > alpha + 1e-12)
      return {
        reason: 'no-claim',
        condition: 'test',
        message: `the ${c.test!.unit}-level sign-flip test's adjusted p ${p.toPrecision(3)} is above alpha ${alpha}`,
      };
    const usable = ci !== null && (!degenerate(ci) || ci.degenerate !== undefined);
    if (!usable || !(side > 0 ? ci!.low > 0 : ci!.high < 0) || Math.sign(e) !== side)
      return {
        reason: 'no-claim',
        condition: 'interval',
        message: ci ? `its ${Math.round(ci.confidence * 100)}% interval [${pp(ci.low)}, ${pp(ci.high)}] does not exclude 0` : 'no interval could be computed',
      };
    if (Math.abs(e) <= c.envelope!.value + EPS)
      return {
        reason: 'no-claim',
        condition: 'envelope',
        message: `the effect ${pp(e)} is inside the noise envelope ±${pp(c.envelope!.value).replace(/^\+/, '')}`,
      };
    return null;
  };
  const claims = (p: number, ci: Comparison['ci'], e: number) => unmet(p, ci, e) === null;
  const first = unmet(c.test.p_holm, c.ci, effect);
  let verdict: Verdict = first === null ? (side > 0 ? 'positive' : 'negative') : 'within-noise';
  if (first) problems.push(first);
  if (verdict !== 'within-noise' && compared.worstCase) {
    const w = compared.worstCase(side);
    // Judged at the same Holm step as the observed p: the adjusted/raw ratio carries over.
    const pAdjusted = Math.min(1, w.p * (c.test.p > 0 ? c.test.p_holm / c.test.p : m));
    const survives = claims(pAdjusted, w.ci, w.effect);
    c.worst_case = { effect: w.effect, p: pAdjusted, ci: w.ci, survives };
    if (!survives) {
      problems.push({
        reason: 'exclusions-against-claim',
        message: `with the ${c.pairs.excluded} excluded pair(s) scored against it the effect would be ${(w.effect * 100).toFixed(1)} pp (p ${pAdjusted.toPrecision(3)}): the claim does not survive them`,
      });
      verdict = 'within-noise';
    }
  }
  if ((verdict === 'positive' || verdict === 'negative') && compared.unisolatedArms.length) {
    problems.push(unisolatedProblem(compared.unisolatedArms, verdict));
    verdict = 'unisolated';
  }
  return { ...c, verdict, problems: [...c.problems, ...problems] };
}

/** Why a claim an unisolated arm would make is not made. */
export function unisolatedProblem(arms: readonly string[], wouldBe: 'positive' | 'negative'): ComparisonProblem {
  return {
    reason: 'unisolated',
    arms: [...arms],
    message: `${arms.join(' and ')} ran without isolation (the local backend, or egress open on a shared network): the effect would be ${wouldBe}, but no claim is made`,
  };
}

/** A difference of rates in percentage points, signed: +12.5 pp. */
function pp(x: number): string {
  return `${x >= 0 ? '+' : ''}${(Math.round(x * 1000) / 10).toFixed(1)} pp`;
}

/** An attempt that ran without a sandbox of its own, or on a network shared with other attempts and the host. */
export function unisolated(a: AttemptRecord): boolean {
  return a.sandbox.isolation === 'none' || a.sandbox.egress_mode === 'open';
}

class Diffs {
  private readonly values: number[] = [];
  private readonly taskOf: number[] = [];

  add(treatment: number | null, control: number | null, task: number): void {
    if (treatment === null || control === null) return;
    this.values.push(treatment - control);
    this.taskOf.push(task);
  }

  size(): number {
    return this.values.length;
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

/** sum(counts x treatment) / sum(counts x control) over the drawn tasks (NaN when the control sums to 0). */
function ratioOfSums(treatment: Float64Array, control: Float64Array): ResampleStatistic {
  return (counts) => {
    let t = 0;
    let c = 0;
    for (let i = 0; i < counts.length; i++) {
      const k = counts[i]!;
      if (k !== 0) {
        t += k * treatment[i]!;
        c += k * control[i]!;
      }
    }
    return c > 0 ? t / c : Number.NaN;
  };
}
