import { describe, expect, it } from 'vitest';
import { clusterBootstrap, clusteredMedian, familiesOf, weightedMean } from '../stats/bootstrap.js';
import { clusterTInterval, minimumP, signFlipTest, unitsNeeded, unitsOf } from '../stats/inference.js';
import { median } from '../stats/describe.js';
import { minimumDetectableEffect, noiseEnvelope, zTwoSided } from '../stats/envelope.js';
import { holm, mcnemarExactP, signTestP } from '../stats/exact-tests.js';
import { passAtK, passHatK } from '../stats/pass-at-k.js';

describe('McNemar exact test', () => {
  // p = min(1, 2 * sum_{i<=min(b,c)} C(b+c, i) / 2^(b+c))
  it('b=7, c=1: 2 * (1 + 8) / 256', () => {
    expect(mcnemarExactP(7, 1)).toBeCloseTo(18 / 256, 12);
    expect(mcnemarExactP(7, 1)).toBeCloseTo(0.0703125, 12);
  });
  it('b=3, c=3: capped at 1', () => {
    expect(mcnemarExactP(3, 3)).toBe(1);
  });
  it('b=10, c=2: 2 * (1 + 12 + 66) / 4096', () => {
    expect(mcnemarExactP(10, 2)).toBeCloseTo(158 / 4096, 12);
    expect(mcnemarExactP(10, 2)).toBeCloseTo(0.03857421875, 12);
  });
  it('is symmetric and 1 without discordant pairs', () => {
    expect(mcnemarExactP(2, 10)).toBeCloseTo(mcnemarExactP(10, 2), 12);
    expect(mcnemarExactP(0, 0)).toBe(1);
    expect(mcnemarExactP(5, 0)).toBeCloseTo(2 / 32, 12);
  });
});

describe('sign test and Holm', () => {
  it('8 tasks up, 1 down: 2 * (1 + 9) / 512', () => {
    expect(signTestP(8, 1)).toBeCloseTo(20 / 512, 12);
    expect(signTestP(0, 0)).toBe(1);
  });
  it('Holm step-down keeps input order and monotonicity', () => {
    const adj = holm([0.01, 0.04, 0.03]);
    expect(adj[0]).toBeCloseTo(0.03, 12);
    expect(adj[1]).toBeCloseTo(0.06, 12);
    expect(adj[2]).toBeCloseTo(0.06, 12);
    expect(holm([0.5, 0.9])).toEqual([1, 1]);
    expect(holm([0.02])).toEqual([0.02]);
  });
});

describe('pass@k and pass^k', () => {
  it('n=5, c=2', () => {
    expect(passAtK(5, 2, 1)).toBeCloseTo(0.4, 12);
    expect(passHatK(5, 2, 1)).toBeCloseTo(0.4, 12);
    expect(passAtK(5, 2, 2)).toBeCloseTo(1 - 3 / 10, 12); // 1 - C(3,2)/C(5,2)
    expect(passHatK(5, 2, 2)).toBeCloseTo(1 / 10, 12); // C(2,2)/C(5,2)
    expect(passAtK(5, 2, 3)).toBeCloseTo(1 - 1 / 10, 12); // 1 - C(3,3)/C(5,3)
    expect(passHatK(5, 2, 3)).toBe(0);
    expect(passAtK(5, 2, 4)).toBe(1); // n - c < k
  });
  it('n=10, c=7, k=3', () => {
    expect(passAtK(10, 7, 3)).toBeCloseTo(1 - 1 / 120, 12); // C(3,3)/C(10,3)
    expect(passHatK(10, 7, 3)).toBeCloseTo(35 / 120, 12); // C(7,3)/C(10,3)
  });
  it('rejects k outside 1..n', () => {
    expect(() => passAtK(3, 1, 4)).toThrow(RangeError);
  });
});

describe('minimum detectable effect', () => {
  it('textbook: sd 0.5, n 196, alpha 0.05, power 0.8 gives 0.1 (Miller: n = (1.96 + 0.84)^2 sd^2 / d^2)', () => {
    const n = 196;
    const x = 0.5 * Math.sqrt((n - 1) / n); // +-x alternating has sample sd exactly 0.5
    const deltas = Array.from({ length: n }, (_, i) => (i % 2 === 0 ? x : -x));
    const mde = minimumDetectableEffect(deltas, 0.95, 0.8);
    expect(mde.sd_task_delta).toBeCloseTo(0.5, 12);
    expect(mde.value).toBeCloseTo(((1.959963984540054 + 0.8416212335729143) * 0.5) / 14, 10);
    expect(mde.value).toBeCloseTo(0.1000566, 6);
    expect(mde.not_computable).toBeUndefined();
  });
  it('is not computable (null, with the reason) when every task delta is equal', () => {
    const mde = minimumDetectableEffect([0.2, 0.2, 0.2, 0.2], 0.95, 0.8);
    expect(mde.value).toBeNull();
    expect(mde.not_computable).toBe('not computable at this n: the task deltas have no spread (4 tasks)');
  });
  it('z for 95% two-sided', () => {
    expect(zTwoSided(0.95)).toBeCloseTo(1.959963984540054, 12);
  });
});

describe('noise envelope', () => {
  it('is the 1/n floor when the spread is smaller', () => {
    const env = noiseEnvelope(
      [
        { control: [1, 0, 0], treatment: [1, 1, 0] },
        { control: [1, 1, 1], treatment: [0, 0, 0] },
      ],
      0.95,
    );
    // spread = z * sqrt((1/3 + 1/3) / 3) / 2
    expect(env.spread_term).toBeCloseTo((1.959963984540054 * Math.sqrt(2 / 9)) / 2, 12);
    expect(env.floor).toBe(0.5);
    expect(env.value).toBe(0.5);
  });
  it('is raised by the measured rep spread', () => {
    const tasks = Array.from({ length: 4 }, () => ({ control: [1, 0, 0], treatment: [1, 1, 0] }));
    const env = noiseEnvelope(tasks, 0.95);
    // sum over 4 tasks of (1/3 + 1/3) / 3 = 8/9; spread = z * sqrt(8/9) / 4 = 0.46197
    expect(env.value).toBeCloseTo((1.959963984540054 * Math.sqrt(8 / 9)) / 4, 12);
    expect(env.value).toBeGreaterThan(env.floor);
    expect(env.formula).toMatch(/max\(1\/n_tasks/);
  });
  it('one rep measures no spread: the floor', () => {
    const env = noiseEnvelope(
      [
        { control: [0], treatment: [1] },
        { control: [1], treatment: [1] },
      ],
      0.95,
    );
    expect(env.spread_term).toBe(0);
    expect(env.value).toBe(0.5);
  });
});

describe('cluster bootstrap', () => {
  const deltas = Float64Array.from([0.5, 0, 1, -0.5, 0.25, 0, 0.75, 0.5, -0.25, 1]);
  const families = familiesOf(['a', 'a', 'a', 'b', 'b', 'c', 'c', 'c', 'd', 'd']);
  const plan = (seed: number) => ({ resamples: 2000, seed, confidence: 0.95 });

  it('groups tasks by family', () => {
    expect(families).toEqual([
      [0, 1, 2],
      [3, 4],
      [5, 6, 7],
      [8, 9],
    ]);
  });
  it('is the same twice for a seed, different for another seed', () => {
    const [a] = clusterBootstrap(families, 10, plan(1), [weightedMean(deltas)]);
    const [b] = clusterBootstrap(families, 10, plan(1), [weightedMean(deltas)]);
    const [c] = clusterBootstrap(families, 10, plan(2), [weightedMean(deltas)]);
    expect(a).toEqual(b);
    expect(c).not.toEqual(a);
    expect(a!.low).toBeLessThan(0.325);
    expect(a!.high).toBeGreaterThan(0.325);
    expect(a!.low).toBeGreaterThanOrEqual(-0.5);
    expect(a!.high).toBeLessThanOrEqual(1);
  });
  it('clustered median equals the plain median when every task is drawn once', () => {
    const values = [5, 1, 4, 2, 3, 8];
    const taskOf = [0, 0, 1, 1, 2, 2];
    const stat = clusteredMedian(values, taskOf);
    expect(stat(Int32Array.from([1, 1, 1]))).toBe(median(values));
    // task 0 drawn twice, task 2 never: [1,1,2,4,5,5] -> (2+4)/2
    expect(stat(Int32Array.from([2, 1, 0]))).toBe(3);
    expect(Number.isNaN(stat(Int32Array.from([0, 0, 0])))).toBe(true);
  });
});

describe('the sign-flip test, the t interval and the design floor', () => {
  it('enumerates every sign pattern: with all 6 units at +1, p = 2/64; with 5, p = 2/32 (no 5-task claim at alpha 0.05)', () => {
    expect(signFlipTest(Float64Array.from([1, 1, 1, 1, 1, 1]), 1)).toEqual({ p: 2 / 64, exact: true, samples: null });
    expect(signFlipTest(Float64Array.from([1, 1, 1, 1, 1]), 1).p).toBe(2 / 32);
    expect(minimumP(5)).toBe(0.0625);
    expect(unitsNeeded(0.05, 1)).toBe(6);
    expect(unitsNeeded(0.05, 3)).toBe(7); // Holm's first step over 3 comparisons: 2/2^k <= 0.05/3
    expect(unitsNeeded(0.05, 2)).toBe(7);
  });
  it('p of a mixed sample by hand: [3, -1, 2] -> patterns with |sum| >= 4 are 2 of 8', () => {
    // sums of +-3 +-1 +-2: 6, 2, 4, 0, 0, -4, -2, -6 -> |s| >= 4: 6, 4, -4, -6
    expect(signFlipTest(Float64Array.from([3, -1, 2]), 1).p).toBe(4 / 8);
    expect(signFlipTest(Float64Array.from([3, 1, 2]), 1).p).toBe(2 / 8);
  });
  it('samples (seeded) beyond 20 units, and agrees with a normal approximation', () => {
    const sums = Float64Array.from({ length: 40 }, (_, i) => (i % 4 === 0 ? -1 : 1)); // sum 20 over 40 units of |1|
    const a = signFlipTest(sums, 7);
    expect(a).toMatchObject({ exact: false, samples: 20000 });
    expect(signFlipTest(sums, 7)).toEqual(a);
    // sum of 40 +-1 signs: P(|S| >= 20) = P(|Z| >= 20/sqrt(40)) ~ 0.0016 (exact binomial 0.0022)
    expect(a.p).toBeGreaterThan(0.0005);
    expect(a.p).toBeLessThan(0.005);
  });
  it('units are families when tasks are grouped, tasks otherwise', () => {
    expect(unitsOf([1, 0.5, -1], ['a', 'b', 'c'])).toMatchObject({ kind: 'task', sums: Float64Array.from([1, 0.5, -1]) });
    const grouped = unitsOf([1, 0.5, -1], ['a', 'a', 'c']);
    expect(grouped).toMatchObject({ kind: 'family', sums: Float64Array.from([1.5, -1]), sizes: Int32Array.from([2, 1]) });
  });
  it('the cluster t interval equals the textbook t interval with one task per unit', () => {
    const d = [0.5, 0, 1, -0.5, 0.25];
    const ci = clusterTInterval(unitsOf(d, ['1', '2', '3', '4', '5']), 0.95)!;
    const m = 0.25;
    const sd = Math.sqrt(d.reduce((s, x) => s + (x - m) ** 2, 0) / 4);
    const half = 2.7764451051977987 * (sd / Math.sqrt(5)); // t_{0.975, 4}
    expect(ci.low).toBeCloseTo(m - half, 10);
    expect(ci.high).toBeCloseTo(m + half, 10);
    expect(ci).toMatchObject({ method: 'cluster-t', df: 4, units: 5 });
  });
});
