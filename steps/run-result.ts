/**
 * What an attempt's result.json holds, as run writes it and audit, judge, probe and doctor's
 * canary read it (through run's RUN_RESULT descriptor, which checks it against the schema
 * generated from this type). Types only: report/ and cli/ may import it without run's code.
 */
import type { CostConfidence } from '../stats/types.js';
import type { MarkerScope } from '../gateway/markers.js';
import type { SandboxReceipt } from '../sandboxes/sandbox.js';
import type { ProviderError } from '../gateway/meter.js';

export type ExitReason = 'done' | 'turn-cap' | 'time-cap' | 'token-cap' | 'cost-cap' | 'output-budget' | 'agent-crash' | 'infra-error';

/** The sandbox did not start; the agent made no model request; the model provider failed or refused. */
/** treatment: an MCP server of the arm was not offered at the model's first turn (not ready). */
export type InfraKind = 'sandbox' | 'agent-start' | 'provider' | 'treatment' | 'script';

export interface RunResult {
  schema_version: 1;
  task: string;
  arm: string;
  rep: number;
  agent: { adapter: string; version: string; model: string; provider: string };
  exit_reason: ExitReason;
  /** What failed when exit_reason is infra-error (host paths redacted), else null. */
  infra_error: string | null;
  /**
   * Which part of the harness failed, when exit_reason is infra-error: what audit's reason code
   * is made from (absent in results recorded before it was; audit then reads infra_error's prefix).
   */
  infra_kind?: InfraKind | null;
  /** The price table the cost was computed with: where its prices come from and their date (absent for a scripted model). */
  price_table?: { source: string; as_of: string };
  /** How the provider answered this attempt's requests: HTTP status -> count, the agent's own retries included (absent without a gateway). */
  provider_statuses?: Record<string, number>;
  /** When the provider failed or refused (infra_kind provider): its last status (null: not reached, or it broke off) and an excerpt of what it said. */
  provider_error?: ProviderError;
  /** Why what the attempt left was over its budgets (exit output-budget). */
  over_budget?: string;
  started_at: string;
  ended_at: string;
  exit_code?: number | null;
  wall_ms: number;
  /** Sandbox start and close, workspace snapshot and the rest the harness did for this attempt. */
  harness_ms?: number;
  /** Model requests through the gateway (the agent's own count without one). */
  turns: number;
  agent_reported_turns?: number;
  tool_calls: number;
  usage: { input_tokens: number; output_tokens: number; cache_write_tokens: number; cache_read_tokens: number; reasoning_tokens?: number } | null;
  cost_usd: number | null;
  cost_confidence: CostConfidence;
  /** Where the model's replies came from: a reader must never mistake scripted outcomes for a model's. */
  model_source?: 'scripted' | 'provider' | 'none';
  delivered: Record<string, boolean>;
  /** The arm's fingerprint and every instruction line the model received (digests). */
  delivery?: { marker: { scope: MarkerScope; lines: string[] } | null; instruction_lines: string[] };
  files_changed: number;
  /** What this arm received of the repository's own instruction files (restore: redacted), by digest. */
  restored?: { path: string; sha256: string }[];
  /** isolation `unknown`: the sandbox did not start, so it has no receipt. */
  sandbox: Omit<SandboxReceipt, 'isolation'> & { isolation: SandboxReceipt['isolation'] | 'unknown' };
}
