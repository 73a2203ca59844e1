/** Per-arm metrics: admission, completion, tokens, cost, time, pass@k. */
import { armConfig } from './arm-config.js';
import { totalTokens, weakestConfidence, weightedCost } from './cost.js';
import { mean, ratio, spread, spreadWithTotal } from './describe.js';
import { passAtK, passHatK } from './pass-at-k.js';
import type { ArmMetrics, AttemptRecord, CostWeights, PassAtK } from './types.js';

/** An accepted attempt's score: failures, abandoned and over-budget attempts are false. */
export function scored(a: AttemptRecord): 0 | 1 {
  return a.pass === true && !a.no_answer ? 1 : 0;
}

const present = <T>(x: T | null): x is T => x !== null;

/** Reason codes of attempts failed by audit for what they did (a forged verdict, a write out of bounds, leakage). */
export const INTEGRITY_CODES = new Set(['verdict-forged', 'out-of-bounds', 'leakage']);

/**
 * Admission (attempts, exclusions, infra errors over every try) counts every attempt;
 * the outcome figures (completion, tokens, cost, time, pass@k) count the accepted
 * attempts of the paired task set only, so that every arm's figures are over the same tasks.
 */
export function armMetrics(arm: string, attempts: readonly AttemptRecord[], w: CostWeights, pairedTasks?: ReadonlySet<string>): ArmMetrics {
  const admitted = attempts.filter((a) => a.admission === 'accepted');
  const accepted = pairedTasks ? admitted.filter((a) => pairedTasks.has(a.task)) : admitted;
  const n = attempts.length;
  const exclusions: Record<string, number> = {};
  for (const a of attempts) if (a.admission === 'excluded') exclusions[a.reason_code] = (exclusions[a.reason_code] ?? 0) + 1;
  const integrity: Record<string, number> = {};
  for (const a of attempts)
    if (a.admission === 'accepted' && INTEGRITY_CODES.has(a.reason_code)) integrity[a.reason_code] = (integrity[a.reason_code] ?? 0) + 1;
  // Every try counts: an infrastructure fault that was retried is still a fault of this arm.
  const nTries = attempts.reduce((k, a) => k + 1 + (a.tries?.length ?? 0), 0);
  const nInfra = attempts.reduce((k, a) => k + (a.infra_error ? 1 : 0) + (a.tries ?? []).filter((t) => t.exit_reason === 'infra-error').length, 0);
  const causes: Record<string, number> = {};
  for (const a of attempts) {
    for (const t of [...(a.tries ?? []), ...(a.infra_error ? [{ infra_error: a.infra_cause ?? a.explanation }] : [])]) {
      const cause = t.infra_error ?? 'unknown';
      causes[cause] = (causes[cause] ?? 0) + 1;
    }
  }
  const nPassed = accepted.reduce((s, a) => s + scored(a), 0);
  const completion = accepted.length > 0 ? nPassed / accepted.length : null;

  const tokens = accepted.map(totalTokens).filter(present);
  const weighted = accepted.map((a) => weightedCost(a, w)).filter(present);
  const usd = accepted.map((a) => a.cost_usd).filter(present);
  const meanUsd = mean(usd);
  const meanWeighted = mean(weighted);
  const tokenTotal = tokens.reduce((s, x) => s + x, 0);

  return {
    arm,
    n_attempts: n,
    n_accepted: admitted.length,
    n_excluded: n - admitted.length,
    accepted_fraction: n > 0 ? admitted.length / n : null,
    exclusions,
    integrity_failures: integrity,
    integrity: {
      out_of_bounds: attempts.filter((a) => (a.integrity?.out_of_bounds ?? 0) > 0).length,
      leakage: attempts.filter((a) => (a.integrity?.leakage ?? 0) > 0).length,
      verdict_forged: attempts.filter((a) => a.integrity?.verdict_forged).length,
    },
    n_tasks: new Set(attempts.map((a) => a.task)).size,
    n_scored: accepted.length,
    unpaired_tasks: pairedTasks ? [...new Set(admitted.filter((a) => !pairedTasks.has(a.task)).map((a) => a.task))].sort() : [],
    n_tries: nTries,
    n_infra_errors: nInfra,
    infra_error_rate: nTries > 0 ? nInfra / nTries : null,
    infra_causes: causes,
    n_scripted: attempts.filter((a) => a.scripted === true).length,
    n_agent_crashes: admitted.filter((a) => a.exit_reason === 'agent-crash').length,
    n_without_tokens: admitted.filter((a) => (totalTokens(a) ?? 0) === 0).length,
    n_no_answer: accepted.filter((a) => a.no_answer).length,
    n_passed: nPassed,
    completion_rate: completion,
    tokens: spreadWithTotal(tokens),
    weighted_cost: spreadWithTotal(weighted),
    cost_usd: { ...spreadWithTotal(usd), n_missing: accepted.length - usd.length, confidence: weakestConfidence(accepted) },
    wall_ms: spread(accepted.map((a) => a.wall_ms)),
    harness_ms: spread(accepted.flatMap((a) => (a.harness_ms === undefined ? [] : [a.harness_ms]))),
    turns: spread(accepted.map((a) => a.turns)),
    tool_calls: spread(accepted.map((a) => a.tool_calls)),
    quality_per_dollar: ratio(completion, meanUsd),
    quality_per_million_weighted: ratio(completion, meanWeighted === null ? null : meanWeighted / 1e6),
    completions_per_million_tokens: tokens.length > 0 ? ratio(nPassed, tokenTotal / 1e6) : null,
    pass_at_k: passAtKTable(accepted),
    mechanism: {
      delivered: attempts.filter((a) => a.mechanism.delivered === true).length,
      used: attempts.filter((a) => a.mechanism.used === true).length,
      unknown_delivered: attempts.filter((a) => a.mechanism.delivered === null).length,
      unknown_used: attempts.filter((a) => a.mechanism.used === null).length,
    },
    window: timeWindow(attempts),
    config: armConfig(attempts),
  };
}

/** pass@k and pass^k per task over accepted attempts, averaged over tasks, for k = 1 .. min attempts per task. */
export function passAtKTable(accepted: readonly AttemptRecord[]): PassAtK[] {
  const perTask = new Map<string, { n: number; c: number }>();
  for (const a of accepted) {
    const t = perTask.get(a.task) ?? { n: 0, c: 0 };
    t.n += 1;
    t.c += scored(a);
    perTask.set(a.task, t);
  }
  const tasks = [...perTask.values()];
  if (tasks.length === 0) return [];
  const kMax = Math.min(...tasks.map((t) => t.n));
  const rows: PassAtK[] = [];
  for (let k = 1; k <= kMax; k++) {
    let at = 0;
    let hat = 0;
    for (const t of tasks) {
      at += passAtK(t.n, t.c, k);
      hat += passHatK(t.n, t.c, k);
    }
    rows.push({ k, pass_at_k: at / tasks.length, pass_hat_k: hat / tasks.length, n_tasks: tasks.length });
  }
  return rows;
}

function timeWindow(attempts: readonly AttemptRecord[]): ArmMetrics['window'] {
  let start: { t: number; s: string } | null = null;
  let end: { t: number; s: string } | null = null;
  for (const a of attempts) {
    if (a.started_at !== null) {
      const t = Date.parse(a.started_at);
      if (!Number.isNaN(t) && (start === null || t < start.t)) start = { t, s: a.started_at };
    }
    if (a.ended_at !== null) {
      const t = Date.parse(a.ended_at);
      if (!Number.isNaN(t) && (end === null || t > end.t)) end = { t, s: a.ended_at };
    }
  }
  return { started_at: start?.s ?? null, ended_at: end?.s ?? null };
}

/** An arm's infrastructure causes, most frequent first (then by text, so the order is stable). */
export function infraCauses(a: Pick<ArmMetrics, 'infra_causes'>): [string, number][] {
  return Object.entries(a.infra_causes).sort(([x, m], [y, n]) => n - m || (x < y ? -1 : x > y ? 1 : 0));
}
