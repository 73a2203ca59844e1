/** The one seeded random source of the analysis: MT19937 from @stdlib. */
import mt19937 from '@stdlib/random-base-mt19937';

export interface Rng {
  /** a uniform integer in [0, n) */
  int(n: number): number;
  /** a uniform real in [0, 1) */
  uniform(): number;
}

const TWO_32 = 4294967296;

/** seed: an integer in [1, 2^32 - 1] (checked by checkSpec). */
export function seededRng(seed: number): Rng {
  const next = mt19937.factory({ seed });
  return {
    int: (n) => Math.floor((next() / TWO_32) * n),
    uniform: () => next() / TWO_32,
  };
}
