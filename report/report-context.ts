/**
 * What a report needs besides the analysis result: the frozen protocol in words
 * (for the methods panel) and the instrument settings (for the status bar). The
 * export step builds it from the cohort config; nothing in it is read from the
 * clock or the environment, so the same inputs render the same bytes.
 */
export interface ReportContext {
  /** Cohort name (and version, if the caller wants it shown), e.g. "context-file v2". */
  cohort: string;
  /**
   * When, each said for what it is (ISO 8601, passed in: a report is a pure function of its
   * inputs): the bundle was built, the cohort's first attempt started, its last ended.
   */
  times: { exported_at: string; first_attempt_at: string | null; last_attempt_at: string | null };
  config_digest: string;
  freeze_digest: string;
  /** arm name -> its role in the analysis and what it adds, in words ("nothing added", "CLAUDE.md from fixtures/ctx.md", ...). */
  arms: Record<string, { role?: 'control' | 'treatment' | 'arm'; treatment: string }>;
  /** The cohort's preregistration record in the store that built the bundle (absent: not known). */
  history?: ReportHistory;
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
  /**
   * The verifier's environment: pinned when it is an image by ID (docker; the ID is in every
   * verify key); otherwise the host's files it runs with (bubblewrap's read-only system mounts,
   * or the host itself) are not in the key, and a verdict says so.
   */
  verifier_environment?: { pinned: boolean; text: string };
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

/** What came before this cohort version in the store, and what this version reused. */
export interface ReportHistory {
  version: number;
  /** No earlier version of the cohort in this store. */
  first_registration_in_store: boolean;
  earlier: {
    version: number;
    freeze_digest: string;
    frozen_at: string;
    bound_at: string | null;
    /** What changed from it to the next version, in words. */
    changes_to_next: string[];
    /** Each observation in words, with when. */
    observations: { at: string; by: string; words: string }[];
  }[];
  /** Earlier version -> how many of this bundle's attempts it executed (reused here). */
  reused: Record<string, number>;
  /** Acknowledged registry resets, in words. */
  resets: string[];
  /** The registry could not be read when the bundle was built (its chain was broken). */
  registry_problem: string | null;
  /** Every later draw of this version's attempts and verifier runs, in words (the analysis reads each key's first draw). */
  redraws: string[];
  /** Other cohorts' analyses of these attempts made before this one's, in words. */
  prior_analyses: string[];
  /** Outcomes looked at outside a run before the first analysis, in words. */
  peeks: string[];
  /** The committed lock anchoring the record outside the store, in words; null when nothing anchors it. */
  anchor: string | null;
}
