/** Seeded synthetic attempt records, for tests, simulations and the benchmark. */
import { seededRng } from './rng.js';
import type { AttemptRecord } from './types.js';

/** One accepted, passing attempt with fixed configuration; override any field. */
export function makeAttempt(overrides: Partial<AttemptRecord> & Pick<AttemptRecord, 'task' | 'arm' | 'rep'>): AttemptRecord {
  const base: AttemptRecord = {
    node: `run/${overrides.arm}/${overrides.task}/${overrides.rep}`,
    task: overrides.task,
    family: 'f0',
    category: 'stub_function',
    arm: overrides.arm,
    rep: overrides.rep,
    admission: 'accepted',
    reason_code: 'ok',
    explanation: '',
    pass: true,
    no_answer: false,
    exit_reason: 'completed',
    infra_error: false,
    usage: { input_tokens: 1000, output_tokens: 100, cache_write_tokens: 0, cache_read_tokens: 0 },
    cost_usd: 0.01,
    cost_confidence: 'exact',
    wall_ms: 60000,
    turns: 10,
    tool_calls: 12,
    agent: { adapter: 'claude-code', version: '2.1.197', model: 'model-a', provider: 'anthropic' },
    sandbox: {
      backend: 'docker',
      isolation: 'container',
      egress_mode: 'proxy-egress',
      egress_enforced: true,
      image_id: 'sha256:0000',
      resources: { cpus: 2, memory_mb: 4096, pids: 512 },
    },
    mechanism: { delivered: null, used: null },
    started_at: '2026-01-01T00:00:00.000Z',
    ended_at: '2026-01-01T00:01:00.000Z',
  };
  return { ...base, ...overrides };
}

export interface SyntheticOptions {
  tasks: number;
  reps: number;
  families: number;
  /** arm name -> added success probability (clamped to [0, 1]) */
  arms: Record<string, number>;
  seed: number;
  /** per-task base success probability is uniform in [low, high) */
  baseline?: { low: number; high: number };
  /** Tasks of one family share a shift of their base probability, uniform in [-f, f): they are dependent. */
  familyEffect?: number;
  /** Per arm, the fraction of attempts excluded as infrastructure faults (at random). */
  infraRate?: Record<string, number>;
  /** Per arm, the fraction of FAILED attempts excluded as infrastructure faults (exclusions that favour the arm). */
  excludeFailures?: Record<string, number>;
}

/**
 * Per-task success probabilities are drawn once and shared by every arm (plus
 * the arm's shift); each attempt passes with that probability. Token usage
 * varies per attempt. Identical shifts make an A/A cohort.
 */
export function syntheticCohort(o: SyntheticOptions): AttemptRecord[] {
  const rng = seededRng(o.seed);
  const low = o.baseline?.low ?? 0.1;
  const high = o.baseline?.high ?? 0.9;
  const f = o.familyEffect ?? 0;
  const familyShift = Array.from({ length: o.families }, () => f * (2 * rng.uniform() - 1));
  const probs = Array.from({ length: o.tasks }, (_, t) => Math.min(1, Math.max(0, low + (high - low) * rng.uniform() + familyShift[t % o.families]!)));
  const out: AttemptRecord[] = [];
  for (const [arm, shift] of Object.entries(o.arms)) {
    for (let t = 0; t < o.tasks; t++) {
      const p = Math.min(1, Math.max(0, probs[t]! + shift));
      for (let r = 0; r < o.reps; r++) {
        const input = 5000 + rng.int(20000);
        const output = 500 + rng.int(2000);
        const passed = rng.uniform() < p;
        const infra = rng.uniform() < (o.infraRate?.[arm] ?? 0) || (!passed && rng.uniform() < (o.excludeFailures?.[arm] ?? 0));
        out.push(
          makeAttempt({
            task: `t${String(t).padStart(4, '0')}`,
            family: `f${t % o.families}`,
            arm,
            rep: r,
            pass: infra ? null : passed,
            ...(infra ? { admission: 'excluded' as const, reason_code: 'infra-sandbox', infra_error: true } : {}),
            usage: { input_tokens: input, output_tokens: output, cache_write_tokens: rng.int(1000), cache_read_tokens: rng.int(50000) },
            cost_usd: (input * 3 + output * 15) / 1e6,
            wall_ms: 30000 + rng.int(120000),
            turns: 5 + rng.int(30),
          }),
        );
      }
    }
  }
  return out;
}
