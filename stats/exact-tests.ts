/** Exact paired tests on counts, and the Holm adjustment. */
import binomialCdf from '@stdlib/stats-base-dists-binomial-cdf';

/**
 * Two-sided exact binomial test of k successes against n - k under p = 1/2:
 * p = min(1, 2 * BinomCDF(min(k, n - k); n, 1/2)); 1 when n = 0.
 */
export function twoSidedSignP(k: number, n: number): number {
  if (n === 0) return 1;
  return Math.min(1, 2 * binomialCdf(Math.min(k, n - k), n, 0.5));
}

/**
 * McNemar exact test on paired attempts.
 * b = control fail & treatment pass, c = control pass & treatment fail.
 */
export function mcnemarExactP(b: number, c: number): number {
  return twoSidedSignP(Math.min(b, c), b + c);
}

/** Sign test over tasks: tasks with delta > 0 against tasks with delta < 0, ties dropped. */
export function signTestP(positive: number, negative: number): number {
  return twoSidedSignP(Math.min(positive, negative), positive + negative);
}

/**
 * Holm step-down adjustment. Returns adjusted p values in the input order:
 * sorted ascending p_(1..m), adj_(i) = max_{j <= i} min(1, (m - j + 1) p_(j)).
 */
export function holm(ps: readonly number[]): number[] {
  const m = ps.length;
  const order = ps.map((p, i) => ({ p, i })).sort((x, y) => x.p - y.p || x.i - y.i);
  const out = new Array<number>(m).fill(1);
  let running = 0;
  order.forEach(({ p, i }, rank) => {
    running = Math.max(running, Math.min(1, (m - rank) * p));
    out[i] = running;
  });
  return out;
}
