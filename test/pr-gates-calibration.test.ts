/**
 * The pull-request gates are claims, and calibrate: 500 simulated pull requests that change
 * nothing (a stochastic agent, each task's pass rate drawn anew, the base's control attempts
 * reused as the check reuses them) go through analyze(), diffRuns() and judgeChange(), as
 * `pairbench check` runs them. Each gate fails at most 5% of them, compare lists at most 5% of
 * tasks as flipped, not-noninferior at the planner's size is wrongly "shown safe" at most 5% of
 * the time, and the regression gate's power against a 30 pp drop, at the size the planner
 * suggests, is within 5 pp of what the planner predicted.
 */
import { describe, expect, it } from 'vitest';
import { gateRatesThroughAnalysis } from '../bench/pr-calibration.js';
import { gateRates, planGates } from '../stats/gate-planner.js';

const N = 500;

describe('the pull-request gates, calibrated through the analysis', () => {
  // At 2 and 3 reps a side no single task can show a flip (it needs 4): at 5 the flips are tested too.
  for (const [tasks, reps] of [
    [8, 2],
    [16, 3],
    [8, 5],
  ] as const) {
    it(`no change, ${tasks} tasks x ${reps} reps, pass rates from 10% to 90%: regression and new-harm each fail at most 5%, compare flips at most 5% of tasks`, () => {
      const design = { tasks, reps, baseline: { low: 0.1, high: 0.9 } };
      const r = gateRatesThroughAnalysis({ ...design, shift: 0 }, N, 70_000 + tasks * 1000);
      expect(r.regression).toBeLessThanOrEqual(0.05);
      expect(r.newHarm).toBeLessThanOrEqual(0.05);
      expect(r.flippedShare).toBeLessThanOrEqual(0.05);
      // Not vacuous: a 50 pp drop is caught far more often than no change is (and at 5 reps flips tasks).
      const harm = gateRatesThroughAnalysis({ ...design, shift: -0.5 }, 100, 71_000 + tasks * 1000);
      expect(harm.regression).toBeGreaterThan(0.3);
      if (reps >= 4) expect(harm.flippedShare).toBeGreaterThan(0.1);
    });
  }

  it("at the planner's size for a 50 pp margin at 3 reps, not-noninferior fails at most 5% of no-change pull requests; a change as bad as the margin is shown safe about alpha of the time", () => {
    const margin = 0.5;
    const plan = planGates({ tasks: 8, reps: 3, alpha: 0.05, power: 0.8, baseline: 0.5, detect: 0.3, margin, sims: 1000, otherReps: false });
    const tasks = plan.noninferiority!.tasks_needed!;
    // 8 tasks cannot carry it: the planner says so, and how many can.
    expect(plan.shortfalls.some((s) => s.startsWith('not-noninferior (margin 50 pp) fails') && s.includes(`it needs ${tasks} tasks`))).toBe(true);
    expect(gateRatesThroughAnalysis({ tasks, reps: 3, baseline: 0.5, shift: 0, margin }, N, 72_000).notNoninferior!).toBeLessThanOrEqual(0.05);
    // Its size: alpha by construction of the bound, so measured it is alpha up to Monte Carlo error (two standard errors).
    const n = 200;
    const safe = 1 - gateRatesThroughAnalysis({ tasks, reps: 3, baseline: 0.5, shift: -margin, margin }, n, 73_000).notNoninferior!;
    expect(safe).toBeLessThanOrEqual(0.05 + 2 * Math.sqrt((0.05 * 0.95) / n));
  });

  it("regression's power against a 30 pp drop at the planner's suggested size (3 reps) is within 5 pp of its prediction", () => {
    const input = { tasks: 8, reps: 3, alpha: 0.05, power: 0.8, baseline: 0.65, detect: 0.3, sims: 1000, otherReps: false };
    const plan = planGates(input);
    const tasks = plan.regression.tasks_needed!;
    expect(tasks).toBeGreaterThan(8);
    const predicted = gateRates(input, tasks, 3).regression_power;
    expect(predicted).toBeGreaterThanOrEqual(0.8);
    const measured = gateRatesThroughAnalysis({ tasks, reps: 3, baseline: 0.65, shift: -0.3 }, N, 74_000).regression;
    expect(Math.abs(measured - predicted)).toBeLessThanOrEqual(0.05);
  });
});
