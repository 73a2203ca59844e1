/**
 * Certify's discrimination check, decided from its runs: the verifier must fail on the untouched
 * tree and pass with the reference solution every time. Runs that disagree with each other name
 * a flaky verifier (the task is rejected); a verifier that passes untouched every time does not
 * discriminate.
 */
export interface Discrimination {
  discriminating: boolean;
  /** One line per side whose runs disagreed. */
  flaky: string[];
  nopPasses: number;
  oraclePasses: number;
}

export function discrimination(nop: readonly boolean[], oracle: readonly boolean[], repeats: number): Discrimination {
  const nopPasses = nop.filter(Boolean).length;
  const oraclePasses = oracle.filter(Boolean).length;
  const flaky: string[] = [];
  if (nopPasses > 0 && nopPasses < repeats) flaky.push(`flaky verifier: passed ${nopPasses} of ${repeats} times on the untouched tree`);
  if (oraclePasses > 0 && oraclePasses < repeats) flaky.push(`flaky verifier: passed ${oraclePasses} of ${repeats} times with the reference solution`);
  return { discriminating: nopPasses === 0 && oraclePasses === repeats, flaky, nopPasses, oraclePasses };
}
