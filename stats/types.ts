/**
 * Input and output types of the analyze step. The result is plain JSON (no
 * undefined, no NaN, no Infinity): a missing figure is `null`.
 */
import type { AnalyzeStep } from '../steps/config-types.generated.js';

/** One audited attempt (produced by the audit step). */
export interface AttemptRecord {
  node: string;
  /** The run and verify nodes this record was made from (their files are under nodes/ in a bundle). Absent in records from before. */
  sources?: { run: string; verify: string | null };
  task: string;
  family: string;
  category: string;
  arm: string;
  rep: number;
  admission: 'accepted' | 'excluded';
  reason_code: string;
  explanation: string;
  /** Scored outcome of an accepted attempt (failures count: false); null when excluded. */
  pass: boolean | null;
  /** Over budget (token/cost/time cap): scored false, and is "no answer", never (c). */
  no_answer: boolean;
  exit_reason: string;
  infra_error: boolean;
  /** What the infrastructure fault was, when infra_error (e.g. "agent did not start: exit code 127 ..."). Absent in records from before. */
  infra_cause?: string | null;
  usage: { input_tokens: number; output_tokens: number; cache_write_tokens: number; cache_read_tokens: number; reasoning_tokens?: number } | null;
  cost_usd: number | null;
  cost_confidence: CostConfidence;
  /** The model's replies were scripted (pairbench's fake model), not a model's: outcomes prove machinery only. Absent in records from before. */
  scripted?: boolean;
  /** The agent process alone, start to exit (monotonic). */
  wall_ms: number;
  /** What the harness spent around it (sandbox start and close, snapshot); absent in records from before. */
  harness_ms?: number;
  /** restore: redacted arms: how many of the repository's own instruction files the attempt received. */
  restored?: number;
  turns: number;
  tool_calls: number;
  agent: { adapter: string; version: string; model: string; provider: string };
  sandbox: {
    backend: string;
    isolation: string;
    egress_mode: string;
    egress_enforced: boolean;
    image_id: string | null;
    resources: { cpus: number | null; memory_mb: number | null; pids: number | null };
  };
  mechanism: { delivered: boolean | null; used: boolean | null };
  /**
   * What the attempt did that the verifier cannot see, whatever the policy made of it:
   * paths written out of bounds (outside the allowed paths, or verifier-owned), leakage
   * flags acted on, and whether its verdict was forged. Absent in records from before.
   */
  integrity?: { out_of_bounds: number; leakage: number; verdict_forged: boolean };
  /**
   * Digests of the arm's delivery fingerprint (empty for the control) and of every
   * instruction line the attempt's model received: a control whose instruction lines hold
   * a treatment's whole fingerprint received that treatment. Absent in records from before.
   */
  delivery?: { marker_lines: string[]; instruction_lines: string[] };
  started_at: string | null;
  ended_at: string | null;
  /** Earlier tries of this attempt (infrastructure faults, retried), oldest first; rates count every try. Absent in records from before. */
  tries?: AttemptTry[];
}

/** One earlier try of an attempt: the run's exit and, for an infrastructure fault, its cause. */
export interface AttemptTry {
  exit_reason: string;
  infra_error: string | null;
  started_at: string | null;
  ended_at: string | null;
}

/** `none`: no request reached a priced provider (none at all, or only a scripted model); its cost_usd is null. */
export type CostConfidence = 'exact' | 'estimated' | 'free' | 'none';

export interface CostWeights {
  input: number;
  cache_write: number;
  cache_read: number;
  output: number;
}

export interface FactorialSpec {
  factors: string[];
  /** arm -> factor -> level */
  levels: Record<string, Record<string, 0 | 1>>;
}

/** The second cost stream (e.g. generating the context file): reported, never added to eval cost. */
export interface OverheadSpec {
  usd: number | null;
  tokens: number | null;
  source: string;
  /** As the producing step recorded it (a context step: none when its model was scripted). */
  confidence?: string;
  model_source?: string;
}

export interface AnalysisSpec {
  control: string;
  treatments: string[];
  /** default 1, 1.25, 0.1, 5 */
  weights: CostWeights;
  /** default 10000 resamples, seed 1 */
  bootstrap: { resamples: number; seed: number };
  /** two-sided confidence level, default 0.95 */
  confidence: number;
  /** power for the minimum detectable effect, default 0.8 */
  power: number;
  /** minimum accepted fraction per arm, default 0.8 */
  validity_floor: number;
  /**
   * Significance level of Fisher's exact test of the two arms' infra-error rates: a
   * comparison is refused when the rates differ at this level (default 0.05). Equal
   * rates, whatever they are, do not refuse; excluded pairs are then imputed against any
   * claim (worst_case).
   */
  infra_error_threshold: number;
  factorial?: FactorialSpec | null;
  overhead?: OverheadSpec | null;
  /** Further [treatment, control] comparisons (e.g. full vs each single lever), in the same Holm family. */
  comparisons?: [string, string][];
  /** Preregistered sequential stopping (absent: fixed-N). */
  stopping?: StoppingSpec;
  /** The arms are crossed with models (or agents): each compared within each, and the interaction tested (stats/crossed.ts). */
  by?: CrossedBy;
  /** The pull-request check, preregistered (absent: the default gate, stats/verdicts.ts DEFAULT_FAIL_ON). */
  gate?: GatePolicy;
}

/** A cohort's pull-request check: what fails it, not-noninferior's margin, and the drop regression must catch. */
export type GatePolicy = NonNullable<AnalyzeStep['gate']>;

/** What a cohort crosses its arms with: the agent's model, or the agent itself. */
export type CrossedBy = 'model' | 'agent';

/**
 * Sequential stopping over families, in their preregistered order. `group-sequential`:
 * K looks, each after a preregistered fraction of the families has all its pairs in,
 * Lan-DeMets spending boundaries (efficacy each side at one-sided `alpha`, optional
 * non-binding futility). `confidence-sequence`: an anytime-valid betting confidence
 * sequence (Waudby-Smith and Ramdas) on family deltas, looked at after every family.
 */
export type StoppingSpec = NonNullable<AnalyzeStep['stopping']> & {
  /** Families per look, in the preregistered order (filled from the run step's order seed; part of the spec). */
  schedule?: string[][];
};

/** One look of a sequential analysis. */
export interface SequentialLook {
  look: number;
  /** Families in the look with all their pairs in, and the planned number at this look. */
  families: number;
  planned_families: number;
  /** Information fraction: families / the planned maximum. */
  fraction: number;
  /** Effect (mean task delta) over the look's families. */
  estimate: number | null;
  /** group-sequential: the standardized sign-flip statistic sum / sqrt(sum of squared family sums). */
  statistic: number | null;
  /** group-sequential: the efficacy boundary (|statistic| >= it stops with a claim) and the futility boundary. */
  upper: number | null;
  lower: number | null;
  /** The repeated confidence interval at this look (group-sequential), or the confidence sequence (anytime-valid). */
  interval: { low: number; high: number } | null;
  decision: 'continue' | 'efficacy' | 'harm' | 'futility' | 'final' | 'stopped-earlier' | 'waiting';
  /** Families left out of this look: an attempt with an infrastructure fault is retried first. */
  pending_families: string[];
}

export interface SequentialResult {
  rule: StoppingSpec['rule'];
  max_families: number;
  looks: SequentialLook[];
  /** The look at which the cohort stopped (null: it has not stopped and looks remain). */
  stopped_at: number | null;
  decision: 'efficacy' | 'harm' | 'futility' | 'no-claim' | 'continue';
  /** The interval the report shows: the repeated CI (or confidence sequence) at the stop, not the fixed-N interval. */
  interval: { low: number; high: number; confidence: number; method: 'repeated-ci' | 'betting-cs' } | null;
  design: { spending: string; alpha: number; power: number; theta: number | null; inflation: number | null; futility: string } | null;
  /** Attempts of the families after the stop, which the run did not run (set by the analyze step). */
  attempts_not_run?: number;
  notes: string[];
}

/**
 * `unisolated`: the effect would be a claim, but an arm ran without isolation (the local
 * backend, or a network shared with other attempts), so none is made; numbers are shown.
 */
export type Verdict = 'positive' | 'negative' | 'within-noise' | 'insufficient-n' | 'unisolated' | 'refused' | 'invalid';

// ---------------------------------------------------------------- results

/** median / min / max over the attempts that have the figure; all null when none has it. */
export interface Spread {
  n: number;
  median: number | null;
  min: number | null;
  max: number | null;
}

export interface SpreadWithTotal extends Spread {
  mean: number | null;
  total: number;
}

/** A percentile bootstrap interval. */
export interface Interval {
  low: number;
  high: number;
  confidence: number;
  /**
   * cluster-bootstrap-percentile: families (or tasks) drawn with replacement, each drawn
   * family's tasks used once; cluster-t: cluster-robust t interval on the units, k - 1 df.
   */
  method: 'cluster-bootstrap-percentile' | 'cluster-t' | 'repeated-ci' | 'betting-cs';
  resamples: number | null;
  seed: number | null;
  /** cluster-t: degrees of freedom and units. */
  df?: number;
  units?: number;
  /**
   * Why the interval has no width: every unit's delta is the same (no spread), so it is the
   * effect itself. Then the exact test alone decides (the interval is reported, not relied on).
   */
  degenerate?: string;
}

/** The cluster-respecting test a claim rests on. */
export interface RandomizationTest {
  method: 'sign-flip';
  /** What was flipped: families when tasks are grouped, tasks otherwise (never reps). */
  unit: 'task' | 'family';
  n_units: number;
  /** Two-sided p of the observed effect. */
  p: number;
  /** Holm-adjusted over every comparison and factorial effect of the cohort. */
  p_holm: number;
  exact: boolean;
  /** Monte Carlo sample size when not exact. */
  samples: number | null;
  /** The smallest p this test can give with n_units (2 / 2^n_units). */
  min_p: number;
  /** The fewest units at which the test can reach alpha at Holm's first step over this cohort's comparisons. */
  units_needed: number;
  alpha: number;
}

export interface PassAtK {
  k: number;
  /** mean over tasks of 1 - C(n-c,k)/C(n,k) */
  pass_at_k: number;
  /** mean over tasks of C(c,k)/C(n,k) */
  pass_hat_k: number;
  n_tasks: number;
}

/** The configuration an arm ran with (from its accepted attempts; all attempts when none was accepted). */
export interface ArmConfig {
  adapter: string[];
  adapter_version: string[];
  model: string[];
  provider: string[];
  sandbox_backend: string[];
  isolation: string[];
  egress_mode: string[];
  egress_enforced: string[];
  image_id: string[];
  resources: string[];
}

export type ConfigField = keyof ArmConfig;

export interface ArmMetrics {
  arm: string;
  n_attempts: number;
  n_accepted: number;
  n_excluded: number;
  /** n_accepted / n_attempts (null when the arm has no attempts) */
  accepted_fraction: number | null;
  /** exclusion reason_code -> count */
  exclusions: Record<string, number>;
  /**
   * Accepted attempts failed for what they did rather than what the verifier said:
   * reason_code (verdict-forged, out-of-bounds, leakage) -> count; each counted once.
   */
  integrity_failures: Record<string, number>;
  /** Attempts (accepted or not) that wrote out of bounds, leaked, or forged a verdict, whatever the policy did. */
  integrity: { out_of_bounds: number; leakage: number; verdict_forged: number };
  n_tasks: number;
  /** Accepted attempts the outcome figures count: those of the paired task set (every arm's figures are over the same tasks). */
  n_scored: number;
  /** Tasks with accepted attempts in this arm left out of its outcome figures: they have no valid pair in some comparison. */
  unpaired_tasks: string[];
  /** Every try of every attempt (an attempt retried after an infrastructure fault has several). */
  n_tries: number;
  /** Tries that ended in an infrastructure fault, retried or not. */
  n_infra_errors: number;
  /** n_infra_errors / n_tries: every try counts */
  infra_error_rate: number | null;
  /** infrastructure-fault cause (as the run recorded it) -> tries */
  infra_causes: Record<string, number>;
  /** Attempts whose model replies were scripted (pairbench's fake model). */
  n_scripted: number;
  /** Accepted attempts whose agent crashed (scored 0). */
  n_agent_crashes: number;
  /** Accepted attempts with no token usage recorded (none, or zero). */
  n_without_tokens: number;
  /** accepted attempts that ran over budget (scored false) */
  n_no_answer: number;
  n_passed: number;
  /** passes / accepted attempts: failures, abandoned and over-budget attempts count 0 */
  completion_rate: number | null;
  /** per accepted attempt with usage: input + output + cache_write + cache_read */
  tokens: SpreadWithTotal;
  /** per accepted attempt with usage: the weighted sum of the four token counts */
  weighted_cost: SpreadWithTotal;
  /** per accepted attempt with a cost */
  cost_usd: SpreadWithTotal & { n_missing: number; confidence: CostConfidence | null };
  /** The agent's own time (its process, start to exit). */
  wall_ms: Spread;
  /** The harness's time around it (sandbox start and close, workspace copy and snapshot), apart. */
  harness_ms?: Spread;
  turns: Spread;
  tool_calls: Spread;
  /** completion_rate / mean cost_usd per accepted attempt; null without cost or at zero cost */
  quality_per_dollar: number | null;
  /** completion_rate / (mean weighted cost / 1e6) */
  quality_per_million_weighted: number | null;
  /** passes / (sum of tokens of accepted attempts / 1e6) */
  completions_per_million_tokens: number | null;
  /** k = 1 .. min over tasks of the accepted attempts per task */
  pass_at_k: PassAtK[];
  mechanism: { delivered: number; used: number; unknown_delivered: number; unknown_used: number };
  /** earliest started_at and latest ended_at over all attempts */
  window: { started_at: string | null; ended_at: string | null };
  config: ArmConfig;
}

/** Why a comparison has no verdict. Switch over `reason`; end with unreachable(). */
export type ComparisonProblem =
  | { reason: 'arm-missing'; arm: string; message: string }
  | { reason: 'config-mismatch'; field: ConfigField; control: string[]; treatment: string[]; message: string }
  | { reason: 'mixed-config'; arm: string; field: ConfigField; values: string[]; message: string }
  | {
      reason: 'infra-error-rate';
      control_rate: number;
      treatment_rate: number;
      difference: number;
      /** Fisher's exact two-sided p of the two rates. */
      p: number;
      threshold: number;
      message: string;
    }
  | { reason: 'below-validity-floor'; arm: string; accepted_fraction: number; floor: number; message: string }
  | { reason: 'no-valid-pairs'; message: string }
  | { reason: 'control-received-treatment'; attempts: string[]; message: string }
  | { reason: 'unisolated'; arms: string[]; message: string }
  | { reason: 'insufficient-n'; n_units: number; units_needed: number; message: string }
  | { reason: 'exclusions-against-claim'; message: string }
  | { reason: 'factorial-design'; message: string }
  | { reason: 'sequential'; message: string }
  /** A comparison that makes no claim, and the first condition it did not meet (the verdict's real reason). */
  | { reason: 'no-claim'; condition: 'test' | 'interval' | 'envelope'; message: string };

export interface PairCounts {
  /** (task, rep) keys present in either arm */
  total: number;
  /** both sides accepted: used in the paired estimates */
  valid: number;
  /** at least one side excluded: dropped from paired estimates, counted here */
  excluded: number;
  /** a key present in one arm only */
  unmatched: number;
}

export interface NoiseEnvelope {
  value: number;
  floor: number;
  spread_term: number;
  z: number;
  formula: string;
}

export interface MinimumDetectableEffect {
  /** null when not computable at this n (too few units for the test to reach alpha, or no spread). */
  value: number | null;
  sd_task_delta: number | null;
  n_tasks: number;
  alpha: number;
  power: number;
  /** Why value is null, in words. */
  not_computable?: string;
  formula: string;
}

export interface McNemar {
  /** control fail & treatment pass */
  b: number;
  /** control pass & treatment fail */
  c: number;
  p: number;
  /** Holm-adjusted over the comparisons that have a p value */
  p_holm: number;
}

export interface SignTest {
  positive: number;
  negative: number;
  ties: number;
  p: number;
}

/** treatment - control per valid pair where both sides have the figure */
export interface PairedDifference {
  n_pairs: number;
  median: number | null;
  ci: Interval | null;
}

export type OutcomeClass = 'a' | 'b' | 'c' | 'no-answer';

export interface TaskOutcome {
  task: string;
  family: string;
  category: string;
  class: OutcomeClass;
  n_pairs: number;
  control_pass_rate: number;
  treatment_pass_rate: number;
  delta: number;
  control_mean_weighted_cost: number | null;
  treatment_mean_weighted_cost: number | null;
  /** treatment mean weighted cost / control mean weighted cost */
  cost_ratio: number | null;
  /** e.g. "(a) at 1.2x the control cost" */
  label: string;
}

export interface OutcomeCounts {
  /** helped: task delta > 0 */
  a: number;
  /** no difference */
  b: number;
  /** hurt: task delta < 0 */
  c: number;
  /** every treatment attempt of the task ran over budget: never counted as (c) */
  no_answer: number;
}

export interface Comparison {
  control: string;
  treatment: string;
  verdict: Verdict;
  /** non-empty when the verdict is refused or invalid */
  problems: ComparisonProblem[];
  /**
   * The arms with an attempt that ran without isolation, whatever the verdict (`run --fail-on
   * unisolated` fails on them). Absent when there is none, and in results from before.
   */
  unisolated_arms?: string[];
  pairs: PairCounts;
  n_tasks: number;
  n_families: number;
  /** mean over tasks of the per-task mean paired delta; null when refused or invalid */
  delta: number | null;
  ci: Interval | null;
  envelope: NoiseEnvelope | null;
  mde: MinimumDetectableEffect | null;
  /** |delta| < MDE: the design is underpowered for the effect it saw */
  directional: boolean | null;
  /** The test the verdict rests on (null when refused or invalid). */
  test: RandomizationTest | null;
  mcnemar: McNemar | null;
  sign_test: SignTest | null;
  /** Tasks of either arm with no valid pair: they are in no estimate. */
  lost_tasks: string[];
  /**
   * Excluded pairs imputed against the claim (a treatment fail and a control pass for a
   * positive effect, the reverse for a negative one): whether the claim survives them.
   * Null when nothing was excluded or there is no claim to test.
   */
  worst_case: { effect: number; p: number; ci: Interval | null; survives: boolean } | null;
  paired: {
    tokens: PairedDifference;
    weighted_cost: PairedDifference;
    cost_usd: PairedDifference;
    /** Steps: model turns and tool calls per attempt, treatment - control. */
    turns?: PairedDifference;
    tool_calls?: PairedDifference;
    /** Where the provider reports them (pairs where both attempts have a count). */
    reasoning_tokens?: PairedDifference;
  } | null;
  /** treatment mean weighted cost / control mean weighted cost over the valid pairs */
  cost_ratio: number | null;
  /** The cost ratio's interval (cluster bootstrap of the ratio of summed weighted costs); cost change = ratio - 1. */
  cost_ratio_ci?: Interval | null;
  outcomes: { counts: OutcomeCounts; tasks: TaskOutcome[] } | null;
  /**
   * The three mechanism claims over the valid pairs, kept apart (one does not imply
   * the next): the treatment was delivered (gateway evidence), the agent observably
   * used it (trajectory evidence), the pair's scored outcome changed.
   */
  mechanism: { pairs: number; delivered: number; used: number; changed: number; delivered_and_changed: number } | null;
}

export interface FactorialEffect {
  name: string;
  estimate: number;
  ci: Interval | null;
  n_tasks: number;
  formula: string;
  /** The same test as a comparison's, Holm-adjusted with them. */
  test: RandomizationTest | null;
  /** Decided under the same rule as a comparison (no exclusions or isolation here: those refuse the design). */
  verdict: 'positive' | 'negative' | 'within-noise' | 'insufficient-n';
}

export interface FactorialResult {
  status: 'ok' | 'refused' | 'invalid';
  problems: ComparisonProblem[];
  factors: string[];
  cells: Array<{ arm: string; levels: Record<string, 0 | 1> }>;
  /** tasks with at least one accepted attempt in every cell */
  n_tasks: number;
  main_effects: FactorialEffect[];
  /** 2x2 designs only: mean over tasks of (Y11 - Y10) - (Y01 - Y00) */
  interaction: FactorialEffect | null;
}

/** A cohort crossed with models or agents (spec.by): its cells, and per treatment and level its interaction with the context. */
export interface CrossedResult {
  by: CrossedBy;
  /** Sorted; the first is the base every other level is compared with. */
  levels: string[];
  /** Each arm at each level, by the name it has in `arms` and `comparisons` (`ARM @ LEVEL`). */
  cells: Array<{ arm: string; level: string; cell: string }>;
  designs: CrossedDesign[];
}

export interface CrossedDesign {
  treatment: string;
  control: string;
  level: string;
  base_level: string;
  status: FactorialResult['status'];
  problems: ComparisonProblem[];
  /** (treatment - control at level) - (treatment - control at base_level), mean over tasks; tested in the cohort's Holm family. */
  interaction: FactorialEffect | null;
  /** The level's difference from the base level, averaged over the two arms: descriptive (the levels were not randomised within a task), no test. */
  between: { estimate: number; ci: Interval | null; n_tasks: number } | null;
}

export interface EvalCost {
  arm: string;
  /** over every attempt, accepted or excluded: what the arm spent */
  cost_usd: number | null;
  cost_confidence: CostConfidence | null;
  n_missing_cost: number;
  tokens: number;
  weighted_cost: number;
}

export interface AnalysisResult {
  schema_version: 1;
  spec: AnalysisSpec;
  arms: ArmMetrics[];
  comparisons: Comparison[];
  factorial: FactorialResult | null;
  /** Arms crossed with models or agents (spec.by): the cells, each treatment's interaction with the level, the levels' differences. */
  crossed?: CrossedResult;
  /** Two streams, never summed: no field here is eval + overhead. */
  cost_streams: { eval: EvalCost[]; overhead: OverheadSpec | null };
  /** What a reader must see before any verdict (the report's headline): scripted outcomes, infrastructure faults, crashes, silent arms. */
  warnings: HeadlineWarning[];
  notes: string[];
  /** A judge's (a)/(b)/(c) beside the verifier's (analyze `judge: STEP`). */
  judge?: JudgeSummary;
  /** Sequential stopping (spec.stopping): every look, the stop, the repeated interval. */
  sequential?: SequentialResult;
}

/** What a judge step wrote for one task (steps/judge.ts). */
export interface JudgementRecord {
  task: string;
  category: string;
  control: string;
  treatment: string;
  classification: 'a' | 'b' | 'c' | null;
  reason: string;
  model: string;
  model_source: 'scripted' | 'provider';
  rubric_digest: string;
}

export interface JudgeSummary {
  step: string;
  control: string;
  treatment: string;
  model: string | null;
  model_source: 'scripted' | 'provider' | null;
  rubric_digest: string | null;
  rows: { task: string; category: string; judge: 'a' | 'b' | 'c' | null; reason: string; verifier: OutcomeClass | null }[];
  counts: { judge: { a: number; b: number; c: number; unclassified: number }; verifier: OutcomeCounts | null };
  /** Over tasks both classified (a verifier "no answer" row is not compared). */
  agreement: { compared: number; agree: number; rate: number | null };
}

export interface HeadlineWarning {
  kind: 'scripted' | 'infra' | 'agent-crash' | 'no-tokens' | 'no-delivery' | 'zero-hurt' | 'no-own-files' | 'not-run';
  /** The arm it is about; null for the whole cohort. */
  arm: string | null;
  message: string;
}

/** A finding that the attempt reached what it must not see (the hidden verifier, the history, a canary). */
export interface LeakageFlag {
  kind: 'hidden-path' | 'hidden-content' | 'version-history' | 'canary';
  where: string; // e.g. "trajectory step 4" or "gateway exchange 2 (tool result)"
  evidence: string;
}

/** What the attempt's changes touched, against what it was allowed to. */
export interface MutationAudit {
  touched: string[];
  out_of_bounds: string[];
  verifier_owned: string[];
  allowed_paths: string[];
}

/** audit.json: the attempt's record as analyze reads it, with the evidence behind its integrity flags. */
export type AuditedAttempt = AttemptRecord & { mutation: MutationAudit; leakage: LeakageFlag[] };
