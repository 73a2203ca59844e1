/**
 * An anytime-valid confidence sequence for the mean of bounded observations, by betting
 * (Waudby-Smith and Ramdas 2024, "Estimating means of bounded random variables by betting",
 * JRSS-B: the hedged capital process with predictable plug-in bets, their Theorem 3 and
 * eq. (27)). For observations in [0, 1] and a candidate mean m, two gamblers bet that the
 * mean is above / below m; m leaves the set once their hedged wealth reaches 1 / alpha.
 * By Ville's inequality the whole sequence covers the true mean with probability
 * >= 1 - alpha at every time at once, so it may be looked at after every observation and
 * stopped on whenever it excludes a value: no maximum and no schedule are needed.
 */

/** Candidate means on a grid of this many points in (0, 1). */
const GRID = 2000;
/** Bets are capped at this fraction of the distance to the boundary (the paper's c = 1/2). */
const CAP = 0.5;

export interface ConfidenceSequence {
  /** The running intersection after each observation, on the observations' scale. */
  intervals: { low: number; high: number }[];
}

/** The confidence sequence at level 1 - alpha for observations in [0, 1], after each one. */
export function bettingConfidenceSequence(xs: readonly number[], alpha: number): ConfidenceSequence {
  const m = Float64Array.from({ length: GRID }, (_, i) => (i + 0.5) / GRID);
  const logUp = new Float64Array(GRID);
  const logDown = new Float64Array(GRID);
  const threshold = Math.log(1 / alpha);
  const alive = new Uint8Array(GRID).fill(1);
  const intervals: { low: number; high: number }[] = [];
  // Predictable plug-ins: the running mean and variance before each observation, from priors 1/2 and 1/4.
  let sum = 0;
  let squares = 0.25;
  let meanBefore = 0.5;
  xs.forEach((raw, index) => {
    const x = Math.min(1, Math.max(0, raw));
    const t = index + 1;
    const variance = squares / t;
    const lambda = Math.sqrt((2 * Math.log(2 / alpha)) / (variance * t * Math.log(1 + t)));
    for (let i = 0; i < GRID; i++) {
      if (!alive[i]) continue;
      const mi = m[i]!;
      logUp[i]! += Math.log1p(Math.min(lambda, CAP / mi) * (x - mi));
      logDown[i]! += Math.log1p(-Math.min(lambda, CAP / (1 - mi)) * (x - mi));
      // Hedged: max(K+ / 2, K- / 2) >= 1 / alpha.
      const hedged = Math.max(logUp[i]!, logDown[i]!) - Math.LN2;
      if (hedged >= threshold) alive[i] = 0;
    }
    squares += (x - meanBefore) ** 2;
    sum += x;
    meanBefore = (0.5 + sum) / (t + 1);
    let low = -1;
    let high = -1;
    for (let i = 0; i < GRID; i++) {
      if (!alive[i]) continue;
      if (low < 0) low = i;
      high = i;
    }
    const prev = intervals[intervals.length - 1];
    // Empty only if the grid is too coarse for what is left: keep the last interval's midpoint.
    const now =
      low < 0 ? { low: prev ? (prev.low + prev.high) / 2 : 0.5, high: prev ? (prev.low + prev.high) / 2 : 0.5 } : { low: low / GRID, high: (high + 1) / GRID };
    intervals.push(prev ? { low: Math.max(prev.low, now.low), high: Math.min(prev.high, now.high) } : now);
  });
  return { intervals };
}
