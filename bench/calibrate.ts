/**
 * `npm run calibrate`: the verdict rule, measured. Simulated cohorts go through the
 * same analysis code as real ones (analyze()), and each row prints what the rule
 * did beside its goal:
 * - false claims: A/A cohorts (every arm the same) that came out POSITIVE or NEGATIVE;
 * - family-wise: A/A with three treatments, any of them a claim;
 * - power: a planted +30 pp effect found as POSITIVE;
 * - coverage: the 95% interval holding the true effect.
 * Per-task success probabilities are drawn per cohort (uniform in [0.1, 0.6), plus a
 * shared shift per family when tasks are grouped); each attempt passes at random.
 * Exits 1 if any goal is missed. COHORTS=N sets the cohorts per row (default 1000).
 */
import { analyze } from '../steps/analyze/analyze.js';
import { defaultSpec } from '../steps/analyze/spec.js';
import { syntheticCohort, type SyntheticOptions } from '../steps/analyze/synthetic.js';
import type { AnalysisResult } from '../steps/analyze/types.js';

const COHORTS = Number(process.env['COHORTS'] ?? 1000);
const BASELINE = { low: 0.1, high: 0.6 };

interface Design {
  tasks: number;
  reps: number;
  families: number;
  familyEffect?: number;
}

function run(design: Design, arms: Record<string, number>, seed: number, faults: Pick<SyntheticOptions, 'infraRate' | 'excludeFailures'> = {}): AnalysisResult {
  const options: SyntheticOptions = { ...design, arms, seed, baseline: BASELINE, ...faults };
  const names = Object.keys(arms);
  const spec = defaultSpec(names[0]!, names.slice(1), { bootstrap: { resamples: 1000, seed } });
  return analyze(syntheticCohort(options), spec);
}

const claim = (v: string) => v === 'positive' || v === 'negative';
const label = (d: Design) => `${d.tasks} tasks x ${d.reps} reps${d.families !== d.tasks ? `, ${d.families} families` : ''}`;

interface Row {
  what: string;
  design: string;
  value: number;
  n: number;
  goal: string;
  ok: boolean;
}
const rows: Row[] = [];
const record = (what: string, design: string, hits: number, n: number, goal: string, ok: (rate: number) => boolean) => {
  const value = hits / n;
  rows.push({ what, design, value, n, goal, ok: ok(value) });
  const line = `${what.padEnd(28)} ${design.padEnd(34)} ${(value * 100).toFixed(1).padStart(5)}%  (${hits}/${n})  goal ${goal.padEnd(10)} ${ok(value) ? 'ok' : 'MISSED'}`;
  console.log(line);
};

const started = performance.now();
console.log(`calibrate: ${COHORTS} simulated cohorts per row, through analyze()\n`);

// 1. False claims under A/A.
const aaDesigns: Design[] = [
  { tasks: 2, reps: 2, families: 2 },
  { tasks: 5, reps: 3, families: 5 },
  { tasks: 10, reps: 3, families: 10 },
  { tasks: 30, reps: 3, families: 30 },
  { tasks: 30, reps: 3, families: 5, familyEffect: 0.2 },
  { tasks: 30, reps: 3, families: 1 },
];
for (const d of aaDesigns) {
  let claims = 0;
  for (let i = 0; i < COHORTS; i++) if (claim(run(d, { control: 0, treatment: 0 }, 1000 + i).comparisons[0]!.verdict)) claims++;
  record('false claims (A/A)', label(d), claims, COHORTS, '<= 5%', (r) => r <= 0.05);
}

// 2. Family-wise: three treatments equal to the control.
{
  const d: Design = { tasks: 30, reps: 3, families: 30 };
  let any = 0;
  for (let i = 0; i < COHORTS; i++) if (run(d, { control: 0, t1: 0, t2: 0, t3: 0 }, 5000 + i).comparisons.some((c) => claim(c.verdict))) any++;
  record('family-wise (3 equal arms)', label(d), any, COHORTS, '<= 5%', (r) => r <= 0.05);
}

// 3. Power at +30 pp.
{
  const d: Design = { tasks: 30, reps: 3, families: 30 };
  let found = 0;
  for (let i = 0; i < COHORTS; i++) if (run(d, { control: 0, treatment: 0.3 }, 9000 + i).comparisons[0]!.verdict === 'positive') found++;
  record('power (+30 pp)', label(d), found, COHORTS, '>= 90%', (r) => r >= 0.9);
}

// 4. Coverage of the 95% interval (the true effect: 0 under A/A, the planted shift otherwise; no clipping at these rates).
const coverageDesigns: Design[] = [
  { tasks: 5, reps: 3, families: 5 },
  { tasks: 10, reps: 3, families: 10 },
  { tasks: 30, reps: 3, families: 30 },
  { tasks: 30, reps: 3, families: 5, familyEffect: 0.2 },
];
for (const d of coverageDesigns) {
  for (const shift of [0, 0.15]) {
    let covered = 0;
    let n = 0;
    for (let i = 0; i < COHORTS; i++) {
      const ci = run(d, { control: 0, treatment: shift }, 13000 + i).comparisons[0]!.ci;
      if (!ci) continue;
      n++;
      if (ci.low <= shift + 1e-12 && shift - 1e-12 <= ci.high) covered++;
    }
    record(`coverage (effect ${shift === 0 ? '0' : `+${shift * 100} pp`})`, label(d), covered, n, '93-97%', (r) => r >= 0.93 && r <= 0.97);
  }
}

// 5. Infrastructure faults at equal rates are not a reason to refuse.
{
  const d: Design = { tasks: 30, reps: 3, families: 30 };
  let refused = 0;
  for (let i = 0; i < COHORTS; i++) if (run(d, { control: 0, treatment: 0 }, 17000 + i, { infraRate: { control: 0.05, treatment: 0.05 } }).comparisons[0]!.verdict === 'refused') refused++;
  record('refused at equal infra 5%', label(d), refused, COHORTS, '<= 5%', (r) => r <= 0.05);
}

// 6. Exclusions that favour the treatment (10% of its failures excluded as "infrastructure") must not make a claim.
{
  const d: Design = { tasks: 200, reps: 5, families: 200 };
  const n = Math.ceil(COHORTS / 4);
  let claims = 0;
  for (let i = 0; i < n; i++) if (claim(run(d, { control: 0, treatment: 0 }, 21000 + i, { excludeFailures: { treatment: 0.1 } }).comparisons[0]!.verdict)) claims++;
  record('false claims (biased excl.)', label(d), claims, n, '<= 5%', (r) => r <= 0.05);
}

const seconds = ((performance.now() - started) / 1000).toFixed(1);
const missed = rows.filter((r) => !r.ok);
console.log(`\n${rows.length} rows in ${seconds} s: ${missed.length === 0 ? 'every goal met' : `${missed.length} goal(s) MISSED`}`);
process.exit(missed.length === 0 ? 0 : 1);
