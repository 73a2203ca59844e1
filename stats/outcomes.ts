/** (a)/(b)/(c) per task: helped / no difference / hurt, with each row's cost ratio. */
import { weightedCost } from './cost.js';
import { mean, ratio } from './describe.js';
import type { PairedTask } from './pairing.js';
import type { CostWeights, OutcomeClass, OutcomeCounts, TaskOutcome } from './types.js';
import { scored } from './arm-metrics.js';

const CLASS_LABEL: Record<OutcomeClass, string> = { a: '(a)', b: '(b)', c: '(c)', 'no-answer': 'no answer' };

/** Two significant digits: 1.2, 0.95, 12. */
export function formatRatio(r: number): string {
  return String(Number(r.toPrecision(2)));
}

export function outcomeLabel(cls: OutcomeClass, costRatio: number | null): string {
  return costRatio === null ? `${CLASS_LABEL[cls]}, cost ratio unknown` : `${CLASS_LABEL[cls]} at ${formatRatio(costRatio)}x the control cost`;
}

const present = <T>(x: T | null): x is T => x !== null;

export function taskOutcome(t: PairedTask, w: CostWeights): TaskOutcome {
  const n = t.control.length;
  let cPass = 0;
  let tPass = 0;
  for (let i = 0; i < n; i++) {
    cPass += scored(t.control[i]!);
    tPass += scored(t.treatment[i]!);
  }
  const diff = tPass - cPass;
  const allNoAnswer = t.treatment.every((a) => a.no_answer);
  // Over budget is "no answer", never a wrong one: a loss that an over-budget rep accounts for is not (c).
  const lostToBudget = diff < 0 && t.treatment.some((a) => a.no_answer);
  const cls: OutcomeClass = allNoAnswer || lostToBudget ? 'no-answer' : diff > 0 ? 'a' : diff < 0 ? 'c' : 'b';
  const cCost = mean(t.control.map((a) => weightedCost(a, w)).filter(present));
  const tCost = mean(t.treatment.map((a) => weightedCost(a, w)).filter(present));
  const costRatio = ratio(tCost, cCost);
  return {
    task: t.task,
    family: t.family,
    category: t.category,
    class: cls,
    n_pairs: n,
    control_pass_rate: cPass / n,
    treatment_pass_rate: tPass / n,
    delta: diff / n,
    control_mean_weighted_cost: cCost,
    treatment_mean_weighted_cost: tCost,
    cost_ratio: costRatio,
    label: outcomeLabel(cls, costRatio),
  };
}

/** All four counts are always present, zero or not. */
export function countOutcomes(rows: readonly TaskOutcome[]): OutcomeCounts {
  const counts: OutcomeCounts = { a: 0, b: 0, c: 0, no_answer: 0 };
  for (const r of rows) {
    if (r.class === 'no-answer') counts.no_answer++;
    else counts[r.class]++;
  }
  return counts;
}
