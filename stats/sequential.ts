/**
 * Sequential stopping over families (spec.stopping). The unit is the family (tasks of one
 * family are dependent); families come in a preregistered order (spec.stopping.schedule:
 * the families of each look), and a look uses a family only once all its pairs are in.
 *
 * group-sequential: the statistic at a look is the cohort's verdict test, the exact
 * sign-flip test on the families' summed deltas, put on the Z scale:
 * Z = sign(sum) x Phi^-1(1 - p / 2). Its sum of family deltas is a sum of independent
 * increments with randomization variance sum(s_f^2), so Z has (as families are added) the
 * joint distribution the boundaries assume; taking it from the exact p keeps the
 * discreteness of a small cohort conservative, as the fixed-N test is. (A Monte Carlo p,
 * past 20 families, is at least 1 / 20,001: Z at most 4.06, so a first O'Brien-Fleming
 * boundary above it cannot be crossed.) Efficacy boundaries spend alpha at the observed information fractions
 * (families / the planned maximum); a crossing either way stops with a claim. The interval
 * after a look is the repeated confidence interval (Jennison and Turnbull 2000, ch. 9):
 * the estimate +- the look's boundary x its cluster-robust standard error.
 *
 * confidence-sequence: a betting confidence sequence on family deltas, mapped from [-1, 1]
 * to [0, 1]; it is looked at after every family and stops once it excludes 0.
 */
import { excludeFlakyTasks } from './flaky-tasks.js';
import { scored } from './arm-metrics.js';
import { unisolatedProblem } from './compare.js';
import { bettingConfidenceSequence } from './confidence-sequence.js';
import { efficacyBounds, futilityBounds, groupSequentialDesign, type GroupSequentialDesign } from './group-sequential.js';
import normalQuantile from '@stdlib/stats-base-dists-normal-quantile';
import { alphaOf, signFlipTest, unitsOf } from './inference.js';
import { plannedFamilies } from './look-schedule.js';
import { pairAttempts } from './pairing.js';
import type { AnalysisSpec, AttemptRecord, Comparison, Interval, SequentialLook, SequentialResult, StoppingSpec, Verdict } from './types.js';

/** The stopping spec with its defaults filled from the analysis spec. */
export function stoppingOf(spec: AnalysisSpec): Required<Omit<StoppingSpec, 'schedule'>> & { schedule: string[][] } {
  const s = spec.stopping!;
  const twoSided = alphaOf(spec.confidence);
  return {
    rule: s.rule,
    looks: s.rule === 'confidence-sequence' ? (s.schedule?.length ?? 0) : (s.looks ?? 1),
    alpha: s.alpha ?? (s.rule === 'confidence-sequence' ? twoSided : twoSided / 2),
    power: s.power ?? spec.power,
    spending: s.spending ?? 'obrien-fleming',
    futility: s.futility ?? 'none',
    schedule: s.schedule ?? [],
  };
}

const quantile = (p: number) => normalQuantile(p, 0, 1);

interface LookData {
  families: number;
  pending: string[];
  estimate: number | null;
  statistic: number | null;
  se: number | null;
  /** Per family: mean task delta, in the preregistered order. */
  familyMeans: number[];
}

/** The look's statistic over the given families (minus those with an infrastructure fault pending). */
function lookData(attempts: readonly AttemptRecord[], spec: AnalysisSpec, families: readonly string[]): LookData {
  const inLook = new Set(families);
  const arms = new Set([spec.control, spec.treatments[0]!]);
  const mine = attempts.filter((a) => inLook.has(a.family) && arms.has(a.arm));
  const pending = [...new Set(mine.filter((a) => a.infra_error).map((a) => a.family))].sort();
  const used = mine.filter((a) => !pending.includes(a.family));
  const pairing = pairAttempts(
    used.filter((a) => a.arm === spec.control),
    used.filter((a) => a.arm === spec.treatments[0]),
  );
  const deltas = pairing.tasks.map((t) => {
    let d = 0;
    for (let i = 0; i < t.control.length; i++) d += scored(t.treatment[i]!) - scored(t.control[i]!);
    return d / t.control.length;
  });
  const taskFamilies = pairing.tasks.map((t) => t.family);
  const units = unitsOf(deltas, taskFamilies);
  const k = units.sums.length;
  let total = 0;
  // Only whether any family moved: a look where none did has statistic 0.
  let squares = 0;
  let nTasks = 0;
  for (let u = 0; u < k; u++) {
    total += units.sums[u]!;
    squares += units.sums[u]! ** 2;
    nTasks += units.sizes[u]!;
  }
  const estimate = nTasks > 0 ? total / nTasks : null;
  let se: number | null = null;
  if (k >= 2 && estimate !== null) {
    let ss = 0;
    for (let u = 0; u < k; u++) ss += (units.sums[u]! - units.sizes[u]! * estimate) ** 2;
    se = Math.sqrt((k / (k - 1)) * ss) / nTasks;
  }
  // Family means in the preregistered order (families without a valid pair carry nothing).
  const byFamily = new Map<string, { sum: number; n: number }>();
  deltas.forEach((d, i) => {
    const f = byFamily.get(taskFamilies[i]!) ?? { sum: 0, n: 0 };
    byFamily.set(taskFamilies[i]!, { sum: f.sum + d, n: f.n + 1 });
  });
  const familyMeans = families.filter((f) => byFamily.has(f)).map((f) => byFamily.get(f)!.sum / byFamily.get(f)!.n);
  // The verdict's own test on the look's families, on the Z scale: sign x the normal quantile of its two-sided p.
  const p = k === 0 ? 1 : signFlipTest(units.sums, spec.bootstrap.seed).p;
  const statistic = k === 0 ? null : squares === 0 || p >= 1 ? 0 : Math.sign(total) * quantile(1 - p / 2);
  return { families: k, pending, estimate, statistic, se, familyMeans };
}

const BIAS_NOTE =
  'An estimate at an early stop is biased away from zero (upward for a benefit): a cohort stops when its estimate happens to be high. ' +
  'The repeated confidence interval keeps its coverage whenever the cohort stops; the point estimate does not.';

/**
 * Every look up to `upTo` (default: all), decided in order; looks after a stop are
 * `stopped-earlier`. Pure: the same attempts and spec give the same looks, so a look
 * node and the final analysis agree.
 */
export function sequentialAnalysis(audited: readonly AttemptRecord[], spec: AnalysisSpec, upTo?: number): SequentialResult {
  // A flaky verifier's task is out whole (all its attempts are in one family, so in one look).
  const attempts = excludeFlakyTasks(audited).attempts;
  const s = stoppingOf(spec);
  const maxFamilies = s.schedule.reduce((n, g) => n + g.length, 0);
  const lastLook = Math.min(upTo ?? s.schedule.length, s.schedule.length);
  const looks: SequentialLook[] = [];
  const notes: string[] = [];
  let stoppedAt: number | null = null;
  let design: GroupSequentialDesign | null = null;
  if (s.rule === 'group-sequential') {
    design = groupSequentialDesign({
      looks: s.schedule.length,
      alpha: s.alpha,
      power: s.power,
      spending: s.spending,
      futility: s.futility === 'non-binding',
      fractions: plannedFamilies(maxFamilies, s.schedule.length).map((n) => n / maxFamilies),
    });
  }
  // The information fractions of the looks so far that added information (boundaries are computed over these).
  const fractions: number[] = [];
  const uppers: number[] = [];
  let seen: string[] = [];
  for (let k = 1; k <= lastLook; k++) {
    seen = [...seen, ...s.schedule[k - 1]!];
    const planned = seen.length;
    if (stoppedAt !== null) {
      looks.push({
        look: k,
        families: 0,
        planned_families: planned,
        fraction: 0,
        estimate: null,
        statistic: null,
        upper: null,
        lower: null,
        interval: null,
        decision: 'stopped-earlier',
        pending_families: [],
      });
      continue;
    }
    const d = lookData(attempts, spec, seen);
    const final = k === s.schedule.length;
    const fraction = d.families / maxFamilies;
    const look: SequentialLook = {
      look: k,
      families: d.families,
      planned_families: planned,
      fraction,
      estimate: d.estimate,
      statistic: d.statistic,
      upper: null,
      lower: null,
      interval: null,
      decision: final ? 'final' : 'continue',
      pending_families: d.pending,
    };
    if (s.rule === 'confidence-sequence') {
      const cs = bettingConfidenceSequence(
        d.familyMeans.map((x) => (x + 1) / 2),
        s.alpha,
      ).intervals;
      const last = cs[cs.length - 1];
      if (last) {
        look.interval = { low: 2 * last.low - 1, high: 2 * last.high - 1 };
        if (look.interval.low > 0) look.decision = 'efficacy';
        else if (look.interval.high < 0) look.decision = 'harm';
      }
    } else if (d.statistic !== null && (fractions.length === 0 || (final ? 1 : fraction) > fractions[fractions.length - 1]! + 1e-12)) {
      // The last look spends whatever alpha is left, whatever information it reached.
      fractions.push(final ? 1 : Math.min(fraction, 1 - 1e-6));
      const bounds = efficacyBounds(fractions, s.alpha, s.spending);
      const u = bounds[bounds.length - 1]!;
      uppers.push(u);
      look.upper = Number.isFinite(u) ? u : null;
      if (design && s.futility === 'non-binding') {
        const lower = futilityBounds(fractions, uppers, 1 - s.power, s.spending, design.theta);
        look.lower = final ? u : lower[lower.length - 1]!;
      }
      // Clipped to [-1, 1]: no difference of pass rates lies outside it.
      if (d.estimate !== null && d.se !== null && Number.isFinite(u))
        look.interval = { low: Math.max(-1, d.estimate - u * d.se), high: Math.min(1, d.estimate + u * d.se) };
      if (d.statistic >= u) look.decision = 'efficacy';
      else if (d.statistic <= -u) look.decision = 'harm';
      else if (look.lower !== null && d.statistic < look.lower && !final) look.decision = 'futility';
    } else if (d.statistic !== null) {
      notes.push(`Look ${k} added no family with all its pairs in: no alpha was spent there.`);
    }
    if (look.decision === 'efficacy' || look.decision === 'harm' || look.decision === 'futility') stoppedAt = k;
    looks.push(look);
  }
  const at = stoppedAt !== null ? looks[stoppedAt - 1]! : looks[looks.length - 1];
  const done = stoppedAt !== null || lastLook === s.schedule.length;
  const decision: SequentialResult['decision'] =
    at?.decision === 'efficacy' || at?.decision === 'harm' || at?.decision === 'futility' ? at.decision : done ? 'no-claim' : 'continue';
  const confidence = s.rule === 'confidence-sequence' ? 1 - s.alpha : 1 - 2 * s.alpha;
  const interval = at?.interval
    ? { ...at.interval, confidence, method: s.rule === 'confidence-sequence' ? ('betting-cs' as const) : ('repeated-ci' as const) }
    : null;
  if (stoppedAt !== null && stoppedAt < s.schedule.length && decision !== 'futility') notes.push(BIAS_NOTE);
  const pendingAnywhere = looks.some((l) => l.pending_families.length > 0);
  if (pendingAnywhere)
    notes.push('A look left out families whose attempts had an infrastructure fault still to retry (pending_families); they count once retried.');
  return {
    rule: s.rule,
    max_families: maxFamilies,
    looks,
    stopped_at: stoppedAt,
    decision,
    interval,
    design: design
      ? { spending: s.spending, alpha: s.alpha, power: s.power, theta: design.theta, inflation: design.inflation, futility: s.futility }
      : { spending: 'betting (hedged, predictable plug-in)', alpha: s.alpha, power: s.power, theta: null, inflation: null, futility: 'none' },
    notes,
  };
}

/**
 * The comparison's verdict under a sequential design: a claim needs the boundary crossed in
 * the effect's direction (or the confidence sequence to exclude 0), besides what a fixed-N
 * claim needs apart from its p (an interval of non-zero width, an effect beyond the noise
 * envelope, exclusions imputed against it, isolation). The interval becomes the repeated
 * one. Refused, invalid and insufficient-n verdicts stand.
 */
export function applySequential(c: Comparison, seq: SequentialResult, unisolatedArms: readonly string[]): Comparison {
  if (c.verdict === 'refused' || c.verdict === 'invalid' || c.verdict === 'insufficient-n' || c.delta === null) return c;
  const ci: Interval | null = seq.interval
    ? { low: seq.interval.low, high: seq.interval.high, confidence: seq.interval.confidence, method: seq.interval.method, resamples: null, seed: null }
    : null;
  const side = c.delta > 0 ? 'efficacy' : 'harm';
  const crossed = seq.decision === side;
  const beyondNoise = c.envelope ? Math.abs(c.delta) > c.envelope.value : true;
  const survives = c.worst_case ? c.worst_case.survives : true;
  const problems = [...c.problems];
  let verdict: Verdict;
  if (crossed && beyondNoise && survives && ci && ci.high - ci.low > 1e-12) {
    verdict = side === 'efficacy' ? 'positive' : 'negative';
    // Isolation is judged here too, whatever the fixed-N verdict was: a sequential claim needs it as much.
    if (unisolatedArms.length) {
      if (!problems.some((p) => p.reason === 'unisolated')) problems.push(unisolatedProblem(unisolatedArms, verdict));
      verdict = 'unisolated';
    }
  } else {
    verdict = 'within-noise';
    const why =
      seq.decision === 'futility'
        ? `stopped for futility at look ${seq.stopped_at}: no claim`
        : seq.decision === 'continue'
          ? `look ${seq.looks.length} did not cross its boundary; the cohort continues to its next look`
          : crossed
            ? 'the boundary was crossed, but the claim does not hold (noise envelope, exclusions or interval)'
            : 'no look crossed its boundary in the direction of the effect: no claim';
    problems.push({ reason: 'sequential', message: why });
  }
  return { ...c, verdict, ci, problems };
}
