import { describe, expect, it } from 'vitest';
import { analyze, analyzeChecked } from '../stats/analyze.js';
import { checkSpec, defaultSpec } from '../stats/spec.js';
import { makeAttempt, syntheticCohort } from '../stats/synthetic.js';
import type { AnalysisSpec, AttemptRecord, Comparison } from '../stats/types.js';

const spec = (overrides: Partial<AnalysisSpec> = {}): AnalysisSpec =>
  defaultSpec('control', ['treatment'], { bootstrap: { resamples: 1000, seed: 1 }, ...overrides });

const only = (r: ReturnType<typeof analyze>): Comparison => r.comparisons[0]!;

/** n tasks x reps with the given pass pattern per (arm, task, rep); each task its own family unless `families` groups them. */
function grid(
  tasks: number,
  reps: number,
  pass: (arm: string, t: number, r: number) => boolean,
  arms = ['control', 'treatment'],
  families = tasks,
): AttemptRecord[] {
  const out: AttemptRecord[] = [];
  for (const arm of arms) {
    for (let t = 0; t < tasks; t++) {
      for (let r = 0; r < reps; r++) out.push(makeAttempt({ task: `t${t}`, family: `f${t % families}`, arm, rep: r, pass: pass(arm, t, r) }));
    }
  }
  return out;
}

describe('analyze: per-arm metrics', () => {
  it('counts completion, tokens, weighted cost, time window and pass@k', () => {
    const attempts = [
      makeAttempt({ task: 'a', arm: 'control', rep: 0, pass: true, started_at: '2026-01-02T00:00:00Z', ended_at: '2026-01-02T00:05:00Z' }),
      makeAttempt({ task: 'a', arm: 'control', rep: 1, pass: false, started_at: '2026-01-01T00:00:00Z', ended_at: '2026-01-01T00:05:00Z' }),
      makeAttempt({
        task: 'b',
        arm: 'control',
        rep: 0,
        pass: false,
        no_answer: true,
        usage: { input_tokens: 100, output_tokens: 10, cache_write_tokens: 40, cache_read_tokens: 1000 },
        cost_usd: 0.5,
        cost_confidence: 'estimated',
      }),
      makeAttempt({ task: 'b', arm: 'control', rep: 1, pass: true, usage: null, cost_usd: null }),
      makeAttempt({ task: 'a', arm: 'treatment', rep: 0 }),
      makeAttempt({ task: 'b', arm: 'treatment', rep: 0 }),
    ];
    const r = analyze(attempts, spec());
    const c = r.arms.find((a) => a.arm === 'control')!;
    expect(c.n_attempts).toBe(4);
    expect(c.n_accepted).toBe(4);
    expect(c.n_passed).toBe(2);
    expect(c.completion_rate).toBe(0.5);
    expect(c.n_no_answer).toBe(1);
    // tokens: 1100, 1100, 1150 (one attempt without usage)
    expect(c.tokens).toMatchObject({ n: 3, median: 1100, min: 1100, max: 1150, total: 3350 });
    // weighted: 1000 + 5*100 = 1500 twice; 100 + 1.25*40 + 0.1*1000 + 5*10 = 300
    expect(c.weighted_cost).toMatchObject({ n: 3, median: 1500, min: 300, max: 1500, total: 3300 });
    expect(c.cost_usd.total).toBeCloseTo(0.52, 12);
    expect(c.cost_usd.n_missing).toBe(1);
    expect(c.cost_usd.confidence).toBe('estimated');
    expect(c.quality_per_dollar).toBeCloseTo(0.5 / (0.52 / 3), 12);
    expect(c.completions_per_million_tokens).toBeCloseTo(2 / (3350 / 1e6), 6);
    expect(c.window).toEqual({ started_at: '2026-01-01T00:00:00Z', ended_at: '2026-01-02T00:05:00Z' });
    // two tasks, 2 attempts each, one pass each: pass@1 = 0.5, pass@2 = 1 - C(1,2)/C(2,2) = 1, pass^2 = 0
    expect(c.pass_at_k).toEqual([
      { k: 1, pass_at_k: 0.5, pass_hat_k: 0.5, n_tasks: 2 },
      { k: 2, pass_at_k: 1, pass_hat_k: 0, n_tasks: 2 },
    ]);
    expect(r.schema_version).toBe(1);
  });

  it('every arm is described over the paired task set: a task that lost all its pairs is named and left out of every arm alike', () => {
    // t3's treatment attempts were all infrastructure faults: control ran t3 (and passed it), treatment has no score there.
    const attempts = grid(4, 2, (arm, t) => (arm === 'control' ? t === 3 : true)).map((a) =>
      a.arm === 'treatment' && a.task === 't3' ? { ...a, admission: 'excluded' as const, reason_code: 'infra-sandbox', infra_error: true, pass: null } : a,
    );
    const r = analyze(attempts, spec({ validity_floor: 0, infra_error_threshold: 0 }));
    const control = r.arms.find((a) => a.arm === 'control')!;
    const treatment = r.arms.find((a) => a.arm === 'treatment')!;
    // Control over t0..t2 only: 0 of 6, not 2 of 8 (the pass on the task the treatment never got to score).
    expect(control).toMatchObject({ n_attempts: 8, n_accepted: 8, n_scored: 6, n_passed: 0, completion_rate: 0, unpaired_tasks: ['t3'] });
    expect(treatment).toMatchObject({ n_attempts: 8, n_accepted: 6, n_scored: 6, n_passed: 6, completion_rate: 1, unpaired_tasks: [] });
    expect(r.comparisons[0]!.lost_tasks).toEqual(['t3']);
    expect(r.notes.some((n) => n.includes('over the 3 task(s) with a valid pair in every comparison') && n.includes('t3'))).toBe(true);
  });
});

describe('analyze: headline warnings', () => {
  it('warns before any verdict: scripted outcomes, infrastructure faults with their cause, crashes, no tokens, a treatment delivered to none', () => {
    const attempts = grid(8, 1, () => true).map((a) => {
      if (a.arm === 'control' && a.task === 't0') return { ...a, exit_reason: 'agent-crash', pass: false, reason_code: 'agent-crash' };
      if (a.arm === 'control' && a.task === 't1') return { ...a, usage: null };
      if (a.arm === 'control' && a.task === 't2') {
        const tries = [{ exit_reason: 'infra-error', infra_error: 'sandbox failed to start: no space left', started_at: null, ended_at: null }];
        return { ...a, tries };
      }
      if (a.arm === 'treatment') return { ...a, scripted: true, mechanism: { delivered: false, used: false } };
      return a;
    });
    const w = analyze(attempts, spec()).warnings;
    expect(w.map((x) => [x.kind, x.arm])).toEqual([
      ['scripted', null],
      ['infra', 'control'],
      ['agent-crash', 'control'],
      ['no-tokens', 'control'],
      ['no-delivery', 'treatment'],
      // The verifier's own (a)/(b)/(c): no task got worse (a red flag, judge or not).
      ['zero-hurt', 'treatment'],
    ]);
    expect(w[5]!.message).toMatch(/^the verifier found no task \(c\) hurt \(treatment vs control: 1 helped, 7 no difference, 0 hurt\)/);
    expect(w[0]!.message).toMatch(/^the outcomes were scripted: 8 of 16 attempts/);
    expect(w[1]!.message).toBe('arm "control": 1 of 9 tries were infrastructure faults (excluded, never scored): sandbox failed to start: no space left');
    expect(w[2]!.message).toBe('arm "control": the agent crashed in 1 of 8 accepted attempts (each scored 0)');
    expect(w[3]!.message).toMatch(/^arm "control": 1 of 8 accepted attempts recorded no tokens/);
    expect(w[4]!.message).toMatch(/^arm "treatment": its treatment reached the model in none of its 8 attempts/);
    // A clean cohort has none.
    expect(
      analyze(
        grid(8, 1, () => true),
        spec(),
      ).warnings,
    ).toEqual([]);
  });
});

describe('analyze: paired comparison', () => {
  it('McNemar counts discordant pairs and the effect is the mean task delta', () => {
    // task 0: treatment passes 2 of 2, control 0 of 2 -> delta 1; task 1: both pass -> 0; task 2: control passes, treatment fails rep 0 -> -0.5
    const attempts = grid(3, 2, (arm, t, r) => {
      if (t === 0) return arm === 'treatment';
      if (t === 1) return true;
      return arm === 'control' || r === 1;
    });
    const c = only(analyze(attempts, spec({ validity_floor: 0 })));
    expect(c.delta).toBeCloseTo((1 + 0 - 0.5) / 3, 12);
    expect(c.mcnemar).toMatchObject({ b: 2, c: 1 });
    expect(c.mcnemar!.p).toBe(1);
    expect(c.sign_test).toEqual({ positive: 1, negative: 1, ties: 1, p: 1 });
    expect(c.pairs).toEqual({ total: 6, valid: 6, excluded: 0, unmatched: 0 });
  });

  it('is deterministic for a seed and independent of attempt order', () => {
    const attempts = syntheticCohort({ tasks: 20, reps: 3, families: 4, arms: { control: 0, treatment: 0.1 }, seed: 3 });
    const a = analyze(attempts, spec());
    const b = analyze([...attempts].reverse(), spec());
    expect(b.comparisons).toEqual(a.comparisons);
    // The seed moves the bootstrap (paired cost intervals), never the effect or its t interval.
    const other = analyze(attempts, spec({ bootstrap: { resamples: 1000, seed: 2 } }));
    expect(other.comparisons[0]!.paired!.tokens.ci).not.toEqual(a.comparisons[0]!.paired!.tokens.ci);
    expect(other.comparisons[0]!.ci).toEqual(a.comparisons[0]!.ci);
    expect(other.comparisons[0]!.delta).toBe(a.comparisons[0]!.delta);
  });

  it('A/A: an identical control is not positive or negative in >= 95% of 300 seeded cohorts', () => {
    const s = spec({ bootstrap: { resamples: 500, seed: 11 } });
    let claims = 0;
    const cohorts = 300;
    for (let seed = 1; seed <= cohorts; seed++) {
      const attempts = syntheticCohort({ tasks: 30, reps: 3, families: 6, arms: { control: 0, treatment: 0 }, seed });
      const v = only(analyze(attempts, s)).verdict;
      expect(['positive', 'negative', 'within-noise']).toContain(v); // 6 families: enough units for a claim
      if (v !== 'within-noise') claims++;
    }
    expect(claims / cohorts).toBeLessThanOrEqual(0.05);
  });

  it('detects a planted +30-point effect on 30 independent tasks', () => {
    const planted = (seed: number) =>
      syntheticCohort({ tasks: 30, reps: 3, families: 30, arms: { control: 0, treatment: 0.3 }, seed, baseline: { low: 0.1, high: 0.6 } });
    const c = only(analyze(planted(1), spec()));
    expect(c.verdict).toBe('positive');
    expect(c.delta!).toBeGreaterThan(c.envelope!.value);
    expect(c.ci!.low).toBeGreaterThan(0);
    expect(c.mcnemar!.p).toBeLessThan(0.05);
    expect(c.test).toMatchObject({ method: 'sign-flip', unit: 'task', n_units: 30, exact: false });
    expect(c.test!.p_holm).toBeLessThan(0.05);
    // and its power over 50 seeded cohorts
    const s = spec({ bootstrap: { resamples: 500, seed: 5 } });
    let positive = 0;
    for (let seed = 101; seed <= 150; seed++) if (only(analyze(planted(seed), s)).verdict === 'positive') positive++;
    expect(positive).toBeGreaterThanOrEqual(40);
  });

  it('a delta inside the envelope is within-noise: one task flipping out of eight', () => {
    const c = only(
      analyze(
        grid(8, 1, (arm, t) => (t === 0 ? arm === 'treatment' : t < 3)),
        spec(),
      ),
    );
    expect(c.delta).toBeCloseTo(0.125, 12);
    expect(c.envelope!.value).toBeCloseTo(0.125, 12);
    expect(c.verdict).toBe('within-noise');
    expect(c.directional).toBe(true);
  });

  it('below the tasks a test needs to reach alpha: insufficient-n, never a claim, even at +100 pp with a zero-width interval', () => {
    for (const n of [2, 5]) {
      const c = only(
        analyze(
          grid(n, 2, (arm) => arm === 'treatment'),
          spec(),
        ),
      );
      expect(c.delta).toBe(1);
      expect(c.verdict, `${n} tasks`).toBe('insufficient-n');
      expect(c.test).toMatchObject({ n_units: n, min_p: 2 / 2 ** n, units_needed: 6 });
      expect(c.problems[0]).toMatchObject({ reason: 'insufficient-n', n_units: n, units_needed: 6 });
      expect(c.mde!.value).toBeNull();
    }
  });

  it('a perfect effect is not called noise: with no spread the interval is the effect itself, and the exact test decides', () => {
    // 12 tasks, each control 0 of 2 and treatment 2 of 2: every task delta +100 pp, no spread.
    const twelve = only(
      analyze(
        grid(12, 2, (arm) => arm === 'treatment'),
        spec(),
      ),
    );
    expect(twelve.test!.p).toBeCloseTo(2 / 4096, 12);
    expect(twelve.ci).toMatchObject({ low: 1, high: 1, degenerate: expect.stringContaining('no spread: all 12 units moved alike') });
    expect(twelve.verdict).toBe('positive');
    // At 6 the test just reaches alpha: the same.
    expect(
      only(
        analyze(
          grid(6, 2, (arm) => arm === 'treatment'),
          spec(),
        ),
      ).verdict,
    ).toBe('positive');
    // All flipping the other way: negative.
    expect(
      only(
        analyze(
          grid(12, 2, (arm) => arm === 'control'),
          spec(),
        ),
      ).verdict,
    ).toBe('negative');
    // All equal (no task moved): within noise, and the words say why.
    const equal = only(
      analyze(
        grid(12, 2, () => true),
        spec(),
      ),
    );
    expect(equal.verdict).toBe('within-noise');
    expect(equal.problems).toContainEqual(expect.objectContaining({ reason: 'no-claim', condition: 'test' }));
    // Two tasks that both flip: too few units for any test.
    expect(
      only(
        analyze(
          grid(2, 2, (arm) => arm === 'treatment'),
          spec(),
        ),
      ).verdict,
    ).toBe('insufficient-n');
  });

  it('when no claim is made, the verdict says which condition was not met', () => {
    // Half the tasks gain, half lose: the test is far from alpha.
    const c = only(
      analyze(
        grid(12, 2, (arm, task) => (task % 2 === 0 ? arm === 'treatment' : arm === 'control')),
        spec(),
      ),
    );
    expect(c.verdict).toBe('within-noise');
    expect(c.problems.find((p) => p.reason === 'no-claim')!.message).toMatch(/sign-flip test's adjusted p \S+ is above alpha 0\.05/);
  });

  it('the unit of the test is the family: 30 tasks from 3 families are 3 units, so +100 pp is insufficient-n', () => {
    const c = only(
      analyze(
        grid(30, 2, (arm) => arm === 'treatment', ['control', 'treatment'], 3),
        spec(),
      ),
    );
    expect(c.delta).toBe(1);
    expect(c.test).toMatchObject({ n_units: 3, min_p: 2 / 8 });
    expect(c.verdict).toBe('insufficient-n');
  });

  it('refuses when the models differ: delta null, reason names the model', () => {
    const attempts = grid(10, 2, (arm) => arm === 'treatment').map((a) => (a.arm === 'treatment' ? { ...a, agent: { ...a.agent, model: 'model-b' } } : a));
    const c = only(analyze(attempts, spec()));
    expect(c.verdict).toBe('refused');
    expect(c.delta).toBeNull();
    expect(c.ci).toBeNull();
    expect(c.mcnemar).toBeNull();
    const p = c.problems.find((x) => x.reason === 'config-mismatch');
    expect(p).toMatchObject({ reason: 'config-mismatch', field: 'model', control: ['model-a'], treatment: ['model-b'] });
    expect(p!.message).toContain('agent model');
    expect(p!.message).toContain('model-b');
  });

  it('refuses on isolation, egress, image, resources and a mixed arm', () => {
    const variants: Array<[string, (a: AttemptRecord) => AttemptRecord]> = [
      ['isolation', (a) => ({ ...a, sandbox: { ...a.sandbox, isolation: 'none' } })],
      ['egress_enforced', (a) => ({ ...a, sandbox: { ...a.sandbox, egress_enforced: false } })],
      ['image_id', (a) => ({ ...a, sandbox: { ...a.sandbox, image_id: 'sha256:1111' } })],
      ['resources', (a) => ({ ...a, sandbox: { ...a.sandbox, resources: { cpus: 4, memory_mb: 4096, pids: 512 } } })],
      ['adapter_version', (a) => ({ ...a, agent: { ...a.agent, version: '9.9.9' } })],
    ];
    for (const [field, change] of variants) {
      const attempts = grid(10, 2, () => true).map((a) => (a.arm === 'treatment' ? change(a) : a));
      const c = only(analyze(attempts, spec()));
      expect(c.verdict).toBe('refused');
      expect(c.problems.map((p) => ('field' in p ? p.field : null))).toContain(field);
    }
    const mixed = grid(10, 2, () => true).map((a) => (a.arm === 'treatment' && a.rep === 1 ? { ...a, agent: { ...a.agent, provider: 'openrouter' } } : a));
    const c = only(analyze(mixed, spec()));
    expect(c.verdict).toBe('refused');
    expect(c.problems[0]).toMatchObject({ reason: 'mixed-config', arm: 'treatment', field: 'provider', values: ['anthropic', 'openrouter'] });
  });

  it('refuses when the infra-error rates differ by Fisher exact test, not when they differ by chance', () => {
    const excludeReps = (n: number) => (a: AttemptRecord) =>
      a.arm === 'treatment' && Number(a.task.slice(1)) < n && a.rep === 0
        ? { ...a, admission: 'excluded' as const, reason_code: 'infra', infra_error: true, pass: null }
        : a;
    // treatment: 8 of 20 attempts excluded as infra errors (40%), control 0%: p = 0.0033
    const c = only(analyze(grid(10, 2, () => true).map(excludeReps(8)), spec({ validity_floor: 0 })));
    expect(c.verdict).toBe('refused');
    expect(c.delta).toBeNull();
    expect(c.problems[0]).toMatchObject({ reason: 'infra-error-rate', control_rate: 0, treatment_rate: 0.4, threshold: 0.05 });
    expect((c.problems[0] as { p: number }).p).toBeCloseTo(0.003276, 5);
    // 3 of 20 against 0 of 20 (p = 0.23) is not a reason to refuse.
    expect(only(analyze(grid(10, 2, () => true).map(excludeReps(3)), spec({ validity_floor: 0 }))).verdict).not.toBe('refused');
  });

  it('is invalid when exclusions push an arm below the validity floor', () => {
    // 5 of 20 treatment attempts excluded (not infra): accepted fraction 0.75 < 0.8
    const attempts = grid(10, 2, () => true).map((a) =>
      a.arm === 'treatment' && a.rep === 0 && Number(a.task.slice(1)) < 5
        ? { ...a, admission: 'excluded' as const, reason_code: 'mechanism-not-delivered', pass: null }
        : a,
    );
    const c = only(analyze(attempts, spec()));
    expect(c.verdict).toBe('invalid');
    expect(c.delta).toBeNull();
    expect(c.problems).toEqual([expect.objectContaining({ reason: 'below-validity-floor', arm: 'treatment', accepted_fraction: 0.75, floor: 0.8 })]);
    expect(analyze(attempts, spec({ validity_floor: 0.75 })).comparisons[0]!.verdict).not.toBe('invalid');
  });

  it('drops the pair of an excluded infra failure from the estimate but counts it', () => {
    // 10 tasks x 3 reps; treatment passes everything; one treatment attempt is an excluded infra failure
    const attempts = grid(10, 3, (arm, t) => arm === 'treatment' || t < 5).map((a) =>
      a.arm === 'treatment' && a.task === 't9' && a.rep === 2
        ? { ...a, admission: 'excluded' as const, reason_code: 'infra-error', infra_error: true, pass: null }
        : a,
    );
    const r = analyze(attempts, spec());
    const c = only(r);
    expect(c.pairs).toEqual({ total: 30, valid: 29, excluded: 1, unmatched: 0 });
    // task t9 keeps 2 valid pairs, delta 1: the effect is still (5 * 0 + 5 * 1) / 10
    expect(c.delta).toBeCloseTo(0.5, 12);
    expect(c.outcomes!.tasks.find((t) => t.task === 't9')!.n_pairs).toBe(2);
    expect(c.mcnemar).toMatchObject({ b: 14, c: 0 });
    const arm = r.arms.find((a) => a.arm === 'treatment')!;
    expect(arm).toMatchObject({ n_attempts: 30, n_accepted: 29, n_excluded: 1, n_infra_errors: 1, exclusions: { 'infra-error': 1 } });
    expect(arm.infra_error_rate).toBeCloseTo(1 / 30, 12);
  });

  it('reports paired cost and token differences with bootstrap intervals', () => {
    const attempts = grid(8, 2, () => true).map((a) => (a.arm === 'treatment' ? { ...a, usage: { ...a.usage!, output_tokens: 300 }, cost_usd: 0.03 } : a));
    const c = only(analyze(attempts, spec()));
    // +200 output tokens per pair: weighted +1000, tokens +200
    expect(c.paired!.tokens).toMatchObject({ n_pairs: 16, median: 200 });
    expect(c.paired!.weighted_cost).toMatchObject({ n_pairs: 16, median: 1000 });
    expect(c.paired!.weighted_cost.ci).toMatchObject({ low: 1000, high: 1000 });
    expect(c.paired!.cost_usd.median).toBeCloseTo(0.02, 12);
    expect(c.cost_ratio).toBeCloseTo(2500 / 1500, 12);
  });

  it('Holm-adjusts McNemar p values over several treatments', () => {
    const attempts = grid(12, 1, (arm, t) => (arm === 'control' ? false : arm === 'strong' ? t < 10 : t < 3), ['control', 'strong', 'weak']);
    const r = analyze(attempts, defaultSpec('control', ['strong', 'weak'], { bootstrap: { resamples: 500, seed: 1 } }));
    const [strong, weak] = r.comparisons;
    expect(strong!.mcnemar!.p).toBeCloseTo(2 / 1024, 12); // b=10, c=0
    expect(weak!.mcnemar!.p).toBeCloseTo(0.25, 12); // b=3, c=0
    expect(strong!.mcnemar!.p_holm).toBeCloseTo(4 / 1024, 12);
    expect(weak!.mcnemar!.p_holm).toBeCloseTo(0.25, 12);
  });
});

describe('analyze: (a)/(b)/(c)', () => {
  it('reports all three counts with cost-ratio labels; all-over-budget is no answer, never (c)', () => {
    const usage = (output: number) => ({ input_tokens: 1000, output_tokens: output, cache_write_tokens: 0, cache_read_tokens: 0 });
    const rows: Array<[string, boolean, boolean, number, boolean]> = [
      // task, control pass, treatment pass, treatment output tokens, treatment over budget
      ['helped', false, true, 220, false], // weighted 1000 + 5*220 = 2100 vs 1500 -> 1.4x
      ['same', true, true, 100, false],
      ['hurt', true, false, 40, false], // 1200 / 1500 = 0.8x
      ['budget', true, false, 1000, true],
    ];
    const attempts = rows.flatMap(([task, cp, tp, out, over]) =>
      [0, 1].flatMap((rep) => [
        makeAttempt({ task, arm: 'control', rep, pass: cp }),
        makeAttempt({ task, arm: 'treatment', rep, pass: tp, usage: usage(out), no_answer: over, exit_reason: over ? 'token-cap' : 'completed' }),
      ]),
    );
    const c = only(analyze(attempts, spec()));
    expect(c.outcomes!.counts).toEqual({ a: 1, b: 1, c: 1, no_answer: 1 });
    const byTask = Object.fromEntries(c.outcomes!.tasks.map((t) => [t.task, t]));
    expect(byTask.helped).toMatchObject({ class: 'a', delta: 1, label: '(a) at 1.4x the control cost' });
    expect(byTask.helped!.cost_ratio).toBeCloseTo(1.4, 12);
    expect(byTask.same).toMatchObject({ class: 'b', delta: 0, cost_ratio: 1, label: '(b) at 1x the control cost' });
    expect(byTask.hurt).toMatchObject({ class: 'c', delta: -1, label: '(c) at 0.8x the control cost' });
    expect(byTask.budget).toMatchObject({ class: 'no-answer', delta: -1, label: 'no answer at 4x the control cost' });
  });

  it('a task that lost a rep to the budget is no answer, not (c)', () => {
    const attempts = [0, 1].flatMap((rep) => [
      makeAttempt({ task: 'partly', arm: 'control', rep, pass: true }),
      makeAttempt({ task: 'partly', arm: 'treatment', rep, pass: rep === 0, no_answer: rep === 1, exit_reason: rep === 1 ? 'token-cap' : 'completed' }),
    ]);
    const c = only(analyze(attempts, spec()));
    expect(c.outcomes!.counts).toEqual({ a: 0, b: 0, c: 0, no_answer: 1 });
  });

  it('zero counts are present', () => {
    const c = only(
      analyze(
        grid(4, 1, () => true),
        spec(),
      ),
    );
    expect(c.outcomes!.counts).toEqual({ a: 0, b: 4, c: 0, no_answer: 0 });
  });
});

describe('analyze: factorial 2x2', () => {
  it('main effects and interaction on a constructed example', () => {
    // Y per task for cells raw (0,0), graph (1,0), rules (0,1), full (1,1); factors [graph, rules]
    const y: Record<string, [number, number, number, number]> = {
      t1: [0, 1, 0, 1], // graph +1, rules 0, interaction 0
      t2: [0, 0, 0, 1], // graph +0.5, rules +0.5, interaction +1
      t3: [1, 1, 1, 1], // 0, 0, 0
      t4: [0, 1, 1, 0], // 0, 0, -2
    };
    const arms = ['raw', 'graph', 'rules', 'full'];
    const attempts = Object.entries(y).flatMap(([task, ys]) => arms.map((arm, i) => makeAttempt({ task, family: task, arm, rep: 0, pass: ys[i] === 1 })));
    const r = analyze(
      attempts,
      defaultSpec('raw', ['graph', 'rules', 'full'], {
        bootstrap: { resamples: 1000, seed: 1 },
        factorial: {
          factors: ['graph', 'rules'],
          levels: { raw: { graph: 0, rules: 0 }, graph: { graph: 1, rules: 0 }, rules: { graph: 0, rules: 1 }, full: { graph: 1, rules: 1 } },
        },
      }),
    );
    const f = r.factorial!;
    expect(f.status).toBe('ok');
    expect(f.n_tasks).toBe(4);
    expect(f.main_effects.map((e) => e.name)).toEqual(['graph', 'rules']);
    expect(f.main_effects[0]!.estimate).toBeCloseTo(0.375, 12);
    expect(f.main_effects[1]!.estimate).toBeCloseTo(0.125, 12);
    expect(f.interaction!.name).toBe('graph x rules');
    expect(f.interaction!.estimate).toBeCloseTo(-0.25, 12);
    for (const e of [...f.main_effects, f.interaction!]) {
      expect(e.ci!.low).toBeLessThanOrEqual(e.estimate);
      expect(e.ci!.high).toBeGreaterThanOrEqual(e.estimate);
      // 4 tasks: no test can reach alpha, so no effect is claimed
      expect(e.verdict).toBe('insufficient-n');
    }
  });

  it('is invalid without four distinct cells', () => {
    const attempts = grid(3, 1, () => true, ['raw', 'graph']);
    const r = analyze(
      attempts,
      defaultSpec('raw', ['graph'], {
        bootstrap: { resamples: 100, seed: 1 },
        factorial: { factors: ['graph', 'rules'], levels: { raw: { graph: 0, rules: 0 }, graph: { graph: 1, rules: 0 } } },
      }),
    );
    expect(r.factorial!.status).toBe('invalid');
    expect(r.factorial!.problems.some((p) => p.reason === 'factorial-design')).toBe(true);
  });
});

describe('analyze: cost streams and spec', () => {
  it('keeps eval cost and overhead apart', () => {
    const attempts = grid(3, 1, () => true).concat(
      makeAttempt({ task: 't0', arm: 'control', rep: 1, admission: 'excluded', reason_code: 'infra', infra_error: true, pass: null, cost_usd: 0.05 }),
    );
    const r = analyze(attempts, spec({ validity_floor: 0, infra_error_threshold: 1, overhead: { usd: 1.5, tokens: 40000, source: 'generate:context' } }));
    const ctl = r.cost_streams.eval.find((e) => e.arm === 'control')!;
    expect(ctl.cost_usd).toBeCloseTo(3 * 0.01 + 0.05, 12); // excluded attempts were spent too
    expect(ctl.cost_confidence).toBe('exact');
    expect(r.cost_streams.overhead).toEqual({ usd: 1.5, tokens: 40000, source: 'generate:context' });
    expect(JSON.stringify(r.cost_streams.eval)).not.toContain('1.5');
    expect(r.notes.join('\n')).toContain('never summed');
  });

  it('names every spec problem', () => {
    const bad = { ...spec(), treatments: ['control'], bootstrap: { resamples: 0, seed: 0 }, confidence: 1 };
    const checked = checkSpec(bad);
    expect(checked.ok).toBe(false);
    if (!checked.ok) expect(checked.error.map((p) => p.field)).toEqual(['treatments[0]', 'bootstrap.resamples', 'bootstrap.seed', 'confidence']);
    expect(analyzeChecked([], bad).ok).toBe(false);
    expect(() => analyze([], bad)).toThrow(RangeError);
  });

  it('a missing arm is invalid, not a crash', () => {
    const r = analyze(
      grid(2, 1, () => true, ['control']),
      spec(),
    );
    expect(only(r)).toMatchObject({ verdict: 'invalid', delta: null, problems: [{ reason: 'arm-missing', arm: 'treatment' }] });
  });

  it('the result is plain JSON', () => {
    const r = analyze(syntheticCohort({ tasks: 10, reps: 2, families: 2, arms: { control: 0, treatment: 0.2 }, seed: 4 }), spec());
    expect(JSON.parse(JSON.stringify(r))).toEqual(r);
  });
});

describe('analyze: factorial refusal', () => {
  it('refuses when two cells differ in infra-error rate beyond the threshold, even if both are close to a third', () => {
    const arms = ['raw', 'graph', 'rules', 'full'];
    // 20 attempts per arm; infra errors (excluded): graph 0, full 4 (20%), rules 4 (20%), raw 9 (45%)
    const infra: Record<string, number> = { graph: 0, full: 4, rules: 4, raw: 9 };
    const attempts = grid(10, 2, () => true, arms).map((a) =>
      a.rep === 0 && Number(a.task.slice(1)) < infra[a.arm]!
        ? { ...a, admission: 'excluded' as const, reason_code: 'infra', infra_error: true, pass: null }
        : a,
    );
    const r = analyze(
      attempts,
      defaultSpec('raw', ['full'], {
        bootstrap: { resamples: 100, seed: 1 },
        validity_floor: 0,
        factorial: {
          factors: ['graph', 'rules'],
          levels: { raw: { graph: 0, rules: 0 }, graph: { graph: 1, rules: 0 }, rules: { graph: 0, rules: 1 }, full: { graph: 1, rules: 1 } },
        },
      }),
    );
    // full (the first cell by name) differs from no cell by Fisher's test; graph and raw do (0 of 20 against 9 of 20)
    expect(r.factorial!.status).toBe('refused');
    expect(r.factorial!.problems).toEqual([expect.objectContaining({ reason: 'infra-error-rate', control_rate: 0, treatment_rate: 0.45 })]);
    expect(r.factorial!.main_effects).toEqual([]);
  });
});

describe("analyze: an arm that restores the repository's own files", () => {
  it('names the tasks that have none (there the arm equals the control)', () => {
    const attempts = ['has-files', 'bare'].flatMap((task) => [
      makeAttempt({ task, arm: 'control', rep: 0, pass: false }),
      makeAttempt({ task, arm: 'treatment', rep: 0, pass: task === 'has-files', restored: task === 'bare' ? 0 : 2 }),
    ]);
    const warnings = analyze(attempts, spec()).warnings.filter((w) => w.kind === 'no-own-files');
    expect(warnings).toEqual([
      {
        kind: 'no-own-files',
        arm: 'treatment',
        message: 'arm "treatment" restores the repository\'s own context files, but 1 task(s) have none (bare): there the arm equals the control',
      },
    ]);
  });

  it('paired steps and the cost ratio come with intervals; reasoning tokens only where reported', () => {
    const usage = (input: number, reasoning?: number) => ({
      input_tokens: input,
      output_tokens: 10,
      cache_write_tokens: 0,
      cache_read_tokens: 0,
      ...(reasoning !== undefined ? { reasoning_tokens: reasoning } : {}),
    });
    const attempts = ['t1', 't2', 't3', 't4'].flatMap((task, i) => [
      makeAttempt({ task, family: task, arm: 'control', rep: 0, pass: true, turns: 4, tool_calls: 3, usage: usage(1000, 50) }),
      makeAttempt({ task, family: task, arm: 'treatment', rep: 0, pass: true, turns: 6 + i, tool_calls: 5, usage: usage(1200, 80) }),
    ]);
    const c = only(analyze(attempts, spec()));
    expect(c.paired!.turns).toMatchObject({ n_pairs: 4, median: 3.5 });
    expect(c.paired!.turns!.ci!.low).toBeGreaterThanOrEqual(2);
    expect(c.paired!.tool_calls).toMatchObject({ n_pairs: 4, median: 2 });
    expect(c.paired!.reasoning_tokens).toMatchObject({ n_pairs: 4, median: 30 });
    // weighted cost: input + 5 x output = 1050 vs 1250
    expect(c.cost_ratio).toBeCloseTo(1250 / 1050, 12);
    expect(c.cost_ratio_ci!.low).toBeCloseTo(1250 / 1050, 12);
    const without = only(
      analyze(
        attempts.map((a) => ({ ...a, usage: usage(a.usage!.input_tokens) })),
        spec(),
      ),
    );
    expect(without.paired!.reasoning_tokens).toBeUndefined();
  });
});
