/**
 * Two runs of one cohort compared task by task (`pairbench compare BASE HEAD`): per comparison,
 * the verdict and effect on each side, the change in effect with a paired interval over the
 * tasks both share, the tasks whose outcome flipped, the change in cost, and whether the two
 * runs are comparable at all. A difference in what was run (tasks, agent, model, isolation,
 * whether the model was scripted) is named, never averaged over: where the agent, model or
 * isolation differ, no effect change is estimated.
 */
import { mean } from './describe.js';
import { clusterTInterval, unitsOf } from './inference.js';
import type { AnalysisResult, AttemptRecord, Comparison, Interval, OutcomeClass, TaskOutcome, Verdict } from './types.js';

/** One side of a comparison of runs: a cohort's analysis and the attempt records it was made from. */
export interface RunSide {
  /** How the side is named to the user (a bundle's directory, say). */
  label: string;
  cohort: string;
  version: number | null;
  analysis: AnalysisResult;
  attempts: readonly AttemptRecord[];
}

/** A comparison's figures on one side. */
export interface SideFigures {
  verdict: Verdict;
  delta: number | null;
  ci: Interval | null;
  n_tasks: number;
  cost_ratio: number | null;
}

/** A task whose outcome on some arm changed between the runs. */
export interface FlippedTask {
  task: string;
  /** The task's outcome class (a/b/c) on each side. */
  base_class: OutcomeClass;
  head_class: OutcomeClass;
  control: { base: number; head: number };
  treatment: { base: number; head: number };
}

export interface ComparisonDiff {
  control: string;
  treatment: string;
  /** Null when the comparison is not in that run. */
  base: SideFigures | null;
  head: SideFigures | null;
  /** Tasks with valid pairs on both sides; the effect change is over these only. */
  shared_tasks: string[];
  only_base: string[];
  only_head: string[];
  /**
   * head effect - base effect, per shared task (paired by task), averaged; its interval is the
   * cluster-robust t over the task (or family) units, as the analysis' own. Null when the runs are
   * not comparable, or no task is shared.
   */
  effect_change: { estimate: number; ci: Interval | null; n_tasks: number } | null;
  flipped: FlippedTask[];
  /**
   * Mean weighted cost per attempt over the shared tasks, per arm, on each side, and head / base
   * (null where a side has no cost for that arm).
   */
  cost: { arm: string; base: number | null; head: number | null; ratio: number | null }[];
}

export interface RunDiff {
  schema_version: 1;
  base: { label: string; cohort: string; version: number | null };
  head: { label: string; cohort: string; version: number | null };
  /** True when nothing below is named: the same cohort, tasks, agent, model, isolation and scripting. */
  comparable: boolean;
  /** What differs between the runs, each in words a reader can act on. */
  mismatches: string[];
  comparisons: ComparisonDiff[];
}

/**
 * The properties of a run's attempts that must match for an effect change to mean anything (a
 * difference in tasks does not block it: the shared ones still compare).
 */
const FACTS: readonly { what: string; of: (a: AttemptRecord) => string }[] = [
  { what: 'agent', of: (a) => `${a.agent.adapter} ${a.agent.version}` },
  { what: 'model', of: (a) => `${a.agent.provider}/${a.agent.model}` },
  { what: 'isolation', of: (a) => a.sandbox.isolation },
  { what: 'scripted model', of: (a) => (a.scripted ? 'scripted' : 'provider') },
];

const valuesOf = (attempts: readonly AttemptRecord[], of: (a: AttemptRecord) => string): string[] => [...new Set(attempts.map(of))].sort();

/** The differences between the runs, and whether any of them makes an effect change meaningless. */
function mismatchesOf(base: RunSide, head: RunSide): { mismatches: string[]; blocking: boolean } {
  const mismatches: string[] = [];
  let blocking = false;
  if (base.cohort !== head.cohort) {
    mismatches.push(`cohort: ${base.cohort} in ${base.label}, ${head.cohort} in ${head.label}`);
    blocking = true;
  }
  for (const f of FACTS) {
    const b = valuesOf(base.attempts, f.of);
    const h = valuesOf(head.attempts, f.of);
    if (b.join('\n') === h.join('\n')) continue;
    mismatches.push(`${f.what}: ${b.join(', ') || 'none'} in ${base.label}, ${h.join(', ') || 'none'} in ${head.label}`);
    blocking = true;
  }
  const bt = new Set(base.attempts.map((a) => a.task));
  const ht = new Set(head.attempts.map((a) => a.task));
  const onlyBase = [...bt].filter((t) => !ht.has(t)).sort();
  const onlyHead = [...ht].filter((t) => !bt.has(t)).sort();
  if (onlyBase.length || onlyHead.length)
    mismatches.push(
      `tasks: ${onlyBase.length} only in ${base.label}${onlyBase.length ? ` (${onlyBase.join(', ')})` : ''}, ${onlyHead.length} only in ${head.label}${onlyHead.length ? ` (${onlyHead.join(', ')})` : ''}; effects compare over the shared tasks`,
    );
  if (base.analysis.spec.confidence !== head.analysis.spec.confidence)
    mismatches.push(`confidence: ${base.analysis.spec.confidence} in ${base.label}, ${head.analysis.spec.confidence} in ${head.label}`);
  return { mismatches, blocking };
}

const figures = (c: Comparison): SideFigures => ({ verdict: c.verdict, delta: c.delta, ci: c.ci, n_tasks: c.n_tasks, cost_ratio: c.cost_ratio });

const key = (c: { control: string; treatment: string }) => `${c.treatment}\u0000${c.control}`;

function diffComparison(base: Comparison | undefined, head: Comparison | undefined, estimable: boolean, confidence: number): ComparisonDiff {
  const c = (base ?? head)!;
  const baseTasks = new Map((base?.outcomes?.tasks ?? []).map((t) => [t.task, t]));
  const headTasks = new Map((head?.outcomes?.tasks ?? []).map((t) => [t.task, t]));
  const shared = [...baseTasks.keys()].filter((t) => headTasks.has(t)).sort();
  const pairs = shared.map((t) => ({ b: baseTasks.get(t)!, h: headTasks.get(t)! }));
  let effectChange: ComparisonDiff['effect_change'] = null;
  if (estimable && pairs.length) {
    const changes = pairs.map(({ b, h }) => h.delta - b.delta);
    const units = unitsOf(
      changes,
      pairs.map(({ h }) => h.family),
    );
    effectChange = {
      estimate: mean(changes)!,
      // A change of two differences of pass rates lies in [-2, 2].
      ci: clusterTInterval(units, confidence, [-2, 2]),
      n_tasks: pairs.length,
    };
  }
  const flipped = pairs
    .filter(({ b, h }) => b.control_pass_rate !== h.control_pass_rate || b.treatment_pass_rate !== h.treatment_pass_rate)
    .map(({ b, h }) => ({
      task: b.task,
      base_class: b.class,
      head_class: h.class,
      control: { base: b.control_pass_rate, head: h.control_pass_rate },
      treatment: { base: b.treatment_pass_rate, head: h.treatment_pass_rate },
    }));
  const cost = (
    [
      [c.control, (t: TaskOutcome) => t.control_mean_weighted_cost],
      [c.treatment, (t: TaskOutcome) => t.treatment_mean_weighted_cost],
    ] as const
  ).map(([arm, of]) => {
    const costs = (side: 'b' | 'h') => mean(pairs.flatMap((p) => of(p[side]) ?? []));
    const b = costs('b');
    const h = costs('h');
    return { arm, base: b, head: h, ratio: b !== null && h !== null && b > 0 ? h / b : null };
  });
  return {
    control: c.control,
    treatment: c.treatment,
    base: base ? figures(base) : null,
    head: head ? figures(head) : null,
    shared_tasks: shared,
    only_base: [...baseTasks.keys()].filter((t) => !headTasks.has(t)).sort(),
    only_head: [...headTasks.keys()].filter((t) => !baseTasks.has(t)).sort(),
    effect_change: effectChange,
    flipped,
    cost,
  };
}

/** BASE and HEAD compared, comparison by comparison (the base's order, then any only the head has). */
export function diffRuns(base: RunSide, head: RunSide): RunDiff {
  const { mismatches, blocking } = mismatchesOf(base, head);
  const headByKey = new Map(head.analysis.comparisons.map((c) => [key(c), c]));
  const baseKeys = new Set(base.analysis.comparisons.map(key));
  const confidence = head.analysis.spec.confidence;
  const comparisons = [
    ...base.analysis.comparisons.map((b) => diffComparison(b, headByKey.get(key(b)), !blocking, confidence)),
    ...head.analysis.comparisons.filter((h) => !baseKeys.has(key(h))).map((h) => diffComparison(undefined, h, !blocking, confidence)),
  ];
  for (const d of comparisons) {
    if (!d.base) mismatches.push(`comparison ${d.treatment} vs ${d.control}: only in ${head.label}`);
    if (!d.head) mismatches.push(`comparison ${d.treatment} vs ${d.control}: only in ${base.label}`);
  }
  const side = (s: RunSide) => ({ label: s.label, cohort: s.cohort, version: s.version });
  return { schema_version: 1, base: side(base), head: side(head), comparable: mismatches.length === 0, mismatches, comparisons };
}
