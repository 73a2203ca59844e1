/**
 * The planner: before anyone pays for a run, what a pull-request gate can and cannot see at a
 * cohort's size, and the size it needs.
 *
 * Its model of a pull request: each task's treatment passes with the base's rate (one rate for
 * every task, or the base's own per-task rates); the head drops it by `detect` (a regression)
 * or leaves it alone (no change); the head reuses the base's control attempts. Each simulated
 * pull request is judged by the same tests the check uses (head-vs-base.ts), so a figure here
 * is what the gate does under that model, discreteness and all; `npm run calibrate` checks it
 * against pull requests simulated through the whole analysis.
 */
import normalQuantileFn from '@stdlib/stats-base-dists-normal-quantile';
import { noninferiorityTest, regressionTest, repsForOneTaskFlip, taskChanges, type TaskSides } from './head-vs-base.js';
import { seededRng, type Rng } from './rng.js';

export interface PlannerInput {
  tasks: number;
  /** Reps a side (each arm's reps per task). */
  reps: number;
  alpha: number;
  /** The power a gate should have against `detect` (default 0.8). */
  power: number;
  /** The treatment's pass rate on the base: one for every task, or per task (cycled to `tasks`). */
  baseline: number | readonly number[];
  /** The drop in the treatment's pass rate the regression gate should catch. */
  detect: number;
  /** not-noninferior's preregistered margin, when that gate is on. */
  margin?: number;
  /** Simulated pull requests per figure (default 1000). */
  sims?: number;
  /** Also size the regression gate at other reps (1, 2, 3, 5): default true. */
  otherReps?: boolean;
  seed?: number;
}

/** What each gate does under the planner's model, at one design. */
export interface GateRates {
  /** How often a regression of `detect` fails regression. */
  regression_power: number;
  /** How often a pull request that changes nothing fails not-noninferior (its false alarms), when the gate is on. */
  noninferiority_false_alarm: number | null;
  /** How often a change exactly `margin` worse passes not-noninferior ("shown safe" when it is not). */
  noninferiority_false_safe: number | null;
}

export interface GatePlan {
  design: { tasks: number; reps: number; alpha: number; power: number; baseline: string; detect: number; margin: number | null; sims: number };
  at_design: GateRates;
  regression: {
    /** The fewest tasks at the cohort's reps whose power against `detect` reaches `power` (null: none up to the search's cap). */
    tasks_needed: number | null;
    /** The same at other reps: tasks x reps trade. */
    by_reps: { reps: number; tasks: number | null }[];
  };
  noninferiority: { tasks_needed: number | null } | null;
  new_harm: {
    /** The fewest tasks newly hurt in every rep that new-harm fails on at the cohort's reps (the control and base solving them). */
    tasks_to_fail: number;
  };
  /** The fewest reps a side at which one task can show a flip on its own. */
  reps_for_one_task_flip: number;
  /** Each gate the design cannot carry, in words. */
  shortfalls: string[];
}

/** How often no change may fail not-noninferior at the planner's size, in its own simulation (5% in use, with room for its error). */
const NONINFERIORITY_TARGET = 0.025;

/** The largest cohort the search tries. */
const MAX_TASKS = 2000;

const normalQuantile = (p: number) => normalQuantileFn(p, 0, 1);

const rateAt = (baseline: PlannerInput['baseline'], i: number) => (typeof baseline === 'number' ? baseline : baseline[i % baseline.length]!);

const draw = (rng: Rng, p: number, n: number): (0 | 1)[] => Array.from({ length: n }, () => (rng.uniform() < p ? 1 : 0));

/** One simulated pull request: the base, and a head that moves every task's treatment rate by `shift`. */
export function simulatedPullRequest(rng: Rng, tasks: number, reps: number, baseline: PlannerInput['baseline'], shift: number): TaskSides[] {
  return Array.from({ length: tasks }, (_, i) => {
    const p = rateAt(baseline, i);
    const control = draw(rng, p, reps);
    return {
      task: `t${i}`,
      family: `t${i}`,
      base: { control, treatment: draw(rng, p, reps) },
      head: { control, treatment: draw(rng, Math.min(1, Math.max(0, p + shift)), reps) },
      sharedControl: true,
    };
  });
}

/** Each gate's rate at one design, from `sims` simulated pull requests per scenario. */
export function gateRates(input: PlannerInput, tasks: number, reps: number): GateRates {
  const sims = input.sims ?? 1000;
  // One seed per simulated pull request and scenario: a task's draws are the same at every size
  // (common random numbers), so a rate moves with the size, not with the draws.
  const rngOf = (scenario: number, s: number) => seededRng((((input.seed ?? 1) * 7919 + scenario * 1_000_003 + s) % 4294967294) + 1);
  let caught = 0;
  for (let s = 0; s < sims; s++) {
    const changes = taskChanges(simulatedPullRequest(rngOf(1, s), tasks, reps, input.baseline, -input.detect), input.alpha);
    if (regressionTest(changes).p <= input.alpha + 1e-12) caught++;
  }
  let falseAlarm: number | null = null;
  let falseSafe: number | null = null;
  if (input.margin !== undefined) {
    let alarms = 0;
    let safe = 0;
    for (let s = 0; s < sims; s++) {
      const same = taskChanges(simulatedPullRequest(rngOf(2, s), tasks, reps, input.baseline, 0), input.alpha);
      if (!noninferiorityTest(same, input.margin, input.alpha).shown) alarms++;
      const worse = taskChanges(simulatedPullRequest(rngOf(3, s), tasks, reps, input.baseline, -input.margin), input.alpha);
      if (noninferiorityTest(worse, input.margin, input.alpha).shown) safe++;
    }
    falseAlarm = alarms / sims;
    falseSafe = safe / sims;
  }
  return { regression_power: caught / sims, noninferiority_false_alarm: falseAlarm, noninferiority_false_safe: falseSafe };
}

/** Var of one task's change under the model: two sides of `reps` draws each. */
function changeVariance(p: number, q: number, reps: number): number {
  return (p * (1 - p) + q * (1 - q)) / reps;
}

/** A first guess at the tasks a one-sided z-test needs (the search starts here). */
function normalGuess(input: PlannerInput, reps: number, effect: number, nullShift: number, power: number): number {
  const p = typeof input.baseline === 'number' ? input.baseline : input.baseline.reduce((s, x) => s + x, 0) / input.baseline.length;
  const q = Math.min(1, Math.max(0, p + nullShift));
  const sd0 = Math.sqrt(changeVariance(p, p, reps));
  const sd1 = Math.sqrt(changeVariance(p, q, reps));
  const n = ((normalQuantile(1 - input.alpha) * sd0 + normalQuantile(power) * sd1) / Math.max(1e-6, effect)) ** 2;
  return Math.max(2, Math.min(MAX_TASKS, Math.ceil(n)));
}

/** The fewest tasks (2..MAX_TASKS) at which `ok(n)` holds, assuming it holds from some n on: a bracketing search from a guess. */
function fewestTasks(guess: number, ok: (n: number) => boolean): number | null {
  let hi = guess;
  while (!ok(hi)) {
    if (hi >= MAX_TASKS) return null;
    hi = Math.min(MAX_TASKS, Math.ceil(hi * 1.5) + 1);
  }
  let lo = Math.max(1, Math.floor(hi / 1.5) - 1);
  while (lo > 1 && ok(lo)) lo = Math.max(1, Math.floor(lo / 1.5));
  // ok(hi), and not ok(lo) (or lo = 1): bisect.
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if (ok(mid)) hi = mid;
    else lo = mid;
  }
  return hi;
}

function binomial(n: number, k: number): number {
  let c = 1;
  for (let i = 1; i <= k; i++) c = (c * (n - k + i)) / i;
  return c;
}

/** The planner's answer for one cohort design and its gates. */
export function planGates(input: PlannerInput): GatePlan {
  const sims = input.sims ?? 1000;
  const at = gateRates(input, input.tasks, input.reps);
  const regressionNeeded = (reps: number) =>
    fewestTasks(
      normalGuess(input, reps, input.detect, -input.detect, input.power),
      (n) => gateRates({ ...input, margin: undefined }, n, reps).regression_power >= input.power,
    );
  const tasksNeeded = regressionNeeded(input.reps);
  const byReps = input.otherReps === false ? [] : [1, 2, 3, 5].filter((r) => r !== input.reps).map((reps) => ({ reps, tasks: regressionNeeded(reps) }));
  // not-noninferior is sized so that a change that does nothing fails it at most 5% of the time. The
  // planner's own figure is a simulation: it asks for half that, so the size holds beyond its error.
  const atMostFivePercent = (rate: number) => rate <= NONINFERIORITY_TARGET;
  const noninferiority =
    input.margin === undefined
      ? null
      : {
          tasks_needed: fewestTasks(normalGuess(input, input.reps, input.margin, 0, 0.95), (n) =>
            atMostFivePercent(gateRates({ ...input, detect: input.detect }, n, input.reps).noninferiority_false_alarm!),
          ),
        };
  // new-harm on tasks the control and the base solve in every rep: each such task alone has chance 1 / C(2R, R) under no change.
  const single = 1 / binomial(2 * input.reps, input.reps);
  const tasksToFail = Math.max(1, Math.ceil(Math.log(input.alpha) / Math.log(single) - 1e-9));
  const shortfalls: string[] = [];
  const pct = (x: number) => `${Math.round(x * 100)}%`;
  const ppOf = (x: number) => `${Math.round(x * 1000) / 10} pp`;
  if (at.regression_power < input.power)
    shortfalls.push(
      `regression catches a ${ppOf(input.detect)} drop ${pct(at.regression_power)} of the time at ${input.tasks} tasks x ${input.reps} reps (goal ${pct(input.power)}): ` +
        (tasksNeeded === null ? `no size up to ${MAX_TASKS} tasks reaches it` : `it needs ${tasksNeeded} tasks at ${input.reps} reps`),
    );
  if (at.noninferiority_false_alarm !== null && at.noninferiority_false_alarm > 0.05)
    shortfalls.push(
      `not-noninferior (margin ${ppOf(input.margin!)}) fails ${pct(at.noninferiority_false_alarm)} of pull requests that change nothing at ${input.tasks} tasks x ${input.reps} reps (goal at most 5%): ` +
        (noninferiority?.tasks_needed ? `it needs ${noninferiority.tasks_needed} tasks, or a wider margin` : 'no size within reach carries this margin'),
    );
  return {
    design: {
      tasks: input.tasks,
      reps: input.reps,
      alpha: input.alpha,
      power: input.power,
      baseline: typeof input.baseline === 'number' ? `${pct(input.baseline)} for every task` : `the base's own rates (${input.baseline.length} tasks)`,
      detect: input.detect,
      margin: input.margin ?? null,
      sims,
    },
    at_design: at,
    regression: { tasks_needed: tasksNeeded, by_reps: byReps },
    noninferiority,
    new_harm: { tasks_to_fail: tasksToFail },
    reps_for_one_task_flip: repsForOneTaskFlip(input.alpha),
    shortfalls,
  };
}
