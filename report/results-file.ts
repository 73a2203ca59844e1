import type { AnalysisResult, AuditedAttempt } from '../stats/types.js';

/**
 * A bundle's results.json: the cohort's analysis and every attempt's record. Its JSON Schema,
 * schemas/results.schema.json, is generated from this type by scripts/compile-schemas.mjs.
 */
export interface ResultsFile {
  schema_version: 1;
  cohort: string;
  /** The cohort's registered version (null when no version was registered). */
  version: number | null;
  freeze_digest: string | null;
  /** SHA-256 of the config as exported (config/bench.config.yaml in the bundle). */
  config_digest: string;
  analysis: AnalysisResult;
  /** Every attempt's audit record (audit.json), in the analysis' order. */
  attempts: AuditedAttempt[];
}
