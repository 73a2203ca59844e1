/**
 * Seeded cluster bootstrap: each resample draws families (the clusters) with
 * replacement and uses every task of each drawn family once, recording how many
 * times each task was drawn. (Drawing tasks again inside each drawn family would
 * count the within-family variance twice and widen the interval past its nominal
 * coverage.) Statistics are functions of those multiplicities, so one resample serves
 * every statistic of a comparison (effect, paired cost medians, factorial effects).
 */
import { quantileSorted } from './describe.js';
import { seededRng } from './rng.js';
import type { Interval } from './types.js';

export interface BootstrapPlan {
  resamples: number;
  seed: number;
  confidence: number;
}

/** A statistic of the task multiplicities of one resample; NaN when undefined for that resample. */
export type ResampleStatistic = (counts: Int32Array) => number;

/** Groups task indices 0..n-1 by family, in first-seen order. */
export function familiesOf(taskFamilies: readonly string[]): number[][] {
  const byFamily = new Map<string, number[]>();
  taskFamilies.forEach((f, i) => {
    const list = byFamily.get(f);
    if (list) list.push(i);
    else byFamily.set(f, [i]);
  });
  return [...byFamily.values()];
}

/**
 * Runs the resamples and returns one interval per statistic (null when every
 * resample gave NaN). Deterministic for a given plan and task order.
 */
export function clusterBootstrap(
  families: readonly (readonly number[])[],
  nTasks: number,
  plan: BootstrapPlan,
  statistics: readonly ResampleStatistic[],
): Array<Interval | null> {
  const rng = seededRng(plan.seed);
  const counts = new Int32Array(nTasks);
  const draws = statistics.map(() => new Float64Array(plan.resamples));
  const filled = statistics.map(() => 0);
  const nf = families.length;
  for (let r = 0; r < plan.resamples; r++) {
    counts.fill(0);
    for (let i = 0; i < nf; i++) {
      const fam = families[rng.int(nf)]!;
      for (let j = 0; j < fam.length; j++) counts[fam[j]!]! += 1;
    }
    for (let s = 0; s < statistics.length; s++) {
      const v = statistics[s]!(counts);
      if (!Number.isNaN(v)) draws[s]![filled[s]!++] = v;
    }
  }
  return draws.map((d, s) => percentileInterval(d.subarray(0, filled[s]!), plan));
}

export function percentileInterval(values: Float64Array, plan: BootstrapPlan): Interval | null {
  if (values.length === 0) return null;
  const sorted = Float64Array.from(values).sort();
  const tail = (1 - plan.confidence) / 2;
  return {
    low: quantileSorted(sorted, tail),
    high: quantileSorted(sorted, 1 - tail),
    confidence: plan.confidence,
    method: 'cluster-bootstrap-percentile',
    resamples: plan.resamples,
    seed: plan.seed,
  };
}

/** Mean of per-task values weighted by the multiplicities (NaN when nothing was drawn). */
export function weightedMean(values: Float64Array): ResampleStatistic {
  return (counts) => {
    let s = 0;
    let w = 0;
    for (let t = 0; t < values.length; t++) {
      const c = counts[t]!;
      if (c !== 0) {
        s += c * values[t]!;
        w += c;
      }
    }
    return w === 0 ? Number.NaN : s / w;
  };
}

/**
 * Median of pair-level values where each pair belongs to a task and is drawn as
 * often as its task: the cluster bootstrap of a median. Values are sorted once.
 */
export function clusteredMedian(values: readonly number[], taskOf: readonly number[]): ResampleStatistic {
  const order = values.map((_, i) => i).sort((a, b) => values[a]! - values[b]!);
  const sortedValues = Float64Array.from(order, (i) => values[i]!);
  const sortedTasks = Int32Array.from(order, (i) => taskOf[i]!);
  const n = sortedValues.length;
  // pairs per task, so a resample's total weight is a sum over tasks, not pairs
  const perTask = new Map<number, number>();
  for (const t of taskOf) perTask.set(t, (perTask.get(t) ?? 0) + 1);
  const taskIds = Int32Array.from(perTask.keys());
  const taskPairs = Int32Array.from(perTask.values());
  return (counts) => {
    let total = 0;
    for (let j = 0; j < taskIds.length; j++) total += counts[taskIds[j]!]! * taskPairs[j]!;
    if (total === 0) return Number.NaN;
    // zero-based positions of the two middle values in the resampled multiset
    const k1 = Math.floor((total - 1) / 2);
    const k2 = Math.floor(total / 2);
    let cum = 0;
    let i = 0;
    for (; i < n; i++) {
      cum += counts[sortedTasks[i]!]!;
      if (cum > k1) break;
    }
    const low = sortedValues[i]!;
    if (cum > k2) return low;
    for (i++; i < n; i++) {
      cum += counts[sortedTasks[i]!]!;
      if (cum > k2) return (low + sortedValues[i]!) / 2;
    }
    return Number.NaN;
  };
}
