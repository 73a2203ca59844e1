/** Token and cost figures of one attempt, and cost confidence ordering. */
import type { AttemptRecord, CostConfidence, CostWeights, EvalCost } from './types.js';

export function totalTokens(a: AttemptRecord): number | null {
  const u = a.usage;
  return u ? u.input_tokens + u.output_tokens + u.cache_write_tokens + u.cache_read_tokens : null;
}

/** input*w.input + cache_write*w.cache_write + cache_read*w.cache_read + output*w.output */
export function weightedCost(a: AttemptRecord, w: CostWeights): number | null {
  const u = a.usage;
  return u ? u.input_tokens * w.input + u.cache_write_tokens * w.cache_write + u.cache_read_tokens * w.cache_read + u.output_tokens * w.output : null;
}

const STRENGTH: Record<CostConfidence, number> = { free: 0, exact: 1, estimated: 2, none: 3 };

/** The weakest confidence among attempts that carry a cost: estimated < exact < free. */
export function weakestConfidence(attempts: readonly AttemptRecord[]): CostConfidence | null {
  let worst: CostConfidence | null = null;
  for (const a of attempts) {
    if (a.cost_usd === null) continue;
    if (worst === null || STRENGTH[a.cost_confidence] > STRENGTH[worst]) worst = a.cost_confidence;
  }
  return worst;
}

/** The eval cost stream of one arm: every attempt, accepted or excluded, is money spent. */
export function evalCost(arm: string, attempts: readonly AttemptRecord[], w: CostWeights): EvalCost {
  let usd = 0;
  let withCost = 0;
  let tokens = 0;
  let weighted = 0;
  for (const a of attempts) {
    if (a.cost_usd !== null) {
      usd += a.cost_usd;
      withCost++;
    }
    tokens += totalTokens(a) ?? 0;
    weighted += weightedCost(a, w) ?? 0;
  }
  return {
    arm,
    cost_usd: withCost > 0 ? usd : null,
    cost_confidence: weakestConfidence(attempts),
    n_missing_cost: attempts.length - withCost,
    tokens,
    weighted_cost: weighted,
  };
}
