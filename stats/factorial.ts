/** Factorial cohorts (e.g. 2x2 raw/graph/rules/full): main effects and the interaction. */
import { refusalProblems, validityProblems } from './arm-config.js';
import { scored } from './arm-metrics.js';
import { alphaOf, clusterTInterval, degenerate, minimumP, signFlipTest, unitsNeeded, unitsOf } from './inference.js';
import type { ArmInput } from './compare.js';
import type { AnalysisSpec, ComparisonProblem, ConfigField, FactorialEffect, FactorialResult, FactorialSpec } from './types.js';

export const MAIN_EFFECT_FORMULA =
  'main effect of F = mean over tasks of (mean of Y over cells with F = 1 - mean of Y over cells with F = 0), ' +
  "Y = the task's pass rate over its accepted attempts in that cell";
export const INTERACTION_FORMULA = 'interaction = mean over tasks of (Y11 - Y10) - (Y01 - Y00), Y_ab = cell with first factor a, second factor b';

type Problem = Extract<ComparisonProblem, { reason: 'factorial-design' }>;

/** `crossed`: config fields a factor varies by design (a model, an agent), so cells may differ in them. */
export function analyzeFactorial(
  f: FactorialSpec,
  arms: ReadonlyMap<string, ArmInput>,
  spec: AnalysisSpec,
  crossed: readonly ConfigField[] = [],
): FactorialResult {
  const cells = Object.entries(f.levels)
    .map(([arm, levels]) => ({ arm, levels }))
    .sort((x, y) => (x.arm < y.arm ? -1 : x.arm > y.arm ? 1 : 0));
  const base: FactorialResult = {
    status: 'invalid',
    problems: [],
    factors: f.factors,
    cells,
    n_tasks: 0,
    main_effects: [],
    interaction: null,
  };
  const design = designProblems(f, cells, arms);
  if (design.length > 0) return { ...base, problems: design };

  const inputs = cells.map((c) => arms.get(c.arm)!);
  // every pair of cells, so two cells far apart in infra-error rate refuse even when both are near a third
  const metrics = inputs.map((i) => i.metrics);
  const seen = new Set<string>();
  const refused = metrics
    .flatMap((m, i) => refusalProblems(m, metrics.slice(i + 1), spec.infra_error_threshold, crossed))
    .filter((p) => !seen.has(p.message) && seen.add(p.message) !== undefined);
  const invalid = validityProblems(
    inputs.map((i) => i.metrics),
    spec.validity_floor,
  );
  if (refused.length > 0) return { ...base, status: 'refused', problems: [...refused, ...invalid] };
  if (invalid.length > 0) return { ...base, problems: invalid };

  // Y[cell][task]: pass rate over the cell's accepted attempts of the task.
  const rates = inputs.map((input) => {
    const m = new Map<string, { n: number; c: number; family: string }>();
    for (const a of input.attempts) {
      if (a.admission !== 'accepted') continue;
      const r = m.get(a.task) ?? { n: 0, c: 0, family: a.family };
      r.n++;
      r.c += scored(a);
      m.set(a.task, r);
    }
    return m;
  });
  const tasks = [...rates[0]!.keys()].filter((t) => rates.every((m) => m.has(t))).sort();
  if (tasks.length === 0) {
    return { ...base, problems: [{ reason: 'factorial-design', message: 'no task has an accepted attempt in every cell' }] };
  }
  const y = (cell: number, task: string): number => {
    const r = rates[cell]!.get(task)!;
    return r.c / r.n;
  };
  const perTask: Array<{ name: string; formula: string; values: Float64Array }> = f.factors.map((factor) => {
    const on = cells.flatMap((c, i) => (c.levels[factor] === 1 ? [i] : []));
    const off = cells.flatMap((c, i) => (c.levels[factor] === 0 ? [i] : []));
    return {
      name: factor,
      formula: MAIN_EFFECT_FORMULA,
      values: Float64Array.from(tasks, (t) => avg(on.map((i) => y(i, t))) - avg(off.map((i) => y(i, t)))),
    };
  });
  let hasInteraction = false;
  if (f.factors.length === 2) {
    const [fa, fb] = f.factors as [string, string];
    const cellOf = (a: 0 | 1, b: 0 | 1): number => cells.findIndex((c) => c.levels[fa] === a && c.levels[fb] === b);
    const [c11, c10, c01, c00] = [cellOf(1, 1), cellOf(1, 0), cellOf(0, 1), cellOf(0, 0)];
    perTask.push({
      name: `${fa} x ${fb}`,
      formula: INTERACTION_FORMULA,
      values: Float64Array.from(tasks, (t) => y(c11, t) - y(c10, t) - (y(c01, t) - y(c00, t))),
    });
    hasInteraction = true;
  }
  const familyNames = tasks.map((t) => rates[0]!.get(t)!.family);
  const alpha = alphaOf(spec.confidence);
  const effects: FactorialEffect[] = perTask.map((p) => {
    const units = unitsOf(p.values, familyNames);
    const k = units.sums.length;
    const flip = signFlipTest(units.sums, spec.bootstrap.seed);
    return {
      name: p.name,
      estimate: avg([...p.values]),
      // A main effect is a difference of pass rates, in [-1, 1]; the interaction a difference of two, in [-2, 2].
      ci: clusterTInterval(units, spec.confidence, p.formula === INTERACTION_FORMULA ? [-2, 2] : [-1, 1]),
      n_tasks: tasks.length,
      formula: p.formula,
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
      verdict: 'within-noise',
    };
  });
  return {
    ...base,
    status: 'ok',
    n_tasks: tasks.length,
    main_effects: effects.slice(0, f.factors.length),
    interaction: hasInteraction ? effects[f.factors.length]! : null,
  };
}

/** Each effect's verdict, once its p is Holm-adjusted with the cohort's `m` comparisons (the rule of decide()). */
export function decideFactorial(f: FactorialResult, m: number): void {
  decideEffects([...f.main_effects, ...(f.interaction ? [f.interaction] : [])], m);
}

/** Each tested effect's verdict, once its p is Holm-adjusted with the cohort's `m` tests. */
export function decideEffects(effects: readonly FactorialEffect[], m: number): void {
  for (const e of effects) {
    if (!e.test) continue;
    e.test.units_needed = unitsNeeded(e.test.alpha, m);
    if (e.test.n_units < e.test.units_needed) {
      e.verdict = 'insufficient-n';
      continue;
    }
    const side = e.estimate > 0 ? 1 : -1;
    const claim =
      e.test.p_holm <= e.test.alpha + 1e-12 && !degenerate(e.ci) && (side > 0 ? e.ci!.low > 0 : e.ci!.high < 0) && Math.abs(e.estimate) > 1 / e.n_tasks;
    e.verdict = claim ? (side > 0 ? 'positive' : 'negative') : 'within-noise';
  }
}

function avg(xs: readonly number[]): number {
  let s = 0;
  for (const x of xs) s += x;
  return s / xs.length;
}

function designProblems(
  f: FactorialSpec,
  cells: ReadonlyArray<{ arm: string; levels: Record<string, 0 | 1> }>,
  arms: ReadonlyMap<string, ArmInput>,
): Problem[] {
  const problems: Problem[] = [];
  const seen = new Map<string, string>();
  for (const c of cells) {
    if (!arms.has(c.arm)) problems.push({ reason: 'factorial-design', message: `cell arm "${c.arm}" has no attempts` });
    const key = f.factors.map((x) => `${x}=${c.levels[x]}`).join(' ');
    const other = seen.get(key);
    if (other !== undefined) problems.push({ reason: 'factorial-design', message: `arms "${other}" and "${c.arm}" are the same cell (${key})` });
    else seen.set(key, c.arm);
  }
  for (const factor of f.factors) {
    const levels = new Set(cells.map((c) => c.levels[factor]));
    if (!levels.has(0) || !levels.has(1)) {
      problems.push({ reason: 'factorial-design', message: `factor "${factor}" needs a cell at level 0 and a cell at level 1` });
    }
  }
  if (f.factors.length === 2 && seen.size !== 4) {
    problems.push({ reason: 'factorial-design', message: `a 2x2 design needs 4 distinct cells (got ${seen.size})` });
  }
  return problems;
}
