/**
 * Head against base, paired by task: the tests behind the pull-request check's gates and
 * compare's flips.
 *
 * The base and the head run the same frozen tasks; the question is whether the change moved
 * the outcomes on them. Under "the change does nothing", a task's attempts in the head and in
 * the base are exchangeable draws of the same agent on the same task, so each test here is an
 * exact permutation test conditional on every task's pooled outcomes: within each task, the
 * outcomes are re-dealt between head and base in every way the design allows, independently
 * per task, and the observed statistic is ranked among them. Whatever the tasks' pass rates
 * (0.5, 0.97, a deterministic agent), a test at alpha then fails at most alpha of no-change
 * pull requests: the calibration is by construction, and `npm run calibrate` measures it.
 *
 * What is re-dealt depends on the control: a control attempt the head reused from the base
 * (the usual case: a pull request that changes the treatment re-runs only the treatment) is
 * the same attempt on both sides, so only the treatment's outcomes move, each rep keeping its
 * control; controls run again on the head are draws too, and whole (control, treatment)
 * pairs are re-dealt.
 *
 * A task-level sign-flip test (the analysis' own, which generalises to tasks not in the
 * suite) answers a different question and needs six tasks that all moved before it can reach
 * 0.05; a gate on a fixed suite asks about these tasks.
 */
import { holm } from './exact-tests.js';
import { unitsOf } from './inference.js';
import { seededRng, type Rng } from './rng.js';

/** One side's valid pairs of a task, aligned by rep: 1 passed, 0 did not (failures and no answer). */
export interface SideOutcomes {
  control: readonly (0 | 1)[];
  treatment: readonly (0 | 1)[];
}

/** A task both runs have valid pairs of. */
export interface TaskSides {
  task: string;
  family: string;
  base: SideOutcomes;
  head: SideOutcomes;
  /** The head's control attempts are the base's own (reused), rep for rep. */
  sharedControl: boolean;
}

/** d = (the head's treatment - control pass rate) - (the base's), scaled to an integer so sums are exact. */
const SCALE = 720720; // lcm(1..16): exact for any reps up to 16 a side
const scaled = (x: number) => Math.round(x * SCALE);

/** One way the outcomes could have been dealt between head and base, with its probability. */
interface Deal {
  /** The change in effect, scaled. */
  d: number;
  /** The head hurts in every rep (control passed, treatment failed) and the base did not. */
  harm: boolean;
  w: number;
}

/** A task's change, with every way it could have come out under no change. */
export interface TaskChange {
  task: string;
  family: string;
  /** head effect - base effect on this task, in [-2, 2]. */
  delta: number;
  /** The head hurts in every rep, and the base did not. */
  newHarm: boolean;
  /** Two-sided: how often no change moves this task at least this far. */
  p: number;
  /** How often no change makes this task a new harm. */
  harmChance: number;
  /** How often no change makes this task a flip at alpha (the size of its rejection region). */
  flipChance: number;
  /** The change holds in every rep: each head rep differs from each base rep the same way (descriptive). */
  consistent: boolean;
  sharedControl: boolean;
  null: Deal[];
}

/** Enumerated exactly up to this many deals per task; sampled (seeded) beyond. */
const EXACT_DEALS = 20_000;
const SAMPLED_DEALS = 4_000;

function choose(n: number, k: number): number {
  let c = 1;
  for (let i = 1; i <= k; i++) c = (c * (n - k + i)) / i;
  return Math.round(c);
}

/** Calls `fn` with each size-`m` subset of 0..n-1 (as a membership array), or with a seeded sample of them. */
function forEachSubset(n: number, m: number, rng: () => Rng, fn: (inSubset: Uint8Array, weight: number) => void): void {
  const member = new Uint8Array(n);
  const total = choose(n, m);
  if (total <= EXACT_DEALS) {
    const idx = Array.from({ length: m }, (_, i) => i);
    for (;;) {
      member.fill(0);
      for (const i of idx) member[i] = 1;
      fn(member, 1 / total);
      let i = m - 1;
      while (i >= 0 && idx[i] === n - m + i) i--;
      if (i < 0) return;
      idx[i]!++;
      for (let j = i + 1; j < m; j++) idx[j] = idx[j - 1]! + 1;
    }
  }
  const r = rng();
  const order = Array.from({ length: n }, (_, i) => i);
  for (let s = 0; s < SAMPLED_DEALS; s++) {
    for (let i = n - 1; i > 0; i--) {
      const j = r.int(i + 1);
      [order[i], order[j]] = [order[j]!, order[i]!];
    }
    member.fill(0);
    for (let i = 0; i < m; i++) member[order[i]!] = 1;
    fn(member, 1 / SAMPLED_DEALS);
  }
}

const meanOf = (xs: readonly number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;
const hurtEveryRep = (s: SideOutcomes) => s.control.length > 0 && s.control.every((c, i) => c === 1 && s.treatment[i] === 0);
const effectOf = (s: SideOutcomes) => meanOf(s.treatment) - meanOf(s.control);

/** Every deal of a task's outcomes between head and base that no change makes equally likely. */
function nullDeals(t: TaskSides, seed: number): Deal[] {
  const rb = t.base.control.length;
  const rh = t.head.control.length;
  const rng = () => seededRng(seed);
  const byKey = new Map<string, Deal>();
  const add = (head: SideOutcomes, base: SideOutcomes, w: number) => {
    const d = scaled(effectOf(head) - effectOf(base));
    const harm = hurtEveryRep(head) && !hurtEveryRep(base);
    const k = `${d}/${harm}`;
    const had = byKey.get(k);
    if (had) had.w += w;
    else byKey.set(k, { d, harm, w });
  };
  if (t.sharedControl) {
    // Each rep keeps its control; the treatment's outcomes are re-dealt over the 2R slots.
    const controls = [...t.base.control, ...t.head.control];
    const treatments = [...t.base.treatment, ...t.head.treatment];
    const passes = treatments.reduce<number>((s, x) => s + x, 0);
    forEachSubset(controls.length, passes, rng, (member, w) => {
      const dealt = Array.from(member) as (0 | 1)[];
      add({ control: controls.slice(rb), treatment: dealt.slice(rb) }, { control: controls.slice(0, rb), treatment: dealt.slice(0, rb) }, w);
    });
  } else {
    // Whole pairs are draws: which rh of the rb + rh pairs are the head's.
    const pairs = [...t.base.control.map((c, i) => [c, t.base.treatment[i]!] as const), ...t.head.control.map((c, i) => [c, t.head.treatment[i]!] as const)];
    forEachSubset(pairs.length, rh, rng, (member, w) => {
      const head: SideOutcomes = { control: [], treatment: [] };
      const base: SideOutcomes = { control: [], treatment: [] };
      pairs.forEach(([c, x], i) => {
        const side = member[i] ? head : base;
        (side.control as (0 | 1)[]).push(c);
        (side.treatment as (0 | 1)[]).push(x);
      });
      add(head, base, w);
    });
  }
  return [...byKey.values()];
}

/** A stable seed per task (so a report is reproducible), from the analysis' seed. */
function taskSeed(seed: number, task: string): number {
  let h = seed >>> 0;
  for (let i = 0; i < task.length; i++) h = Math.imul(h ^ task.charCodeAt(i), 16777619) >>> 0;
  return (h % 4294967294) + 1;
}

/** A task's null depends only on its outcomes: many tasks (and many simulated pull requests) share one. */
const dealsMemo = new Map<string, Deal[]>();

function memoDeals(t: TaskSides, seed: number): Deal[] {
  const sides = `${t.sharedControl ? 's' : 'i'}${t.base.control.join('')}.${t.base.treatment.join('')}.${t.head.control.join('')}.${t.head.treatment.join('')}`;
  // A sampled null depends on its seed too; an exact one does not.
  const key = t.base.control.length + t.head.control.length > 16 ? `${sides}@${seed}` : sides;
  let deals = dealsMemo.get(key);
  if (!deals) {
    if (dealsMemo.size > 50_000) dealsMemo.clear();
    deals = nullDeals(t, seed);
    dealsMemo.set(key, deals);
  }
  return deals;
}

/** Each shared task's change and its null, with the per-task test at `alpha` (two-sided). */
export function taskChanges(tasks: readonly TaskSides[], alpha: number, seed = 1): TaskChange[] {
  return tasks.map((t) => {
    const deals = memoDeals(t, taskSeed(seed, t.task));
    const d = scaled(effectOf(t.head) - effectOf(t.base));
    // Two-sided: the mass at least as far from 0 as the observed change.
    const tailOf = (x: number) => deals.reduce((s, e) => (Math.abs(e.d) >= Math.abs(x) ? s + e.w : s), 0);
    const p = Math.min(1, tailOf(d));
    const flipChance = deals.reduce((s, e) => (e.d !== 0 && tailOf(e.d) <= alpha + 1e-12 ? s + e.w : s), 0);
    const harmChance = deals.reduce((s, e) => (e.harm ? s + e.w : s), 0);
    const minHead = Math.min(...t.head.treatment.map((x, i) => x - t.head.control[i]!));
    const maxHead = Math.max(...t.head.treatment.map((x, i) => x - t.head.control[i]!));
    const minBase = Math.min(...t.base.treatment.map((x, i) => x - t.base.control[i]!));
    const maxBase = Math.max(...t.base.treatment.map((x, i) => x - t.base.control[i]!));
    return {
      task: t.task,
      family: t.family,
      delta: d / SCALE,
      newHarm: hurtEveryRep(t.head) && !hurtEveryRep(t.base),
      p,
      harmChance,
      flipChance,
      consistent: maxHead < minBase || minHead > maxBase,
      sharedControl: t.sharedControl,
      null: deals,
    };
  });
}

const gcd = (a: number, b: number): number => (b === 0 ? Math.abs(a) : gcd(b, a % b));

/**
 * How often no change gives a sum of the tasks' scaled changes at or below `observed`: the
 * exact convolution of the tasks' nulls, on the grid of their common step.
 */
function lowerTail(changes: readonly TaskChange[], observed: number): number {
  let step = 0;
  for (const c of changes) for (const e of c.null) step = gcd(step, e.d);
  if (step === 0) return observed >= 0 ? 1 : 0;
  let lo = 0;
  let probs = new Float64Array([1]);
  for (const c of changes) {
    const offsets = c.null.map((e) => e.d / step);
    const min = Math.min(...offsets);
    const width = Math.max(...offsets) - min + 1;
    const next = new Float64Array(probs.length + width - 1);
    for (let i = 0; i < probs.length; i++) {
      const w = probs[i]!;
      if (w === 0) continue;
      for (let j = 0; j < offsets.length; j++) next[i + offsets[j]! - min]! += w * c.null[j]!.w;
    }
    probs = next;
    lo += min;
  }
  // observed is a sum of grid points: its index is exact.
  const last = Math.min(probs.length - 1, Math.round(observed / step) - lo);
  let p = 0;
  for (let i = 0; i <= last; i++) p += probs[i]!;
  return p;
}

export interface RegressionTest {
  /** Mean change in effect over the shared tasks (head - base). */
  estimate: number;
  /** One-sided: how often no change gives a drop at least this large. */
  p: number;
  /** p Holm-adjusted over the cohort's comparisons (set by the caller). */
  p_holm: number;
  n_tasks: number;
}

/** regression: the head's effect below the base's, one-sided, over the tasks both ran. */
export function regressionTest(changes: readonly TaskChange[]): RegressionTest {
  if (!changes.length) return { estimate: 0, p: 1, p_holm: 1, n_tasks: 0 };
  const observed = changes.reduce((s, c) => s + scaled(c.delta), 0);
  const p = lowerTail(changes, observed);
  return { estimate: observed / SCALE / changes.length, p: Math.min(1, p), p_holm: Math.min(1, p), n_tasks: changes.length };
}

export interface NewHarmTest {
  /** Tasks the head hurts in every rep (control passed, treatment failed) that the base did not. */
  tasks: string[];
  /** How many such tasks no change gives, on average, at this size. */
  expected: number;
  /** How often no change gives at least this many. */
  p: number;
  p_holm: number;
}

/** new-harm: a count of tasks newly hurt in every rep, against what no change gives (Poisson binomial). */
export function newHarmTest(changes: readonly TaskChange[]): NewHarmTest {
  const tasks = changes.filter((c) => c.newHarm).map((c) => c.task);
  // P(count = k) under no change: the tasks are independent given their pooled outcomes.
  let dist = [1];
  for (const c of changes) {
    const q = c.harmChance;
    const next = new Array<number>(dist.length + 1).fill(0);
    dist.forEach((w, k) => {
      next[k]! += w * (1 - q);
      next[k + 1]! += w * q;
    });
    dist = next;
  }
  const p =
    tasks.length === 0
      ? 1
      : Math.min(
          1,
          dist.slice(tasks.length).reduce((s, w) => s + w, 0),
        );
  return { tasks, expected: changes.reduce((s, c) => s + c.harmChance, 0), p, p_holm: p };
}

export interface NoninferiorityTest {
  margin: number;
  /** The lower confidence bound of head - base at the cohort's alpha (a betting bound over the task or family units); null below 2 units. */
  lower: number | null;
  /** Shown not worse than the margin: the lower bound above -margin. */
  shown: boolean;
}

/**
 * A one-sided lower confidence bound at level 1 - alpha for the mean of `xs` in [0, 1], valid at
 * any n and whatever the distribution: a gambler bets, unit by unit in a fixed order, that the
 * mean is above m, with predictable plug-in stakes sized for n units (Waudby-Smith and Ramdas,
 * "Estimating means of bounded random variables by betting", 2024); by Ville's inequality a
 * candidate m at or under the true mean makes his wealth reach 1 / alpha with probability at
 * most alpha, so the m he never reaches it on bound the mean from below. The smaller m is, the
 * surer the win, so the bound is found by bisection.
 */
export function bettingLowerBound(xs: readonly number[], alpha: number): number {
  const n = xs.length;
  const threshold = Math.log(1 / alpha);
  const rejected = (m: number): boolean => {
    let logWealth = 0;
    let sum = 0;
    let squares = 0.25;
    for (let t = 0; t < n; t++) {
      const stake = Math.min(0.5 / m, Math.sqrt((2 * threshold) / ((squares / (t + 1)) * n)));
      const x = Math.min(1, Math.max(0, xs[t]!));
      logWealth += Math.log1p(stake * (x - m));
      if (logWealth >= threshold) return true;
      squares += (x - (0.5 + sum) / (t + 1)) ** 2;
      sum += x;
    }
    return false;
  };
  let lo = 0;
  let hi = 1;
  if (!rejected(1e-9)) return 0;
  for (let i = 0; i < 40; i++) {
    const mid = (lo + hi) / 2;
    if (rejected(mid)) lo = mid;
    else hi = mid;
  }
  return hi;
}

/**
 * not-noninferior: fails unless the lower bound of head - base is above -margin ("not shown
 * safe"). The bound is a betting bound, valid at any size and for any pass rates: a t interval
 * over tasks showed a change as bad as the margin "safe" 9% of the time at 8 tasks when the base
 * solves every task, and a quarter of the time at 2 (every task unchanged by chance: no spread).
 */
export function noninferiorityTest(changes: readonly TaskChange[], margin: number, alpha: number): NoninferiorityTest {
  const units = unitsOf(
    changes.map((c) => c.delta),
    changes.map((c) => c.family),
  );
  if (units.sums.length < 2) return { margin, lower: null, shown: false };
  // A reused control makes each change a difference of two pass rates: in [-1, 1]; else in [-2, 2].
  const half = changes.every((c) => c.sharedControl) ? 1 : 2;
  const xs = Array.from(units.sums, (sum, u) => (sum / units.sizes[u]! + half) / (2 * half));
  const lower = bettingLowerBound(xs, alpha) * 2 * half - half;
  return { margin, lower, shown: lower > -margin + 1e-12 };
}

export interface Flips {
  /** Tasks whose change is beyond what no change gives at alpha, on its own (two-sided). */
  flipped: TaskChange[];
  /** How many tasks no change at all would list as flipped at this size (the sum of each task's chance). */
  expected: number;
  /** Tasks that moved but not beyond noise on their own. */
  moved: TaskChange[];
}

export function flipsOf(changes: readonly TaskChange[], alpha: number): Flips {
  const flipped = changes.filter((c) => c.delta !== 0 && c.p <= alpha + 1e-12);
  return {
    flipped,
    expected: changes.reduce((s, c) => s + c.flipChance, 0),
    moved: changes.filter((c) => c.delta !== 0 && !flipped.includes(c)),
  };
}

/** The fewest reps a side for a task that moved in every rep to show as a flip on its own, at alpha (control reused). */
export function repsForOneTaskFlip(alpha: number): number {
  // All R of the base pass, all R of the head fail: p = 2 / C(2R, R).
  for (let r = 1; r <= 16; r++) if (2 / choose(2 * r, r) <= alpha + 1e-12) return r;
  return 17;
}

/** Holm over the cohort's comparisons, in place, for each test's p. */
export function adjustAcross(tests: readonly { p: number; p_holm: number }[]): void {
  const adjusted = holm(tests.map((t) => t.p));
  tests.forEach((t, i) => (t.p_holm = adjusted[i]!));
}
