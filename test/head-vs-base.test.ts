/**
 * The head-against-base tests (stats/head-vs-base.ts) on outcomes a reader can check by hand:
 * the shipped example's harmful line (two tasks solved in the base, broken in the head), a
 * brute-force enumeration of every joint deal across tasks (the convolution must agree), and
 * the smallest designs at which a gate or a flip can fire at all.
 */
import { describe, expect, it } from 'vitest';
import { seededRng } from '../stats/rng.js';
import {
  bettingLowerBound,
  flipsOf,
  newHarmTest,
  noninferiorityTest,
  regressionTest,
  repsForOneTaskFlip,
  taskChanges,
  type SideOutcomes,
  type TaskSides,
} from '../stats/head-vs-base.js';

const side = (control: (0 | 1)[], treatment: (0 | 1)[]): SideOutcomes => ({ control, treatment });
const task = (name: string, base: SideOutcomes, head: SideOutcomes, sharedControl = true): TaskSides => ({
  task: name,
  family: name,
  base,
  head,
  sharedControl,
});

/** The example: 8 tasks x 2 reps, the control solves every task; the treatment solves all 8 in the base, 6 in the head. */
function harmfulLine(): TaskSides[] {
  return Array.from({ length: 8 }, (_, i) => task(`t${i}`, side([1, 1], [1, 1]), i < 2 ? side([1, 1], [0, 0]) : side([1, 1], [1, 1])));
}

describe('head against base', () => {
  it('the harmful line: regression and new-harm each at p = 1/36, no single task a flip at 2 reps', () => {
    const changes = taskChanges(harmfulLine(), 0.05);
    const r = regressionTest(changes);
    expect(r.estimate).toBeCloseTo(-0.25, 12);
    // Each broken task: 4 treatment outcomes (2 passes) dealt over 4 slots, 1 in 6 deals puts both failures in the head.
    expect(r.p).toBeCloseTo(1 / 36, 12);
    const h = newHarmTest(changes);
    expect(h.tasks).toEqual(['t0', 't1']);
    expect(h.p).toBeCloseTo(1 / 36, 12);
    expect(h.expected).toBeCloseTo(2 / 6, 12);
    const f = flipsOf(changes, 0.05);
    expect(f.flipped).toEqual([]);
    expect(f.moved.map((c) => c.task)).toEqual(['t0', 't1']);
    expect(f.expected).toBe(0);
    // One broken task alone is not evidence at 2 reps.
    const one = taskChanges(harmfulLine().slice(1), 0.05);
    expect(regressionTest(one).p).toBeCloseTo(1 / 6, 12);
    expect(newHarmTest(one).p).toBeCloseTo(1 / 6, 12);
  });

  it('a harmless edit (nothing moved): every gate passes, the interval is the zero change itself', () => {
    const same = harmfulLine().map((t) => ({ ...t, head: t.base }));
    const changes = taskChanges(same, 0.05);
    expect(regressionTest(changes).p).toBe(1);
    expect(newHarmTest(changes)).toMatchObject({ tasks: [], p: 1 });
    // 8 unchanged tasks bound the change from below at about -48 pp: no narrower margin can be shown.
    const unchanged = noninferiorityTest(changes, 0.1, 0.05);
    expect(unchanged.lower!).toBeCloseTo(-0.479, 2);
    expect(unchanged.shown).toBe(false);
    expect(noninferiorityTest(changes, 0.5, 0.05).shown).toBe(true);
    // The harmful line's bound is lower still.
    const ni = noninferiorityTest(taskChanges(harmfulLine(), 0.05), 0.5, 0.05);
    expect(ni.shown).toBe(false);
    expect(ni.lower!).toBeLessThan(unchanged.lower!);
  });

  it('the convolution equals a brute-force enumeration of every joint deal (shared and re-run controls)', () => {
    const tasks: TaskSides[] = [
      task('a', side([1, 0, 1], [1, 1, 0]), side([1, 0, 1], [0, 0, 1])),
      task('b', side([0, 1], [1, 1]), side([1, 1], [0, 1]), false),
      task('c', side([1, 1], [0, 1]), side([1, 1], [1, 0])),
    ];
    const changes = taskChanges(tasks, 0.05);
    const observed = changes.reduce((s, c) => s + c.delta, 0);
    const observedHarm = changes.filter((c) => c.newHarm).length;
    // Brute force: every combination of each task's equally likely deals.
    let pReg = 0;
    let pHarm = 0;
    const walk = (i: number, sum: number, harms: number, w: number) => {
      if (i === changes.length) {
        if (sum <= observed + 1e-9) pReg += w;
        if (harms >= observedHarm) pHarm += w;
        return;
      }
      for (const d of changes[i]!.null) walk(i + 1, sum + d.d / 720720, harms + (d.harm ? 1 : 0), w * d.w);
    };
    walk(0, 0, 0, 1);
    expect(regressionTest(changes).p).toBeCloseTo(pReg, 12);
    if (observedHarm > 0) expect(newHarmTest(changes).p).toBeCloseTo(pHarm, 12);
    // Every task's null is a probability distribution, symmetric about no change when the reps are equal.
    for (const c of changes) {
      expect(c.null.reduce((s, d) => s + d.w, 0)).toBeCloseTo(1, 12);
      const mean = c.null.reduce((s, d) => s + d.w * d.d, 0);
      expect(Math.abs(mean)).toBeLessThan(1e-6);
    }
  });

  it('a task flips on its own only when its reps can carry it: 4 a side at alpha 0.05', () => {
    expect(repsForOneTaskFlip(0.05)).toBe(4);
    const at = (r: number) => taskChanges([task('x', side(Array(r).fill(1), Array(r).fill(1)), side(Array(r).fill(1), Array(r).fill(0)))], 0.05)[0]!;
    expect(at(3).p).toBeCloseTo(2 / 20, 12);
    expect(flipsOf([at(3)], 0.05).flipped).toEqual([]);
    expect(at(4).p).toBeCloseTo(2 / 70, 12);
    expect(flipsOf([at(4)], 0.05).flipped.map((c) => c.task)).toEqual(['x']);
    expect(at(4).consistent).toBe(true);
  });

  it('the lower bound covers the mean at least 95% of the time, at any size and for skewed or spread-less changes', () => {
    // Each unit's change as the check scales it to [0, 1]: a base that solves every task and a head that drops by
    // 30 pp (mass at 0.5 and below), a symmetric three-point law, and a nearly constant one.
    const laws: { name: string; draw: (u: number) => number; mean: number }[] = [
      { name: 'skewed (base solves all, head -30 pp, 2 reps)', draw: (u) => (u < 0.09 ? 0 : u < 0.51 ? 0.25 : 0.5), mean: 0.5 - 0.15 },
      { name: 'three-point', draw: (u) => (u < 0.25 ? 0.25 : u < 0.75 ? 0.5 : 0.75), mean: 0.5 },
      { name: 'nearly constant', draw: (u) => (u < 0.97 ? 0.5 : 0), mean: 0.5 - 0.015 },
    ];
    const rng = seededRng(99);
    for (const law of laws)
      for (const n of [2, 4, 8, 16, 32]) {
        let covered = 0;
        const runs = 400;
        for (let r = 0; r < runs; r++)
          if (
            bettingLowerBound(
              Array.from({ length: n }, () => law.draw(rng.uniform())),
              0.05,
            ) <=
            law.mean + 1e-12
          )
            covered++;
        expect(covered / runs, `${law.name}, n = ${n}`).toBeGreaterThanOrEqual(0.95);
      }
    // A t interval's failure: two unchanged tasks are no evidence of anything.
    expect(bettingLowerBound([0.5, 0.5], 0.05)).toBeLessThan(0.01);
  });
});
