import { describe, expect, it } from 'vitest';
import { analyze } from '../stats/analyze.js';
import { bettingConfidenceSequence } from '../stats/confidence-sequence.js';
import { crossingProbabilities, efficacyBounds, groupSequentialDesign, spent } from '../stats/group-sequential.js';
import { lookSchedule, plannedFamilies } from '../stats/look-schedule.js';
import { sequentialAnalysis } from '../stats/sequential.js';
import { checkSpec, defaultSpec } from '../stats/spec.js';
import { makeAttempt } from '../stats/synthetic.js';
import type { AnalysisSpec, AttemptRecord, StoppingSpec } from '../stats/types.js';

const equally = (k: number) => Array.from({ length: k }, (_, i) => (i + 1) / k);

describe('group-sequential boundaries (Lan-DeMets spending, recursive integration)', () => {
  it("match the published O'Brien-Fleming-type values for one-sided alpha 0.025 (gsDesign sfLDOF), to 1e-3", () => {
    const published: Record<number, number[]> = {
      3: [3.7103, 2.5114, 1.993],
      4: [4.3326, 2.9631, 2.359, 2.0141],
      5: [4.8769, 3.357, 2.6803, 2.2898, 2.031],
    };
    for (const [k, values] of Object.entries(published)) {
      const bounds = efficacyBounds(equally(Number(k)), 0.025, 'obrien-fleming');
      bounds.forEach((b, i) => expect(Math.abs(b - values[i]!), `K=${k} look ${i + 1}: ${b}`).toBeLessThan(1e-3));
    }
    expect(spent('obrien-fleming', 0.025, 0.2587722)).toBeCloseTo(1.052152e-5, 10);
  });

  it('spend exactly alpha under no effect, look by look, for unequal looks and Pocock spending too', () => {
    for (const fn of ['obrien-fleming', 'pocock'] as const) {
      const t = [0.3, 0.55, 0.8, 1];
      const upper = efficacyBounds(t, 0.025, fn);
      const { up } = crossingProbabilities(t, upper, null, 0);
      let cumulative = 0;
      up.forEach((p, k) => {
        cumulative += p;
        expect(Math.abs(cumulative - spent(fn, 0.025, t[k]!))).toBeLessThan(1e-6);
      });
    }
    // Pocock-type boundaries are nearly flat; O'Brien-Fleming-type ones fall steeply.
    const pocock = efficacyBounds(equally(4), 0.025, 'pocock');
    expect(Math.max(...pocock) - Math.min(...pocock)).toBeLessThan(0.05);
  });

  it('a design reaches its power at its drift; futility stops null cohorts early without touching alpha', () => {
    const plain = groupSequentialDesign({ looks: 4, alpha: 0.025, power: 0.9, spending: 'obrien-fleming', futility: false });
    const power = crossingProbabilities(plain.fractions, plain.upper, null, plain.theta).up.reduce((a, b) => a + b, 0);
    expect(power).toBeCloseTo(0.9, 4);
    // The maximum is barely above the fixed design's; the expected size under the alternative well below it.
    expect(plain.inflation).toBeGreaterThan(1);
    expect(plain.inflation).toBeLessThan(1.05);
    expect(plain.expected_fraction.alternative * plain.inflation).toBeLessThan(0.8);
    const fut = groupSequentialDesign({ looks: 4, alpha: 0.025, power: 0.9, spending: 'obrien-fleming', futility: true });
    expect(fut.upper).toEqual(plain.upper); // non-binding: efficacy boundaries ignore futility
    expect(fut.lower![3]).toBeCloseTo(fut.upper[3]!, 6);
    expect(fut.expected_fraction.null).toBeLessThan(0.7 * plain.expected_fraction.null);
  });
});

/**
 * One family per task; `deltas[i]` for task i: 1 (or true) the treatment passes and the control fails,
 * -1 the reverse, 0 (or false) both pass.
 */
function cohort(deltas: (boolean | number)[], infra: number[] = []): AttemptRecord[] {
  return deltas.flatMap((d, i) => {
    const task = `t${String(i).padStart(2, '0')}`;
    const family = `f${String(i).padStart(2, '0')}`;
    const delta = Number(d);
    return [
      makeAttempt({ task, family, arm: 'control', rep: 0, pass: delta <= 0 }),
      makeAttempt({
        task,
        family,
        arm: 'treatment',
        rep: 0,
        pass: delta >= 0,
        ...(infra.includes(i) ? { admission: 'excluded' as const, pass: null, infra_error: true } : {}),
      }),
    ];
  });
}

function sequentialSpec(stopping: Omit<StoppingSpec, 'schedule'>, families: number): AnalysisSpec {
  const order = Array.from({ length: families }, (_, i) => `f${String(i).padStart(2, '0')}`);
  return defaultSpec('control', ['treatment'], { bootstrap: { resamples: 200, seed: 1 }, stopping: { ...stopping, schedule: lookSchedule(order, stopping) } });
}

describe('sequential analysis of a cohort', () => {
  it('plans looks at preregistered fractions of the families, the last at all of them', () => {
    expect(plannedFamilies(12, 3)).toEqual([4, 8, 12]);
    expect(plannedFamilies(10, 3)).toEqual([3, 7, 10]);
    expect(lookSchedule(['a', 'b', 'c', 'd', 'e'], { rule: 'group-sequential', looks: 2 })).toEqual([
      ['a', 'b', 'c'],
      ['d', 'e'],
    ]);
    expect(lookSchedule(['a', 'b', 'c'], { rule: 'confidence-sequence' })).toEqual([['a'], ['b'], ['c']]);
  });

  it('stops at the look whose statistic crosses the boundary, with a repeated CI and the bias note', () => {
    // 12 families, looks at 4, 8 and 12: equally spaced, so the boundaries are the published 3.7103, 2.5114, 1.9930.
    const spec = sequentialSpec({ rule: 'group-sequential', looks: 3 }, 12);
    // Look 1: 3 helped of 4 (exact p = 2/8, Z = 1.15); look 2: 8 helped of 8 (p = 2/256, Z = 2.66 >= 2.5114).
    const seq = sequentialAnalysis(cohort([1, 1, 1, 0, 1, 1, 1, 1]), spec, 1);
    expect(seq.looks.map((l) => l.decision)).toEqual(['continue']);
    const attempts = cohort([1, 1, 1, 1, 1, 1, 1, 1, 0, 0]);
    const stopped = sequentialAnalysis(attempts, spec);
    expect(stopped.looks.map((l) => l.decision)).toEqual(['continue', 'efficacy', 'stopped-earlier']);
    expect(stopped.stopped_at).toBe(2);
    expect(seq.looks[0]!.statistic).toBeCloseTo(1.1503, 3);
    expect(stopped.looks[1]!.statistic).toBeCloseTo(2.6601, 3);
    expect(stopped.looks[1]!.upper).toBeCloseTo(2.5114, 3);
    expect(stopped.interval).toMatchObject({ method: 'repeated-ci', confidence: 0.95 });
    expect(stopped.notes.join(' ')).toMatch(/biased away from zero/);
  });

  it('claims only at a crossing, with the repeated CI as the interval', () => {
    // 13 families, looks at 4, 9 and 13: look 2 has 8 helped and one tie (Z = 2.66), so the interval has width.
    const spec = sequentialSpec({ rule: 'group-sequential', looks: 3 }, 13);
    const attempts = cohort([1, 1, 1, 1, 1, 1, 1, 1, 0]);
    const seq = sequentialAnalysis(attempts, spec);
    expect(seq.stopped_at).toBe(2);
    expect(seq.interval!.low).toBeGreaterThan(0);
    const result = analyze(attempts, spec);
    expect(result.comparisons[0]!.verdict).toBe('positive');
    expect(result.comparisons[0]!.ci!.method).toBe('repeated-ci');
    expect(result.sequential!.stopped_at).toBe(2);
  });

  it('makes no claim when the last look is under its boundary, where a fixed-N test on the same attempts claims', () => {
    // 20 families, 15 helped and 5 hurt: the fixed-N sign-flip p = 2 P(Bin(20, 1/2) >= 15) = 0.041 claims;
    // on the Z scale that is 2.04, under Pocock's 2.29 at the last look, and the earlier looks are near 0.
    const deltas = [1, 1, 1, 1, -1, -1, -1, 1, 1, 1, 1, -1, -1, 1, 1, 1, 1, 1, 1, 1];
    const fixed = analyze(cohort(deltas), defaultSpec('control', ['treatment'], { bootstrap: { resamples: 200, seed: 1 } }));
    expect(fixed.comparisons[0]!.test!.p).toBeCloseTo(0.0414, 3);
    expect(fixed.comparisons[0]!.verdict).toBe('positive');
    const seq = analyze(cohort(deltas), sequentialSpec({ rule: 'group-sequential', looks: 3, spending: 'pocock' }, 20));
    expect(seq.sequential!.looks.map((l) => l.decision)).toEqual(['continue', 'continue', 'final']);
    expect(seq.sequential!.looks[2]!.statistic).toBeCloseTo(2.0396, 3);
    expect(seq.sequential!.decision).toBe('no-claim');
    expect(seq.comparisons[0]!.verdict).toBe('within-noise');
    expect(seq.comparisons[0]!.problems.map((p) => p.reason)).toContain('sequential');
  });

  it('stops a null cohort for futility (non-binding), with no claim', () => {
    const spec = sequentialSpec({ rule: 'group-sequential', looks: 4, futility: 'non-binding', power: 0.9 }, 16);
    // As many hurt as helped by look 1 (Z = 0), more hurt by look 2 (Z = -0.71 < the futility bound).
    const seq = sequentialAnalysis(cohort([1, -1, 1, -1, -1, 1, -1, -1]), spec);
    expect(seq.looks[1]!.lower).toBeGreaterThan(0);
    expect(seq.decision).toBe('futility');
    expect(seq.stopped_at).toBe(2);
  });

  it('leaves out of a look a family whose attempt had an infrastructure fault', () => {
    const spec = sequentialSpec({ rule: 'group-sequential', looks: 3 }, 12);
    const seq = sequentialAnalysis(cohort([1, 1, 1, 0, 1, 1, 1, 1], [6]), spec, 2);
    expect(seq.looks[1]!.pending_families).toEqual(['f06']);
    expect(seq.looks[1]!.families).toBe(7);
  });

  it('refuses a stopping rule it cannot honour, naming the field', () => {
    const bad = checkSpec(defaultSpec('c', ['t1', 't2'], { stopping: { rule: 'group-sequential', looks: 1, spending: 'linear' as never } }));
    expect(bad.ok).toBe(false);
    const fields = bad.ok ? [] : bad.error.map((p) => p.field);
    expect(fields).toEqual(expect.arrayContaining(['stopping.looks', 'stopping.spending', 'stopping']));
  });
});

describe('betting confidence sequence (Waudby-Smith and Ramdas)', () => {
  it('covers a fixed mean at every time at once in at least 1 - alpha of sequences', () => {
    let misses = 0;
    let state = 12345;
    const uniform = () => (state = (state * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    for (let s = 0; s < 200; s++) {
      const xs = Array.from({ length: 60 }, () => (uniform() < 0.3 ? 1 : 0));
      if (bettingConfidenceSequence(xs, 0.05).intervals.some((i) => i.low > 0.3 || i.high < 0.3)) misses++;
    }
    expect(misses / 200).toBeLessThanOrEqual(0.05);
  });

  it('narrows as families come in, and a cohort where every family is helped stops once it excludes 0', () => {
    const seq = sequentialAnalysis(cohort(Array(20).fill(true)), sequentialSpec({ rule: 'confidence-sequence' }, 20));
    const widths = seq.looks.filter((l) => l.interval).map((l) => l.interval!.high - l.interval!.low);
    widths.slice(1).forEach((w, i) => expect(w).toBeLessThanOrEqual(widths[i]! + 1e-12));
    expect(seq.decision).toBe('efficacy');
    expect(seq.stopped_at).toBeLessThan(20);
    expect(seq.interval).toMatchObject({ method: 'betting-cs' });
    expect(seq.interval!.low).toBeGreaterThan(0);
  });
});
