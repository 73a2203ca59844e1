/** The noise envelope and the minimum detectable effect of a paired comparison. */
import { lazyRequire } from '../pipeline/lazy-require.js';

// Loaded on first use (about a hundred small modules): a plan or a no-op run never computes a quantile.
const quantile = lazyRequire<(p: number, mu: number, sigma: number) => number>('@stdlib/stats-base-dists-normal-quantile');
const normalQuantile = (p: number, mu: number, sigma: number): number => quantile()(p, mu, sigma);
import { sampleSd, sampleVariance } from './describe.js';
import type { MinimumDetectableEffect, NoiseEnvelope } from './types.js';

export const ENVELOPE_FORMULA =
  'envelope = max(1/n_tasks, z_{1-a/2} * sqrt(sum over tasks t of (s2_control,t / r_t + s2_treatment,t / r_t)) / n_tasks), ' +
  "where r_t is the number of valid pairs (reps) of task t and s2_arm,t the sample variance (n-1 denominator) of that arm's " +
  'pass over those reps (0 when r_t = 1). The second term is the z-scaled standard error of the effect that comes from ' +
  're-running the same tasks with the same arms (run-to-run spread only, task sampling excluded); the floor is one task flipping.';

export const MDE_FORMULA =
  'MDE = (z_{1-a/2} + z_{power}) * sd(task deltas) / sqrt(n_tasks); not computable when sd is 0 or undefined (fewer than 2 tasks), ' +
  'or when there are too few units for the test to reach alpha';

/** z_{1-a/2} for a two-sided confidence level. */
export function zTwoSided(confidence: number): number {
  return normalQuantile(1 - (1 - confidence) / 2, 0, 1);
}

/** Per task: the 0/1 scores of the valid pairs, control and treatment aligned. */
export interface TaskScores {
  control: readonly number[];
  treatment: readonly number[];
}

export function noiseEnvelope(tasks: readonly TaskScores[], confidence: number): NoiseEnvelope {
  const n = tasks.length;
  const z = zTwoSided(confidence);
  const floor = n > 0 ? 1 / n : 1;
  let v = 0;
  for (const t of tasks) {
    const r = t.control.length;
    if (r < 2) continue;
    v += ((sampleVariance(t.control) ?? 0) + (sampleVariance(t.treatment) ?? 0)) / r;
  }
  const spreadTerm = n > 0 ? (z * Math.sqrt(v)) / n : 0;
  return { value: Math.max(floor, spreadTerm), floor, spread_term: spreadTerm, z, formula: ENVELOPE_FORMULA };
}

export function minimumDetectableEffect(taskDeltas: readonly number[], confidence: number, power: number): MinimumDetectableEffect {
  const n = taskDeltas.length;
  const sd = sampleSd(taskDeltas);
  const zA = zTwoSided(confidence);
  const zB = normalQuantile(power, 0, 1);
  if (sd === null || sd === 0) {
    return {
      value: null,
      sd_task_delta: sd,
      n_tasks: n,
      alpha: 1 - confidence,
      power,
      formula: MDE_FORMULA,
      not_computable: `not computable at this n: the task deltas have no spread (${n} task${n === 1 ? '' : 's'})`,
    };
  }
  return { value: ((zA + zB) * sd) / Math.sqrt(n), sd_task_delta: sd, n_tasks: n, alpha: 1 - confidence, power, formula: MDE_FORMULA };
}
