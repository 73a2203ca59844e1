/**
 * Two runs of one cohort compared task by task (`pairbench compare BASE HEAD`): per comparison,
 * the verdict and effect on each side, the change in effect with a paired interval over the
 * tasks both share, the tasks whose outcome flipped, the change in cost, and whether the two
 * runs are comparable at all. A difference in what was run (tasks, agent, model, isolation,
 * whether the model was scripted) is named, never averaged over: where the agent, model or
 * isolation differ, no effect change is estimated.
 */
import { scored } from './arm-metrics.js';
import { mean } from './describe.js';
import {
  adjustAcross,
  flipsOf,
  newHarmTest,
  noninferiorityTest,
  regressionTest,
  repsForOneTaskFlip,
  taskChanges,
  type NewHarmTest,
  type NoninferiorityTest,
  type RegressionTest,
  type TaskChange,
  type TaskSides,
} from './head-vs-base.js';
import { alphaOf, clusterTInterval, unitsOf } from './inference.js';
import { pairAttempts, type PairedTask } from './pairing.js';
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
  /** head effect - base effect on this task. */
  change: number;
  /** Two-sided: how often a change that does nothing moves this task at least this far (exact, within the task). */
  p: number;
  /** Every head rep differs from every base rep the same way. */
  consistent: boolean;
}

/** The tests of the head against the base over the shared tasks (stats/head-vs-base.ts); p_holm over the cohort's comparisons. */
export interface ChangeTests {
  regression: RegressionTest;
  new_harm: NewHarmTest;
  /** With a margin (a gate's noninferiority_margin): the lower bound of head - base against it. */
  noninferiority: NoninferiorityTest | null;
  alpha: number;
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
  /**
   * Tasks whose change is beyond what no change gives, on their own (a two-sided exact test within
   * the task, at the cohort's alpha). Empty when the runs are not comparable.
   */
  flipped: FlippedTask[];
  /** Tasks that moved, but within what no change gives on their own. */
  moved: FlippedTask[];
  /** How many tasks a change that does nothing would list as flipped at this size (null: not comparable). */
  flips_expected_no_change: number | null;
  /** The fewest reps a side at which one task can show a flip on its own. */
  reps_for_one_task_flip: number;
  /** Null when the runs are not comparable or share no task. */
  tests: ChangeTests | null;
  /**
   * Mean weighted cost per attempt over the shared tasks, per arm, on each side, and head / base
   * (null where a side has no cost for that arm).
   */
  cost: { arm: string; base: number | null; head: number | null; ratio: number | null }[];
}

/** What the head ran and what it reused from the base (the same attempt, with the same record). */
export interface Reuse {
  head_attempts: number;
  reused: number;
  ran: number;
  /** What the attempts the head ran cost (null when none reported a cost: a scripted model). */
  ran_cost_usd: number | null;
}

export interface RunDiff {
  schema_version: 1;
  base: { label: string; cohort: string; version: number | null };
  head: { label: string; cohort: string; version: number | null };
  reuse: Reuse;
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

/** The same attempt on both sides (the head reused the base's record): nothing about it differs. */
export function sameAttempt(a: AttemptRecord, b: AttemptRecord): boolean {
  return a.started_at === b.started_at && a.ended_at === b.ended_at && a.wall_ms === b.wall_ms && a.pass === b.pass && a.cost_usd === b.cost_usd;
}

/** A side's valid pairs of (control, treatment), by task. */
function pairsOf(side: RunSide, control: string, treatment: string): Map<string, PairedTask> {
  const of = (arm: string) => side.attempts.filter((a) => a.arm === arm);
  return new Map(pairAttempts(of(control), of(treatment)).tasks.map((t) => [t.task, t]));
}

/** A shared task's outcomes on each side, and whether its control attempts are the base's own. */
function taskSides(b: PairedTask, h: PairedTask): TaskSides {
  const outcomes = (t: PairedTask) => ({ control: t.control.map(scored), treatment: t.treatment.map(scored) });
  const sharedControl = b.control.length === h.control.length && b.control.every((c, i) => c.rep === h.control[i]!.rep && sameAttempt(c, h.control[i]!));
  return { task: b.task, family: b.family, base: outcomes(b), head: outcomes(h), sharedControl };
}

function flippedTask(c: TaskChange, b: TaskOutcome, h: TaskOutcome): FlippedTask {
  return {
    task: c.task,
    base_class: b.class,
    head_class: h.class,
    control: { base: b.control_pass_rate, head: h.control_pass_rate },
    treatment: { base: b.treatment_pass_rate, head: h.treatment_pass_rate },
    change: c.delta,
    p: c.p,
    consistent: c.consistent,
  };
}

interface Sides {
  base: RunSide;
  head: RunSide;
}

function diffComparison(
  sides: Sides,
  base: Comparison | undefined,
  head: Comparison | undefined,
  estimable: boolean,
  confidence: number,
  /** not-noninferior's margin, and the alpha its bound is taken at (alpha over the cohort's comparisons). */
  margin: { value: number; alpha: number } | undefined,
  seed: number,
): ComparisonDiff {
  const c = (base ?? head)!;
  const alpha = alphaOf(confidence);
  const baseTasks = new Map((base?.outcomes?.tasks ?? []).map((t) => [t.task, t]));
  const headTasks = new Map((head?.outcomes?.tasks ?? []).map((t) => [t.task, t]));
  const shared = [...baseTasks.keys()].filter((t) => headTasks.has(t)).sort();
  const pairs = shared.map((t) => ({ b: baseTasks.get(t)!, h: headTasks.get(t)! }));
  let effectChange: ComparisonDiff['effect_change'] = null;
  let tests: ChangeTests | null = null;
  let flipped: FlippedTask[] = [];
  let moved: FlippedTask[] = [];
  let expected: number | null = null;
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
    // Rep by rep, within each task: what no change could have given (stats/head-vs-base.ts).
    const basePairs = pairsOf(sides.base, c.control, c.treatment);
    const headPairs = pairsOf(sides.head, c.control, c.treatment);
    const within = taskChanges(
      shared.filter((t) => basePairs.has(t) && headPairs.has(t)).map((t) => taskSides(basePairs.get(t)!, headPairs.get(t)!)),
      alpha,
      seed,
    );
    tests = {
      regression: regressionTest(within),
      new_harm: newHarmTest(within),
      noninferiority: margin === undefined ? null : noninferiorityTest(within, margin.value, margin.alpha),
      alpha,
    };
    const f = flipsOf(within, alpha);
    const row = (x: TaskChange) => flippedTask(x, baseTasks.get(x.task)!, headTasks.get(x.task)!);
    flipped = f.flipped.map(row);
    moved = f.moved.map(row);
    expected = f.expected;
  }
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
    moved,
    flips_expected_no_change: expected,
    reps_for_one_task_flip: repsForOneTaskFlip(alpha),
    tests,
    cost,
  };
}

/** What the head ran, and what it reused of the base's attempts. */
function reuseOf(base: RunSide, head: RunSide): Reuse {
  const key = (a: AttemptRecord) => `${a.task}\u0000${a.arm}\u0000${a.rep}`;
  const inBase = new Map(base.attempts.map((a) => [key(a), a]));
  const ran = head.attempts.filter((a) => {
    const b = inBase.get(key(a));
    return !b || !sameAttempt(a, b);
  });
  const costs = ran.flatMap((a) => (a.cost_usd === null ? [] : [a.cost_usd]));
  return {
    head_attempts: head.attempts.length,
    reused: head.attempts.length - ran.length,
    ran: ran.length,
    ran_cost_usd: costs.length ? costs.reduce((s, x) => s + x, 0) : null,
  };
}

/**
 * BASE and HEAD compared, comparison by comparison (the base's order, then any only the head has).
 * The base's spec decides what the tests are run at (its confidence, its gate's margin): on a
 * pull request the base is the preregistration.
 */
export function diffRuns(base: RunSide, head: RunSide): RunDiff {
  const { mismatches, blocking } = mismatchesOf(base, head);
  const headByKey = new Map(head.analysis.comparisons.map((c) => [key(c), c]));
  const baseKeys = new Set(base.analysis.comparisons.map(key));
  const spec = base.analysis.spec;
  // One bound per comparison: each at alpha / m keeps the chance that any is wrongly shown safe within alpha.
  const m = Math.max(1, base.analysis.comparisons.length);
  const margin = spec.gate?.noninferiority_margin === undefined ? undefined : { value: spec.gate.noninferiority_margin, alpha: alphaOf(spec.confidence) / m };
  const sides = { base, head };
  const diff = (b: Comparison | undefined, h: Comparison | undefined) => diffComparison(sides, b, h, !blocking, spec.confidence, margin, spec.bootstrap.seed);
  const comparisons = [
    ...base.analysis.comparisons.map((b) => diff(b, headByKey.get(key(b)))),
    ...head.analysis.comparisons.filter((h) => !baseKeys.has(key(h))).map((h) => diff(undefined, h)),
  ];
  // Holm over the cohort's comparisons, for each test, as the analysis adjusts its own.
  const tested = comparisons.flatMap((d) => (d.tests ? [d.tests] : []));
  adjustAcross(tested.map((t) => t.regression));
  adjustAcross(tested.map((t) => t.new_harm));
  for (const d of comparisons) {
    if (!d.base) mismatches.push(`comparison ${d.treatment} vs ${d.control}: only in ${head.label}`);
    if (!d.head) mismatches.push(`comparison ${d.treatment} vs ${d.control}: only in ${base.label}`);
  }
  const side = (s: RunSide) => ({ label: s.label, cohort: s.cohort, version: s.version });
  return { schema_version: 1, base: side(base), head: side(head), reuse: reuseOf(base, head), comparable: mismatches.length === 0, mismatches, comparisons };
}
