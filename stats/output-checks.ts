/**
 * What an analysis (analysis.json) and an audited attempt (audit.json) must be, checked by every
 * reader of those outputs against the schema generated from their types (schemas/results.schema.json,
 * by scripts/compile-schemas.mjs).
 */
import { definitionChecks } from '../pipeline/prebuilt-validators.js';

const resultsDefinition = definitionChecks('results.schema.json', 'output-validators.generated.cjs');

/** What is wrong with a parsed analysis.json ([] when it is an AnalysisResult). */
export const analysisProblems = resultsDefinition('AnalysisResult');

/** What is wrong with a parsed audit.json ([] when it is an AuditedAttempt). */
export const auditedAttemptProblems = resultsDefinition('AuditedAttempt');

/** What is wrong with a parsed results.json of a bundle ([] when it is a ResultsFile, report/results-file.ts). */
export const resultsFileProblems = resultsDefinition('ResultsFile');

/** What is wrong with a parsed attempts.json (every audited attempt an analysis read). */
export function auditedAttemptsProblems(value: unknown): string[] {
  if (!Array.isArray(value)) return ['/ must be an array'];
  // Each record's problems at its index: `/ must have ...` (the record itself) becomes `/1 must have ...`.
  return value.flatMap((a, i) => auditedAttemptProblems(a).map((p) => (p.startsWith('/ ') ? `/${i}${p.slice(1)}` : `/${i}${p}`)));
}
