/**
 * `npm run calibrate`: the verdict rule, measured. Simulated cohorts go through the
 * same analysis code as real ones (analyze()), and each row prints what the rule
 * did beside its goal:
 * - false claims: A/A cohorts (every arm the same) that came out POSITIVE or NEGATIVE;
 * - family-wise: A/A with three treatments, any of them a claim;
 * - power: a planted +30 pp effect found as POSITIVE;
 * - coverage: the 95% interval holding the true effect;
 * - sequential stopping: attempts saved against the fixed-N design of the SAME power (read off the
 *   fixed designs' power curve on the same cohorts), power kept, false claims under A/A, how much
 *   earlier futility stops A/A cohorts, and the repeated interval's coverage (over all cohorts,
 *   and, printed as measured, given an early stop);
 * - no spread: every task moving alike (all flip, all equal, too few), and deterministic agents.
 * Per-task success probabilities are drawn per cohort (uniform in [0.1, 0.6), plus a
 * shared shift per family when tasks are grouped); each attempt passes at random.
 * Exits 1 if any goal is missed. COHORTS=N sets the cohorts per row (default 1000).
 */
import { analyze } from '../stats/analyze.js';
import { groupSequentialDesign, type SpendingFunction } from '../stats/group-sequential.js';
import { lookSchedule } from '../stats/look-schedule.js';
import { defaultSpec } from '../stats/spec.js';
import { makeAttempt, syntheticCohort, type SyntheticOptions } from '../stats/synthetic.js';
import type { AnalysisResult } from '../stats/types.js';

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

/** A row whose figure is a ratio, not a count of cohorts. */
const recordRatio = (what: string, design: string, value: number, n: number, detail: string, goal: string, ok: boolean) => {
  rows.push({ what, design, value, n, goal, ok });
  console.log(`${what.padEnd(28)} ${design.padEnd(34)} ${(value * 100).toFixed(1).padStart(5)}%  ${detail}  goal ${goal.padEnd(10)} ${ok ? 'ok' : 'MISSED'}`);
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
  for (let i = 0; i < COHORTS; i++)
    if (run(d, { control: 0, treatment: 0 }, 17000 + i, { infraRate: { control: 0.05, treatment: 0.05 } }).comparisons[0]!.verdict === 'refused') refused++;
  record('refused at equal infra 5%', label(d), refused, COHORTS, '<= 5%', (r) => r <= 0.05);
}

// 6. Exclusions that favour the treatment (10% of its failures excluded as "infrastructure") must not make a claim.
{
  const d: Design = { tasks: 200, reps: 5, families: 200 };
  const n = Math.ceil(COHORTS / 4);
  let claims = 0;
  for (let i = 0; i < n; i++)
    if (claim(run(d, { control: 0, treatment: 0 }, 21000 + i, { excludeFailures: { treatment: 0.1 } }).comparisons[0]!.verdict)) claims++;
  record('false claims (biased excl.)', label(d), claims, n, '<= 5%', (r) => r <= 0.05);
}

// 7. Sequential stopping (group-sequential, 4 looks, one-sided alpha 0.025 each way) against the fixed-N design of
// the same power at +30 pp. The fixed design's families are the fewest whose simulated power reaches 90% on a quick
// pass; the sequential maximum is that times the design's inflation. Each sequential cohort is simulated at its
// maximum and its first n families are the fixed-N cohort (common random numbers). The goals are met with
// Pocock-type spending; O'Brien-Fleming-type spending is printed beside them (its early looks need more families
// than a cohort this size has before they can be crossed by an exact test).
/** Whether the fixed-N analysis of a cohort's first `families` families claims a benefit. */
function fixedPositive(attempts: ReturnType<typeof syntheticCohort>, families: number, seed: number): boolean {
  const keep = new Set(Array.from({ length: families }, (_, f) => `f${f}`));
  return (
    analyze(
      attempts.filter((a) => keep.has(a.family)),
      defaultSpec('control', ['treatment'], { bootstrap: { resamples: 100, seed } }),
    ).comparisons[0]!.verdict === 'positive'
  );
}

/** The fixed design powered at 90% at +30 pp: the fewest families (from 10 up) whose power reaches it on a quick pass. */
function fixedFamilies(reps: number): number {
  const quick = Math.max(100, Math.ceil(COHORTS / 4));
  let n = 10;
  for (; n < 80; n++) {
    let found = 0;
    for (let i = 0; i < quick; i++)
      if (
        fixedPositive(syntheticCohort({ tasks: n, reps, families: n, arms: { control: 0, treatment: 0.3 }, seed: 31000 + i, baseline: BASELINE }), n, 31000 + i)
      )
        found++;
    if (found / quick >= 0.9) break;
  }
  return n;
}

function sequentialSection(spending: SpendingFunction, reps: number, nFixed: number, goals: boolean): void {
  const LOOKS = 4;
  const tag = spending === 'pocock' ? 'Pocock' : 'OBF';
  const sequentialRun = (families: number, shift: number, seed: number, futility: 'none' | 'non-binding') => {
    const attempts = syntheticCohort({ tasks: families, reps, families, arms: { control: 0, treatment: shift }, seed, baseline: BASELINE });
    const stopping = { rule: 'group-sequential' as const, looks: LOOKS, power: 0.9, spending, futility };
    const order = Array.from({ length: families }, (_, f) => `f${f}`);
    const spec = defaultSpec('control', ['treatment'], {
      bootstrap: { resamples: 100, seed },
      power: 0.9,
      stopping: { ...stopping, schedule: lookSchedule(order, stopping) },
    });
    const result = analyze(attempts, spec);
    const seq = result.sequential!;
    const used = seq.stopped_at === null ? families : seq.looks[seq.stopped_at - 1]!.planned_families;
    const c = result.comparisons[0]!;
    return {
      attempts,
      claim: claim(c.verdict),
      positive: c.verdict === 'positive',
      families: used,
      early: seq.stopped_at !== null && seq.stopped_at < LOOKS,
      covers: c.ci ? c.ci.low <= shift + 1e-12 && shift - 1e-12 <= c.ci.high : null,
    };
  };
  const design = groupSequentialDesign({ looks: LOOKS, alpha: 0.025, power: 0.9, spending, futility: false });
  const nMax = Math.ceil(nFixed * design.inflation);
  const where = `${tag}: ${nFixed} fixed, ${nMax} max fam. x ${reps} reps`;
  // The fixed-N designs the sequential one is weighed against: every n up to nMax, on the same cohorts
  // (their first n families), so its power is a curve and the design of EQUAL power can be read off it.
  const fixedFoundAt = new Map<number, number>();
  let seqFound = 0;
  let seqFamilies = 0;
  let early = 0;
  let earlyCovered = 0;
  let covered = 0;
  let intervals = 0;
  // Sizes near the planned fixed design (the one of equal power lies between them): each costs an analysis per cohort.
  const sizes = Array.from({ length: nMax - Math.max(10, nFixed - 4) + 1 }, (_, i) => Math.max(10, nFixed - 4) + i);
  for (let i = 0; i < COHORTS; i++) {
    const r = sequentialRun(nMax, 0.3, 33000 + i, 'none');
    if (r.positive) seqFound++;
    seqFamilies += r.families;
    if (r.covers !== null) {
      intervals++;
      if (r.covers) covered++;
      if (r.early) {
        early++;
        if (r.covers) earlyCovered++;
      }
    }
    for (const n of sizes) if (fixedPositive(r.attempts, n, 33000 + i)) fixedFoundAt.set(n, (fixedFoundAt.get(n) ?? 0) + 1);
  }
  const fixedFound = fixedFoundAt.get(nFixed) ?? 0;
  let falseClaims = 0;
  let plainFamilies = 0;
  let futileFamilies = 0;
  for (let i = 0; i < COHORTS; i++) {
    const plain = sequentialRun(nMax, 0, 37000 + i, 'none');
    if (plain.claim) falseClaims++;
    plainFamilies += plain.families;
    futileFamilies += sequentialRun(nMax, 0, 37000 + i, 'non-binding').families;
  }
  // The fixed design of the same power as the sequential one (interpolated between the two sizes that straddle it).
  const seqPower = seqFound / COHORTS;
  const powerAt = (n: number) => (fixedFoundAt.get(n) ?? 0) / COHORTS;
  let equalN = nMax;
  for (const n of sizes) {
    if (powerAt(n) < seqPower) continue;
    const below = n > sizes[0]! ? powerAt(n - 1) : 0;
    equalN = n > sizes[0]! && powerAt(n) > below ? n - 1 + (seqPower - below) / (powerAt(n) - below) : n;
    break;
  }
  // Attempts are families x arms x reps in both designs: the ratio of families is the ratio of attempts.
  const savedVsPlanned = 1 - seqFamilies / COHORTS / nFixed;
  const saved = 1 - seqFamilies / COHORTS / equalN;
  const earlier = 1 - futileFamilies / plainFamilies;
  const fixedPower = fixedFound / COHORTS;
  if (!goals) {
    console.log(
      `${'sequential, for comparison'.padEnd(28)} ${where.padEnd(34)} power ${(100 * seqPower).toFixed(1)}% (fixed ${(100 * fixedPower).toFixed(1)}%), attempts saved at equal power ${(100 * saved).toFixed(1)}%, ` +
        `A/A false claims ${((100 * falseClaims) / COHORTS).toFixed(1)}%, futility stops A/A ${(100 * earlier).toFixed(1)}% earlier (no goal)`,
    );
    return;
  }
  record('fixed-N power (+30 pp)', where, fixedFound, COHORTS, '>= 88%', (r) => r >= 0.88);
  record('sequential power (+30 pp)', where, seqFound, COHORTS, 'fixed +-2', (r) => Math.abs(r - fixedPower) <= 0.02);
  recordRatio(
    'attempts saved, equal power',
    where,
    saved,
    COHORTS,
    `(mean ${(seqFamilies / COHORTS).toFixed(1)} families vs ${equalN.toFixed(1)} for a fixed design of power ${(100 * seqPower).toFixed(1)}%; ${(100 * savedVsPlanned).toFixed(1)}% vs the ${nFixed} planned)`,
    '> 0%',
    saved > 0,
  );
  record('sequential false claims A/A', where, falseClaims, COHORTS, '<= 5%', (r) => r <= 0.05);
  recordRatio(
    'futility: A/A stops earlier',
    where,
    earlier,
    COHORTS,
    `(mean ${(futileFamilies / COHORTS).toFixed(1)} vs ${(plainFamilies / COHORTS).toFixed(1)} families)`,
    '>= 30%',
    earlier >= 0.3,
  );
  record('repeated CI coverage (+30 pp)', where, covered, intervals, '>= 93%', (r) => r >= 0.93);
  // Not a goal: a repeated CI covers over every cohort, not given that it stopped early (the stop selects
  // cohorts whose estimate ran high). Printed as measured; the report says so beside an early stop.
  const conditional = early ? earlyCovered / early : 0;
  console.log(
    `${'coverage given an early stop'.padEnd(28)} ${where.padEnd(34)} ${(conditional * 100).toFixed(1).padStart(5)}%  (${earlyCovered}/${early} stopped early)  measured, no goal: conditional coverage is not what a repeated CI guarantees`,
  );
}
{
  const nFixed = fixedFamilies(2);
  sequentialSection('pocock', 2, nFixed, true);
  sequentialSection('obrien-fleming', 2, nFixed, false);
}

// 8. No spread (deterministic agents, the scripted fake model): when every unit moves alike the interval is the
// effect itself and the exact test decides; it never turns evidence into noise, nor noise into evidence.
{
  const attemptsOf = (tasks: number, outcome: (arm: string, t: number) => boolean, seed: number) => {
    const out = [];
    for (const arm of ['control', 'treatment'])
      for (let t = 0; t < tasks; t++)
        for (let r = 0; r < 2; r++) out.push(makeAttempt({ task: `t${seed}-${t}`, family: `f${seed}-${t}`, arm, rep: r, pass: outcome(arm, t) }));
    return out;
  };
  const verdictOf = (attempts: ReturnType<typeof attemptsOf>, seed: number) =>
    analyze(attempts, defaultSpec('control', ['treatment'], { bootstrap: { resamples: 200, seed } })).comparisons[0]!.verdict;
  const n = Math.ceil(COHORTS / 10);
  const tally = (
    what: string,
    design: string,
    want: (v: string) => boolean,
    make: (seed: number) => ReturnType<typeof attemptsOf>,
    goal: string,
    ok: (r: number) => boolean,
  ) => {
    let hits = 0;
    for (let i = 0; i < n; i++) if (want(verdictOf(make(41000 + i), 41000 + i))) hits++;
    record(what, design, hits, n, goal, ok);
  };
  tally(
    'no spread: all flip',
    '12 tasks x 2 reps, 0/2 -> 2/2',
    (v) => v === 'positive',
    (s) => attemptsOf(12, (arm) => arm === 'treatment', s),
    '100%',
    (r) => r === 1,
  );
  tally(
    'no spread: all equal',
    '12 tasks x 2 reps, same outcomes',
    claim,
    (s) => attemptsOf(12, (_arm, t) => (t + s) % 3 === 0, s),
    '0%',
    (r) => r === 0,
  );
  tally(
    'no spread: too few units',
    '2 tasks x 2 reps, 0/2 -> 2/2',
    (v) => v === 'insufficient-n',
    (s) => attemptsOf(2, (arm) => arm === 'treatment', s),
    '100%',
    (r) => r === 1,
  );
  // Deterministic agents: each task passes or fails the same in every rep; A/A shares each task's outcome,
  // and an effect flips a quarter of the tasks (drawn per cohort).
  const flips = (s: number, t: number) => (Math.imul(s * 31 + t + 1, 2654435761) >>> 0) % 4 === 0;
  tally(
    'deterministic agents, A/A',
    '30 tasks x 2 reps, pass = f(task)',
    claim,
    (s) => attemptsOf(30, (_arm, t) => flips(s + 7, t), s),
    '<= 5%',
    (r) => r <= 0.05,
  );
  tally(
    'deterministic agents, +flips',
    '30 tasks x 2 reps, 1 in 4 flip',
    (v) => v === 'positive',
    (s) => attemptsOf(30, (arm, t) => arm === 'treatment' && flips(s, t), s),
    '>= 90%',
    (r) => r >= 0.9,
  );
}

// 9. The pull-request gates (head against base, stats/head-vs-base.ts), through analyze(), diffRuns() and judgeChange()
// as `pairbench check` runs them: no-change pull requests (a stochastic agent, the base's control attempts reused),
// the planner's sizes, and its predicted power beside the measured.
{
  const { gateRatesThroughAnalysis } = await import('./pr-calibration.js');
  const { gateRates, planGates } = await import('../stats/gate-planner.js');
  const hetero = { low: 0.1, high: 0.9 };
  // (At 2 and 3 reps a side no single task can show a flip: it needs 4. At 5 the flips are measured too.)
  for (const [tasks, reps] of [
    [8, 2],
    [16, 3],
    [30, 3],
    [10, 5],
  ] as const) {
    const design = `${tasks} tasks x ${reps} reps, no change`;
    const r = gateRatesThroughAnalysis({ tasks, reps, baseline: hetero, shift: 0 }, COHORTS, 81_000 + tasks * 10_000);
    record('PR regression (A/A)', design, Math.round(r.regression * COHORTS), COHORTS, '<= 5%', (x) => x <= 0.05);
    record('PR new-harm (A/A)', design, Math.round(r.newHarm * COHORTS), COHORTS, '<= 5%', (x) => x <= 0.05);
    record('compare flips (A/A)', design, Math.round(r.flippedShare * COHORTS * tasks), COHORTS * tasks, '<= 5%', (x) => x <= 0.05);
  }
  for (const [reps, margin] of [
    [2, 0.3],
    [3, 0.4],
  ] as const) {
    const plan = planGates({ tasks: 8, reps, alpha: 0.05, power: 0.8, baseline: 0.5, detect: 0.3, margin, sims: 2000, otherReps: false });
    const n = plan.noninferiority!.tasks_needed!;
    const design = `planner: ${n} tasks x ${reps} reps, margin ${margin * 100} pp`;
    const same = gateRatesThroughAnalysis({ tasks: n, reps, baseline: 0.5, shift: 0, margin }, COHORTS, 91_000 + reps);
    record('PR not-noninferior (A/A)', design, Math.round(same.notNoninferior! * COHORTS), COHORTS, '<= 5%', (x) => x <= 0.05);
    const worse = gateRatesThroughAnalysis({ tasks: n, reps, baseline: 0.5, shift: -margin, margin }, COHORTS, 92_000 + reps);
    const se = Math.sqrt((0.05 * 0.95) / COHORTS);
    record(
      'PR shown safe at -margin',
      design,
      Math.round((1 - worse.notNoninferior!) * COHORTS),
      COHORTS,
      `5% +-${(200 * se).toFixed(1)}`,
      (x) => x <= 0.05 + 2 * se,
    );
  }
  for (const reps of [2, 3]) {
    const input = { tasks: 8, reps, alpha: 0.05, power: 0.8, baseline: 0.65, detect: 0.3, sims: 2000, otherReps: false };
    const n = planGates(input).regression.tasks_needed!;
    const predicted = gateRates(input, n, reps).regression_power;
    const measured = gateRatesThroughAnalysis({ tasks: n, reps, baseline: 0.65, shift: -0.3 }, COHORTS, 93_000 + reps).regression;
    recordRatio(
      'PR regression power (-30 pp)',
      `planner: ${n} tasks x ${reps} reps, 65% -> 35%`,
      measured,
      COHORTS,
      `(planner predicted ${(100 * predicted).toFixed(1)}%)`,
      'pred. +-5',
      Math.abs(measured - predicted) <= 0.05,
    );
  }
}

const seconds = ((performance.now() - started) / 1000).toFixed(1);
const missed = rows.filter((r) => !r.ok);
console.log(`\n${rows.length} rows in ${seconds} s: ${missed.length === 0 ? 'every goal met' : `${missed.length} goal(s) MISSED`}`);
process.exit(missed.length === 0 ? 0 : 1);
