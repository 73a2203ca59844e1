/**
 * What a report needs besides the analysis result: the frozen protocol in words
 * (for the methods panel) and the instrument settings (for the status bar). The
 * export step builds it from the cohort config; nothing in it is read from the
 * clock or the environment, so the same inputs render the same bytes.
 */
export interface ReportContext {
  /** Cohort name (and version, if the caller wants it shown), e.g. "context-file v2". */
  cohort: string;
  /** Passed in (ISO 8601), never Date.now(): a report is a pure function of its inputs. */
  generated_at: string;
  config_digest: string;
  freeze_digest: string;
  /** arm name -> what the arm adds, in words ("none", "CLAUDE.md from fixtures/ctx.md", ...). */
  arms: Record<string, { treatment: string }>;
  agent: { adapter: string; version: string; model: string };
  sandbox: {
    backend: string;
    egress_mode: string;
    egress_enforced: boolean;
    /** Image digest / image ID; null for a backend without an image (local). */
    image_id: string | null;
    /** e.g. "none" for the local backend, "namespaces", "container". */
    isolation?: string;
  };
  /** The frozen tasks, in cohort order. */
  tasks: ReportTask[];
  reps: number;
  limits: { turns: number | null; wall_seconds: number | null; tokens: number | null; cost_usd: number | null };
  /** How attempts are scored, e.g. "hidden command verifier (FAIL_TO_PASS + PASS_TO_PASS) in a fresh sandbox". */
  verifier_kind: string;
  /** e.g. "results on fixtures prove the machinery, not any product". Shown prominently when present. */
  fixture_note?: string;
}

export interface ReportTask {
  id: string;
  family?: string;
  category?: string;
  /** Repository (URL or name) and full 40-hex commit the task is pinned to. */
  repo?: string;
  commit?: string;
}
