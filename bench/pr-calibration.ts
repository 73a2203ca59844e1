/**
 * Simulated pull requests through the project's own analysis: a stochastic agent's base run and
 * a head run that reuses the base's control attempts and draws the treatment's again, with its
 * pass rate moved by `shift` (0: a change that does nothing). Both sides go through analyze(),
 * diffRuns() and judgeChange(), as `pairbench check` runs them, so a rate measured here is the
 * check's own (npm run calibrate, test/pr-gates-calibration.test.ts).
 */
import { analyze } from '../stats/analyze.js';
import { judgeChange } from '../stats/change-gate.js';
import { seededRng } from '../stats/rng.js';
import { diffRuns, type RunSide } from '../stats/run-diff.js';
import { defaultSpec } from '../stats/spec.js';
import { makeAttempt } from '../stats/synthetic.js';
import type { AttemptRecord, GatePolicy } from '../stats/types.js';

export interface PrDesign {
  tasks: number;
  reps: number;
  /** Each task's treatment (and control) pass rate on the base: a number, or drawn per task per pull request, uniform in [low, high). */
  baseline: number | { low: number; high: number };
  /** How much the head moves the treatment's pass rate (clamped to [0, 1]). */
  shift: number;
  margin?: number;
}

export interface PrOutcome {
  regression: boolean;
  newHarm: boolean;
  /** Null when the design has no margin. */
  notNoninferior: boolean | null;
  /** Tasks compare lists as flipped, of `tasks`. */
  flipped: number;
}

const GATES: GatePolicy['fail_on'] = ['regression', 'new-harm', 'not-noninferior'];

/** One simulated pull request, judged as `pairbench check` judges it. */
export function simulatePullRequest(d: PrDesign, seed: number): PrOutcome {
  const rng = seededRng(seed);
  const rates = Array.from({ length: d.tasks }, () =>
    typeof d.baseline === 'number' ? d.baseline : d.baseline.low + (d.baseline.high - d.baseline.low) * rng.uniform(),
  );
  const attempt = (task: number, arm: string, rep: number, p: number, stamp: string): AttemptRecord =>
    makeAttempt({
      task: `t${String(task).padStart(4, '0')}`,
      family: `f${task}`,
      arm,
      rep,
      pass: rng.uniform() < p,
      // An attempt's identity: the head's own draws are told from the base's reused ones.
      started_at: `2026-01-01T00:00:00.000Z#${stamp}:${seed}:${task}:${arm}:${rep}`,
    });
  const control: AttemptRecord[] = [];
  const baseTreatment: AttemptRecord[] = [];
  const headTreatment: AttemptRecord[] = [];
  rates.forEach((p, t) => {
    const q = Math.min(1, Math.max(0, p + d.shift));
    for (let r = 0; r < d.reps; r++) {
      control.push(attempt(t, 'control', r, p, 'base'));
      baseTreatment.push(attempt(t, 'treatment', r, p, 'base'));
      headTreatment.push(attempt(t, 'treatment', r, q, 'head'));
    }
  });
  const gate: GatePolicy = { fail_on: GATES, ...(d.margin !== undefined ? { noninferiority_margin: d.margin } : {}) };
  const spec = defaultSpec('control', ['treatment'], { bootstrap: { resamples: 100, seed: (seed % 4294967294) + 1 }, gate });
  const side = (label: string, attempts: AttemptRecord[]): RunSide => ({ label, cohort: 'sim', version: 1, analysis: analyze(attempts, spec), attempts });
  const base = side('base', [...control, ...baseTreatment]);
  const head = side('head', [...control, ...headTreatment]);
  const diff = diffRuns(base, head);
  const check = judgeChange({ cohort: 'sim', policy: gate, head: head.analysis, diff, protocolChanges: [] });
  const failed = (on: string) => check.failures.some((f) => f.on === on);
  return {
    regression: failed('regression'),
    newHarm: failed('new-harm'),
    notNoninferior: d.margin === undefined ? null : failed('not-noninferior'),
    flipped: diff.comparisons[0]!.flipped.length,
  };
}

/** How often each gate fails over `n` simulated pull requests, and the share of tasks listed as flipped. */
export function gateRatesThroughAnalysis(
  d: PrDesign,
  n: number,
  seed: number,
): { regression: number; newHarm: number; notNoninferior: number | null; flippedShare: number } {
  let regression = 0;
  let newHarm = 0;
  let ni = 0;
  let flipped = 0;
  for (let i = 0; i < n; i++) {
    const o = simulatePullRequest(d, seed + i);
    if (o.regression) regression++;
    if (o.newHarm) newHarm++;
    if (o.notNoninferior) ni++;
    flipped += o.flipped;
  }
  return { regression: regression / n, newHarm: newHarm / n, notNoninferior: d.margin === undefined ? null : ni / n, flippedShare: flipped / (n * d.tasks) };
}
