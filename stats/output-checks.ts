/**
 * What an analysis (analysis.json) and an audited attempt (audit.json) must be, checked by every
 * reader of those outputs against the schema generated from their types (schemas/results.schema.json,
 * by scripts/compile-schemas.mjs): the validators compiled at build time, or, when the schema
 * has changed since, compiled here from it.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ValidateFunction } from 'ajv';
import { lazyRequire } from '../pipeline/lazy-require.js';
import { packageRoot } from '../pipeline/package-root.js';
import { prebuiltValidators, validationProblems } from '../pipeline/prebuilt-validators.js';

type Definition = 'AnalysisResult' | 'AuditedAttempt';

const loadAjv = lazyRequire<typeof import('ajv')>('ajv');
const validators = new Map<Definition, ValidateFunction>();
let prebuilt: Partial<Record<Definition, ValidateFunction>> | null | undefined;

function resultsSchemaText(): string {
  return readFileSync(join(packageRoot(), 'schemas', 'results.schema.json'), 'utf8');
}

function validatorOf(definition: Definition): ValidateFunction {
  const known = validators.get(definition);
  if (known) return known;
  if (prebuilt === undefined)
    prebuilt = prebuiltValidators('output-validators.generated.cjs', 'resultsSchemaDigest', () =>
      createHash('sha256').update(resultsSchemaText()).digest('hex'),
    );
  let v = prebuilt?.[definition];
  if (!v) {
    const { Ajv } = loadAjv();
    const ajv = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true, inlineRefs: false });
    ajv.addSchema(JSON.parse(resultsSchemaText()));
    v = ajv.getSchema(`https://pairbench.dev/schemas/results.schema.json#/definitions/${definition}`)!;
  }
  validators.set(definition, v);
  return v;
}

const problemsOf = (definition: Definition, value: unknown): string[] => validationProblems(validatorOf(definition), value);

/** What is wrong with a parsed analysis.json ([] when it is an AnalysisResult). */
export const analysisProblems = (value: unknown): string[] => problemsOf('AnalysisResult', value);

/** What is wrong with a parsed audit.json ([] when it is an AuditedAttempt). */
export const auditedAttemptProblems = (value: unknown): string[] => problemsOf('AuditedAttempt', value);

/** What is wrong with a parsed attempts.json (every audited attempt an analysis read). */
export function auditedAttemptsProblems(value: unknown): string[] {
  if (!Array.isArray(value)) return ['/ must be an array'];
  // Each record's problems at its index: `/ must have ...` (the record itself) becomes `/1 must have ...`.
  return value.flatMap((a, i) => auditedAttemptProblems(a).map((p) => (p.startsWith('/ ') ? `/${i}${p.slice(1)}` : `/${i}${p}`)));
}
