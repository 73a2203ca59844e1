/**
 * `pairbench size`: before anyone pays, what each cohort's pull-request gates can see at its
 * size, the size each needs, and what that costs. The design (tasks, reps, arms, alpha, power)
 * and the gate (detect, margin) are the config's; the treatment's pass rate per task is the
 * cohort's last analysis in the store when there is one, else the worst case (rates around
 * 50%, where a drop is hardest to see); the price per attempt is the cohort's recorded
 * attempts' mean cost, or --cost-per-attempt (pairbench probe measures one).
 */
import { readJsonArtifact } from '../pipeline/artifact.js';
import { lookup } from '../pipeline/caching/local-cache.js';
import { alphaOf } from '../stats/inference.js';
import { resolveGate } from '../stats/change-gate.js';
import type { GatePlan } from '../stats/gate-planner.js';
import type { AnalysisResult } from '../stats/types.js';
import { isHeadVsBaseGate } from '../stats/verdicts.js';
import { ANALYSIS, analysisSpecOf } from '../steps/analyze-step.js';
import type { Cohort } from './cohorts.js';
import type { LoadedConfig } from './command-context.js';

export interface CohortSize {
  cohort: string;
  design: { tasks: number; reps: number; arms: number; treatments: number; attempts: number; attempts_per_pull_request: number };
  /** Where the pass rates came from. */
  baseline: string;
  plan: GatePlan;
  /** USD per attempt, and where it came from (null: unknown). */
  price: { per_attempt: number; source: string } | null;
  /** The regression gate's size at these reps, priced: the cohort, and what one pull request re-runs. */
  cost: { tasks: number; cohort_usd: number; pull_request_usd: number } | null;
}

/** The cohort's last analysis in the store, if its node was built. */
function lastAnalysis(loaded: LoadedConfig, c: Cohort): AnalysisResult | undefined {
  const latest = loaded.ctx.store.nodes.get(c.node.id)?.latest;
  const found = latest ? lookup(loaded.ctx.store, latest.key) : undefined;
  if (found?.status !== 'hit') return undefined;
  const read = readJsonArtifact(ANALYSIS, found.record.outputs, (d) => loaded.ctx.store.cas.read(d), c.node.id);
  return read?.ok ? read.value : undefined;
}

/** The design the planner reads off a cohort: its tasks, reps a side, arms, and the treatment's pass rates (the last analysis, or the worst case). */
function designOf(loaded: LoadedConfig, c: Cohort, detect: number, baselineFlag: number | undefined) {
  const tasks = new Set(c.attempts.map((n) => n.matrix['task'] ?? n.id)).size;
  const arms = new Set(c.attempts.map((n) => n.matrix['arm'] ?? '')).size;
  const cells = new Map<string, number>();
  for (const n of c.attempts) {
    const cell = `${n.matrix['task']}\u0000${n.matrix['arm']}`;
    cells.set(cell, (cells.get(cell) ?? 0) + 1);
  }
  const reps = Math.max(1, ...cells.values());
  const last = lastAnalysis(loaded, c);
  const rates = last?.comparisons[0]?.outcomes?.tasks.map((t) => t.treatment_pass_rate) ?? [];
  const baseline: number | number[] = baselineFlag ?? (rates.length >= 2 ? rates : Math.min(1, 0.5 + detect / 2));
  return { tasks, arms, reps, last, rates, baseline };
}

/**
 * What doctor says of a cohort's gate (quick: the gates' rates at the cohort's own size, no
 * search): each gate its check fails on that this size cannot carry, in words; none when it can.
 */
export async function gateShortfalls(loaded: LoadedConfig, c: Cohort): Promise<string[]> {
  const spec = analysisSpecOf(c.node.step);
  const gate = resolveGate(spec.gate);
  const on = new Set(gate.fail_on.filter(isHeadVsBaseGate));
  const margin = on.has('not-noninferior') ? (gate.noninferiority_margin ?? undefined) : undefined;
  if (!on.has('regression') && margin === undefined) return [];
  const d = designOf(loaded, c, gate.detect, undefined);
  if (d.tasks < 2) return [];
  const { gateRates } = await import('../stats/gate-planner.js');
  const input = {
    tasks: d.tasks,
    reps: d.reps,
    alpha: alphaOf(spec.confidence),
    power: spec.power,
    baseline: d.baseline,
    detect: gate.detect,
    sims: 400,
    ...(margin !== undefined ? { margin } : {}),
  };
  const r = gateRates(input, d.tasks, d.reps);
  const out: string[] = [];
  const at = `${d.tasks} tasks x ${d.reps} reps`;
  if (on.has('regression') && r.regression_power < spec.power)
    out.push(`regression catches a ${Math.round(gate.detect * 1000) / 10} pp drop ${pct(r.regression_power)} of the time at ${at} (goal ${pct(spec.power)})`);
  if (margin !== undefined && r.noninferiority_false_alarm! > 0.05)
    out.push(
      `not-noninferior (margin ${Math.round(margin * 1000) / 10} pp) fails ${pct(r.noninferiority_false_alarm!)} of pull requests that change nothing at ${at} (goal at most 5%)`,
    );
  return out;
}

export async function sizeCohort(
  loaded: LoadedConfig,
  c: Cohort,
  flags: { detect?: number; margin?: number; baseline?: number; costPerAttempt?: number; sims?: number },
): Promise<CohortSize> {
  const spec = analysisSpecOf(c.node.step);
  const gate = resolveGate(spec.gate);
  const detect = flags.detect ?? gate.detect;
  const margin = flags.margin ?? gate.noninferiority_margin ?? undefined;
  const { tasks, arms, reps, last, rates, baseline } = designOf(loaded, c, detect, flags.baseline);
  const { planGates } = await import('../stats/gate-planner.js');
  const plan = planGates({
    tasks,
    reps,
    alpha: alphaOf(spec.confidence),
    power: spec.power,
    baseline,
    detect,
    ...(margin !== undefined ? { margin } : {}),
    ...(flags.sims ? { sims: flags.sims } : {}),
  });
  // A shortfall matters for the gates the cohort's check fails on.
  const on = new Set(gate.fail_on.filter(isHeadVsBaseGate));
  plan.shortfalls = plan.shortfalls.filter((s) =>
    s.startsWith('regression') ? on.has('regression') : on.has('not-noninferior') || flags.margin !== undefined,
  );
  const costs = last?.arms.flatMap((a) => (a.cost_usd.n > 0 && a.cost_usd.mean !== null ? [a.cost_usd.mean] : [])) ?? [];
  const price =
    flags.costPerAttempt !== undefined
      ? { per_attempt: flags.costPerAttempt, source: '--cost-per-attempt' }
      : costs.length
        ? { per_attempt: costs.reduce((s, x) => s + x, 0) / costs.length, source: "the cohort's recorded attempts (mean over its arms)" }
        : null;
  const treatments = spec.treatments.length;
  const needed = plan.regression.tasks_needed ?? tasks;
  const sized = Math.max(tasks, needed);
  return {
    cohort: c.name,
    design: { tasks, reps, arms, treatments, attempts: c.attempts.length, attempts_per_pull_request: tasks * reps * treatments },
    baseline:
      flags.baseline !== undefined
        ? `${Math.round(flags.baseline * 100)}% for every task (--baseline)`
        : rates.length >= 2
          ? `the treatment's pass rate per task in the cohort's last analysis (${rates.length} tasks)`
          : `${Math.round((baseline as number) * 100)}% for every task (no analysis yet: the worst case, where a drop is hardest to see)`,
    plan,
    price,
    cost: price ? { tasks: sized, cohort_usd: sized * reps * arms * price.per_attempt, pull_request_usd: sized * reps * treatments * price.per_attempt } : null,
  };
}

const pct = (x: number) => `${Math.round(x * 100)}%`;
const usd = (x: number) => `$${x < 10 ? x.toFixed(2) : Math.round(x).toLocaleString('en-US')}`;

/** The planner's answer in lines a person reads. */
export function sizeLines(s: CohortSize): string[] {
  const p = s.plan;
  const d = s.design;
  const out = [
    `cohort ${s.cohort}: ${d.tasks} tasks x ${d.reps} reps x ${d.arms} arms (${d.attempts} attempts; a pull request that changes the treatment runs ${d.attempts_per_pull_request}), alpha ${p.design.alpha}, power ${pct(p.design.power)}`,
    `  pass rates assumed: ${s.baseline}`,
  ];
  const reg = p.regression;
  const other = reg.by_reps.map((r) => `${r.tasks ?? 'over 2000'} at ${r.reps} rep${r.reps === 1 ? '' : 's'}`).join(', ');
  out.push(
    `  regression (a ${Math.round(p.design.detect * 1000) / 10} pp drop): caught ${pct(p.at_design.regression_power)} of the time at this size; ` +
      (reg.tasks_needed === null ? 'no size up to 2000 tasks reaches the power' : `${pct(p.design.power)} needs ${reg.tasks_needed} tasks at ${d.reps} reps`) +
      (other ? ` (or ${other})` : ''),
  );
  out.push(
    `  new-harm: fails on ${p.new_harm.tasks_to_fail} task${p.new_harm.tasks_to_fail === 1 ? '' : 's'} hurt in every rep (that the control and the base solved) at ${d.reps} reps`,
  );
  if (p.noninferiority && p.design.margin !== null)
    out.push(
      `  not-noninferior (margin ${Math.round(p.design.margin * 1000) / 10} pp): a change that does nothing fails it ${pct(p.at_design.noninferiority_false_alarm!)} of the time here; ` +
        (p.noninferiority.tasks_needed === null
          ? 'no size up to 2000 tasks carries this margin'
          : `at most 5% needs ${p.noninferiority.tasks_needed} tasks at ${d.reps} reps`) +
        `; a change as bad as the margin is shown safe ${pct(p.at_design.noninferiority_false_safe!)} of the time (alpha)`,
    );
  out.push(`  compare: one task shows a flip on its own from ${p.reps_for_one_task_flip} reps a side`);
  if (s.cost && s.price)
    out.push(
      `  cost at ${usd(s.price.per_attempt)} per attempt (${s.price.source}): ${s.cost.tasks} tasks cost ${usd(s.cost.cohort_usd)} for the cohort and ${usd(s.cost.pull_request_usd)} per pull request that changes the treatment`,
    );
  else out.push('  cost: unknown (no recorded attempt has a cost): run pairbench probe, then pass --cost-per-attempt USD');
  for (const l of p.shortfalls) out.push(`  warning: ${l}`);
  return out;
}
