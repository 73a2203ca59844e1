/**
 * Verdict stability: what k runs of the hidden verifier on the same changes say together.
 * A verifier that gives one attempt's changes different verdicts cannot score that task: the
 * attempt gets no verdict (a flaky-verifier exclusion), and the analysis excludes every
 * attempt of the task (stats/flaky-tasks.ts), so which attempts were caught does not depend
 * on which of them were correct.
 */
import type { VerifierOutcome } from './verifier-run.js';

/** How many runs the verifier made on an attempt's changes and what they gave. */
export interface VerifierRuns {
  count: number;
  passes: number;
  fails: number;
  /** Runs that gave no verdict (no reward written, a pass no canary stands behind). */
  no_verdicts: number;
}

export interface CombinedRuns {
  /** The verdict that stands: the first run's when they agree, a forged one whenever a run caught a forgery. */
  outcome: VerifierOutcome;
  runs: VerifierRuns;
  /** Why the runs cannot be believed (they disagree), or null. */
  flaky: string | null;
}

/** Counts of a list of runs. */
export function runsOf(outcomes: readonly Pick<VerifierOutcome, 'pass'>[]): VerifierRuns {
  return {
    count: outcomes.length,
    passes: outcomes.filter((o) => o.pass === true).length,
    fails: outcomes.filter((o) => o.pass === false).length,
    no_verdicts: outcomes.filter((o) => o.pass === null).length,
  };
}

/** The disagreement of runs, in words, or null when they agree. */
export function disagreement(runs: VerifierRuns): string | null {
  const kinds = [runs.passes, runs.fails, runs.no_verdicts].filter((n) => n > 0).length;
  if (kinds <= 1) return null;
  const parts = [`passed ${runs.passes}`, `failed ${runs.fails}`, ...(runs.no_verdicts ? [`gave no verdict ${runs.no_verdicts}`] : [])];
  return `flaky verifier: on the same changes it ${parts.join(', ')} of ${runs.count} times`;
}

/** The runs of one attempt (at least one), in the order they ran. */
export function combineRuns(outcomes: readonly VerifierOutcome[]): CombinedRuns {
  if (outcomes.length === 0) throw new RangeError('combineRuns needs at least one run');
  const runs = runsOf(outcomes);
  const transcript =
    outcomes.length === 1 ? outcomes[0]!.transcript : outcomes.map((o, i) => `=== verifier run ${i + 1} of ${outcomes.length}\n${o.transcript}`).join('');
  // A forgery caught in any run stands: the code under test forced a pass at least once.
  const forged = outcomes.find((o) => o.forgery);
  if (forged) return { outcome: { ...forged, transcript }, runs, flaky: null };
  const flaky = disagreement(runs);
  const first = outcomes[0]!;
  if (!flaky) return { outcome: { ...first, transcript }, runs, flaky: null };
  return { outcome: { ...first, pass: null, transcript, error: flaky }, runs, flaky };
}
