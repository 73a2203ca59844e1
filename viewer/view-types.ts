/**
 * What the viewer's server sends and its page reads (JSON over /api): one definition for both
 * sides. No imports: the browser build compiles this file without Node's types.
 */

/** An attempt's tokens as the tables count them: input, output and both cache streams (reasoning is inside output). */
export function totalTokens(
  u: { input_tokens?: number; output_tokens?: number; cache_read_tokens?: number; cache_write_tokens?: number } | null,
): number | null {
  return u ? (u.input_tokens ?? 0) + (u.output_tokens ?? 0) + (u.cache_read_tokens ?? 0) + (u.cache_write_tokens ?? 0) : null;
}

/** GET /api/state: the cohorts to open and, watching a store, the run's progress. */
export interface ViewerState {
  cohorts: { id: string; cohort: string; version: number | null }[];
  progress: Progress | null;
}

export interface Progress {
  total: number;
  cached: number;
  to_run: number;
  /** Every node: cached (built), running now (a live run holds its lock), or still to run. */
  nodes: { id: string; status: 'cached' | 'running' | 'run' }[];
  /** The running nodes, longest first, with how long each has run. */
  running: { id: string; since: string; elapsed_ms: number }[];
  /** Nodes neither built nor running. */
  queued: number;
  /** Per step with nodes left: how many are built, and the time left estimated from its built nodes (null: none built yet). */
  steps: { name: string; built: number; total: number; eta_ms: number | null }[];
  at: string;
}

/** GET /api/cohorts/ID: a cohort's verdicts in the report's words, what it ran on, how it was frozen, its tasks. */
export interface CohortView {
  cohort: string;
  version: number | null;
  freeze_digest: string | null;
  config_digest: string;
  verdicts: {
    title: string;
    control: string;
    treatment: string;
    verdict: string;
    effect: string;
    interval: string;
    p: string | null;
    n_tasks: number;
    meaning: string;
  }[];
  warnings: string[];
  status: Record<string, string> | null;
  freeze: unknown;
  /** The registry's version history in words (watching a store); null for a bundle (it holds its own freeze record only). */
  history: string[] | null;
  tasks: TaskRow[];
  has_report: boolean;
}

/** One attempt of a task, as the tables and the pair page show it. */
export interface AttemptRow {
  node: string;
  arm: string;
  rep: number;
  admission: string;
  reason_code: string;
  pass: boolean | null;
  exit_reason: string;
  tokens: number | null;
  cost_usd: number | null;
  wall_ms: number;
}

export interface TaskRow {
  task: string;
  family: string;
  category: string;
  /** Per comparison (`treatment vs control`): the task's (a)/(b)/(c) class, when the analysis gave one. */
  outcomes: Record<string, string>;
  attempts: AttemptRow[];
}

/** The fields of an attempt's record (audit.json) the page reads. */
export interface ViewedRecord {
  node: string;
  task: string;
  arm: string;
  rep: number;
  admission: string;
  reason_code: string;
  explanation: string;
  pass: boolean | null;
  exit_reason: string;
  usage: { input_tokens?: number; output_tokens?: number; cache_read_tokens?: number; cache_write_tokens?: number } | null;
  cost_usd: number | null;
  wall_ms: number;
  leakage?: { kind: string; where: string; evidence: string }[];
  mutation?: { touched: string[]; out_of_bounds: string[]; verifier_owned: string[] };
  delivery?: { marker_lines: string[]; instruction_lines: string[] };
}

/** GET /api/cohorts/ID/attempts/NODE: one attempt and what it left. */
export interface AttemptView<R extends ViewedRecord = ViewedRecord> {
  record: R;
  diff: string | null;
  verifier: string | null;
  agent_log: string | null;
  /** The ATIF trajectory, as the agent adapter wrote it. */
  trajectory: { steps?: AtifStepView[] } | null;
  gateway: unknown[];
  /** Where the treatment's marker lines appeared in what the model received: the exchange (1-based) and the line. */
  delivered_at: { exchange: number; line: string }[];
}

export interface AtifStepView {
  step_id: number;
  source: string;
  message?: string;
  tool_calls?: { function_name: string; arguments: unknown }[];
  observation?: { results: { content?: string }[] };
}
