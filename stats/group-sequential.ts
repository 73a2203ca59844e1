/**
 * Group-sequential boundaries by Lan-DeMets error spending, computed by the recursive
 * numerical integration of Armitage, McPherson and Rowe (1969) on the grid and Simpson
 * weights of Jennison and Turnbull (2000, ch. 19), as gsDesign computes them.
 *
 * The canonical joint distribution: at information fractions t_1 < ... < t_K (t_K = 1 at
 * the planned maximum), Z_k ~ N(theta sqrt(t_k), 1) with independent increments of
 * Z_k sqrt(t_k); theta is the drift (the expected Z at the maximum). Upper (efficacy)
 * boundaries spend alpha under theta = 0 and ignore the futility boundary (non-binding:
 * stopping for futility is optional, so the type I error holds whatever is done there);
 * lower (futility) boundaries spend beta under the design drift, which is found so the
 * last futility boundary meets the last efficacy one.
 */
import normalCdf from '@stdlib/stats-base-dists-normal-cdf';
import normalQuantile from '@stdlib/stats-base-dists-normal-quantile';

export type SpendingFunction = 'obrien-fleming' | 'pocock';

const cdf = (x: number) => (x === Infinity ? 1 : x === -Infinity ? 0 : normalCdf(x, 0, 1));
const quantile = (p: number) => normalQuantile(p, 0, 1);
const phi = (x: number) => Math.exp(-0.5 * x * x) / Math.sqrt(2 * Math.PI);

/**
 * The error spent by information fraction t (Lan and DeMets 1983): O'Brien-Fleming type
 * 2 - 2 Phi(z_{1 - total/2} / sqrt t) (gsDesign's sfLDOF), Pocock type total log(1 + (e - 1) t) (sfLDPocock).
 */
export function spent(fn: SpendingFunction, total: number, t: number): number {
  if (t <= 0) return 0;
  if (t >= 1) return total;
  if (fn === 'obrien-fleming') return 2 - 2 * cdf(quantile(1 - total / 2) / Math.sqrt(t));
  return total * Math.log(1 + (Math.E - 1) * t);
}

/** Points of the integration grid (Simpson: odd points and midpoints) with their weights. */
interface Grid {
  z: Float64Array;
  w: Float64Array;
}

/** Jennison and Turnbull's grid for N(mean, 1), restricted to [a, b]: dense near the mean, r sets its fineness. */
function gridOn(mean: number, a: number, b: number, r = 32): Grid {
  const base: number[] = [];
  for (let i = 1; i < 6 * r; i++) {
    const x = i < r ? -3 - 4 * Math.log(r / i) : i <= 5 * r ? -3 + (3 * (i - r)) / (2 * r) : 3 + 4 * Math.log(r / (6 * r - i));
    base.push(mean + x);
  }
  const xs = [Math.max(a, base[0]!), ...base.filter((x) => x > a && x < b), Math.min(b, base[base.length - 1]!)];
  const m = xs.length;
  const z = new Float64Array(2 * m - 1);
  const w = new Float64Array(2 * m - 1);
  for (let i = 0; i < m; i++) z[2 * i] = xs[i]!;
  for (let i = 0; i + 1 < m; i++) {
    const d = xs[i + 1]! - xs[i]!;
    z[2 * i + 1] = (xs[i]! + xs[i + 1]!) / 2;
    w[2 * i]! += d / 6;
    w[2 * i + 1] = (4 * d) / 6;
    w[2 * i + 2]! += d / 6;
  }
  return { z, w };
}

/** The sub-density of Z_k over the continuation region at look k (mass that has not stopped by then), on its grid. */
interface Density {
  grid: Grid;
  /** density x weight at each grid point */
  h: Float64Array;
  t: number;
}

/** Probability of Z_k >= b (or <= a), without stopping before, under drift theta. */
function crossingAt(prev: Density | null, t: number, theta: number, bound: number, side: 'up' | 'down'): number {
  if (!prev) return side === 'up' ? 1 - cdf(bound - theta * Math.sqrt(t)) : cdf(bound - theta * Math.sqrt(t));
  const dt = t - prev.t;
  const sd = Math.sqrt(dt);
  const st = Math.sqrt(t);
  const sp = Math.sqrt(prev.t);
  let p = 0;
  for (let i = 0; i < prev.h.length; i++) {
    const x = (bound * st - prev.grid.z[i]! * sp - theta * dt) / sd;
    p += prev.h[i]! * (side === 'up' ? 1 - cdf(x) : cdf(x));
  }
  return p;
}

/** The density at look k on its continuation region (a, b). */
function densityAt(prev: Density | null, t: number, theta: number, a: number, b: number): Density {
  const mean = theta * Math.sqrt(t);
  const grid = gridOn(mean, a, b);
  const h = new Float64Array(grid.z.length);
  if (!prev) {
    for (let i = 0; i < h.length; i++) h[i] = grid.w[i]! * phi(grid.z[i]! - mean);
    return { grid, h, t };
  }
  const dt = t - prev.t;
  const sd = Math.sqrt(dt);
  const st = Math.sqrt(t);
  const sp = Math.sqrt(prev.t);
  for (let i = 0; i < h.length; i++) {
    let sum = 0;
    const y = grid.z[i]! * st - theta * dt;
    for (let j = 0; j < prev.h.length; j++) sum += prev.h[j]! * phi((y - prev.grid.z[j]! * sp) / sd);
    h[i] = (grid.w[i]! * st * sum) / sd;
  }
  return { grid, h, t };
}

/** The bound at which fn(bound) = target, fn monotone: increasing when `rising`. */
function solve(fn: (x: number) => number, target: number, rising: boolean, lo = -20, hi = 20): number {
  for (let i = 0; i < 64; i++) {
    const mid = (lo + hi) / 2;
    if (fn(mid) < target === rising) lo = mid;
    else hi = mid;
  }
  return (lo + hi) / 2;
}

/**
 * Boundaries are pure functions of a few numbers and cost milliseconds to a second (a
 * futility design solves for its drift): every look of a cohort, and every cohort of a
 * simulation, asks for the same ones. Callers get copies.
 */
const computed = new Map<string, unknown>();
function memo<T>(args: unknown[], compute: () => T): T {
  const key = JSON.stringify(args);
  if (!computed.has(key)) {
    if (computed.size >= 4096) computed.clear();
    computed.set(key, compute());
  }
  return structuredClone(computed.get(key)) as T;
}

/** Far enough below any boundary to stand for minus infinity on the Z scale. */
const NO_LOWER = -40;

/** Information fractions must rise strictly and end at or below 1 (the planned maximum). */
function checkFractions(t: readonly number[]): void {
  if (t.length === 0) throw new RangeError('at least one look is needed');
  t.forEach((x, i) => {
    if (!(x > 0 && x <= 1 + 1e-12) || (i > 0 && !(x > t[i - 1]!)))
      throw new RangeError(`information fractions must rise strictly within (0, 1]: ${t.join(', ')}`);
  });
}

/**
 * Efficacy (upper) boundaries on the Z scale at information fractions t, spending `alpha`
 * (one-sided) under the null. A look that spends nothing (the same fraction as the last) has +Infinity.
 */
export function efficacyBounds(t: readonly number[], alpha: number, fn: SpendingFunction): number[] {
  return memo(['efficacy', t, alpha, fn], () => computeEfficacyBounds(t, alpha, fn));
}

function computeEfficacyBounds(t: readonly number[], alpha: number, fn: SpendingFunction): number[] {
  checkFractions(t);
  const upper: number[] = [];
  let prev: Density | null = null;
  let before = 0;
  t.forEach((tk, k) => {
    const cumulative = spent(fn, alpha, tk);
    const target = cumulative - before;
    const p = prev;
    const u = target <= 1e-15 ? Infinity : k === 0 ? quantile(1 - target) : solve((b) => crossingAt(p, tk, 0, b, 'up'), target, false);
    upper.push(u);
    before = cumulative;
    if (k + 1 < t.length) prev = densityAt(prev, tk, 0, NO_LOWER, Math.min(u, 40));
  });
  return upper;
}

/** Probability of crossing each look's upper bound (and lower, where given) under drift theta. */
export function crossingProbabilities(
  t: readonly number[],
  upper: readonly number[],
  lower: readonly number[] | null,
  theta: number,
): { up: number[]; down: number[] } {
  checkFractions(t);
  const up: number[] = [];
  const down: number[] = [];
  let prev: Density | null = null;
  t.forEach((tk, k) => {
    const u = Math.min(upper[k]!, 40);
    const l = lower ? Math.max(lower[k]!, NO_LOWER) : NO_LOWER;
    up.push(crossingAt(prev, tk, theta, u, 'up'));
    down.push(lower ? crossingAt(prev, tk, theta, l, 'down') : 0);
    if (k + 1 < t.length) prev = densityAt(prev, tk, theta, l, u);
  });
  return { up, down };
}

/** Futility (lower) bounds spending `beta` under drift theta, given the efficacy bounds (each capped at its efficacy bound). */
export function futilityBounds(t: readonly number[], upper: readonly number[], beta: number, fn: SpendingFunction, theta: number): number[] {
  return memo(['futility', t, upper, beta, fn, theta], () => computeFutilityBounds(t, upper, beta, fn, theta));
}

function computeFutilityBounds(t: readonly number[], upper: readonly number[], beta: number, fn: SpendingFunction, theta: number): number[] {
  checkFractions(t);
  const lower: number[] = [];
  let prev: Density | null = null;
  let before = 0;
  t.forEach((tk, k) => {
    const cumulative = spent(fn, beta, tk);
    const target = cumulative - before;
    const p = prev;
    const u = Math.min(upper[k]!, 40);
    const raw =
      target <= 1e-15 ? -Infinity : k === 0 ? quantile(target) + theta * Math.sqrt(tk) : solve((a) => crossingAt(p, tk, theta, a, 'down'), target, true);
    const l = Math.min(raw, u);
    lower.push(l);
    before = cumulative;
    if (k + 1 < t.length) prev = densityAt(prev, tk, theta, Math.max(l, NO_LOWER), u);
  });
  return lower;
}

export interface GroupSequentialDesign {
  /** Planned information fractions (equally spaced unless given). */
  fractions: number[];
  upper: number[];
  /** Non-binding futility bounds, or null without futility. */
  lower: number[] | null;
  /** The drift (expected Z at the maximum) at which the design has its power. */
  theta: number;
  /** Maximum information relative to the fixed design of the same alpha and power: (theta / (z_{1-alpha} + z_{power}))^2. */
  inflation: number;
  /** Expected information (fraction of the maximum) at stopping, under the design drift and under no effect. */
  expected_fraction: { alternative: number; null: number };
}

/** A one-sided group-sequential design: K looks at `fractions`, alpha, power, spending; futility non-binding (beta spent by the same function). */
export function groupSequentialDesign(opts: {
  looks: number;
  alpha: number;
  power: number;
  spending: SpendingFunction;
  futility: boolean;
  fractions?: number[];
}): GroupSequentialDesign {
  return memo(['design', opts], () => computeDesign(opts));
}

function computeDesign(opts: Parameters<typeof groupSequentialDesign>[0]): GroupSequentialDesign {
  const t = opts.fractions ?? Array.from({ length: opts.looks }, (_, k) => (k + 1) / opts.looks);
  const upper = efficacyBounds(t, opts.alpha, opts.spending);
  const beta = 1 - opts.power;
  let theta: number;
  let lower: number[] | null = null;
  if (!opts.futility) {
    theta = solve((th) => crossingProbabilities(t, upper, null, th).up.reduce((a, b) => a + b, 0), opts.power, true, 0, 20);
  } else {
    // The drift at which the last futility bound meets the last efficacy bound (gsDesign's test.type 4).
    const gap = (th: number) => {
      const l = futilityBounds(t, upper, beta, opts.spending, th);
      return l[l.length - 1]! - upper[upper.length - 1]!;
    };
    theta = solve(gap, 0, true, 0, 20);
    lower = futilityBounds(t, upper, beta, opts.spending, theta);
    lower[lower.length - 1] = upper[upper.length - 1]!;
  }
  const fixed = quantile(1 - opts.alpha) + quantile(opts.power);
  const expected = (th: number) => {
    const { up, down } = crossingProbabilities(t, upper, lower, th);
    let stopped = 0;
    let e = 0;
    t.forEach((tk, k) => {
      const p = k === t.length - 1 ? 1 - stopped : up[k]! + down[k]!;
      e += tk * p;
      stopped += p;
    });
    return e;
  };
  return { fractions: t, upper, lower, theta, inflation: (theta / fixed) ** 2, expected_fraction: { alternative: expected(theta), null: expected(0) } };
}
