/** Small descriptive statistics over plain arrays. Empty input gives null, never NaN. */
import type { Spread, SpreadWithTotal } from './types.js';

export function sum(xs: readonly number[]): number {
  let s = 0;
  for (const x of xs) s += x;
  return s;
}

export function mean(xs: readonly number[]): number | null {
  return xs.length === 0 ? null : sum(xs) / xs.length;
}

/** Median of the values (mean of the two middle values when the count is even). */
export function median(xs: readonly number[]): number | null {
  if (xs.length === 0) return null;
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** Sample variance (n - 1 denominator); null for fewer than two values. */
export function sampleVariance(xs: readonly number[]): number | null {
  if (xs.length < 2) return null;
  const m = sum(xs) / xs.length;
  let ss = 0;
  for (const x of xs) ss += (x - m) * (x - m);
  return ss / (xs.length - 1);
}

export function sampleSd(xs: readonly number[]): number | null {
  const v = sampleVariance(xs);
  return v === null ? null : Math.sqrt(v);
}

/** Linear-interpolation quantile (Hyndman-Fan type 7) of values already sorted ascending. */
export function quantileSorted(sorted: ArrayLike<number>, p: number): number {
  const n = sorted.length;
  if (n === 0) throw new RangeError('quantile of an empty sample');
  const h = (n - 1) * p;
  const lo = Math.floor(h);
  const hi = Math.min(lo + 1, n - 1);
  const a = sorted[lo]!;
  const b = sorted[hi]!;
  return a + (h - lo) * (b - a);
}

export function spread(xs: readonly number[]): Spread {
  if (xs.length === 0) return { n: 0, median: null, min: null, max: null };
  let lo = Infinity;
  let hi = -Infinity;
  for (const x of xs) {
    if (x < lo) lo = x;
    if (x > hi) hi = x;
  }
  return { n: xs.length, median: median(xs), min: lo, max: hi };
}

export function spreadWithTotal(xs: readonly number[]): SpreadWithTotal {
  return { ...spread(xs), mean: mean(xs), total: sum(xs) };
}

/** a / b, or null when either is missing or b is not positive. */
export function ratio(a: number | null, b: number | null): number | null {
  if (a === null || b === null || !(b > 0)) return null;
  return a / b;
}
