import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { ValidateFunction } from 'ajv';
import { lazyRequire } from './lazy-require.js';
import { packageRoot } from './package-root.js';

const loadAjv = lazyRequire<typeof import('ajv')>('ajv');

/**
 * The validators scripts/compile-schemas.mjs compiled into `schemas/<file>`, when they were made
 * from the schemas as they are now (the module's `digestField` equals `digest()`); otherwise
 * null, and the caller compiles them from the schemas at run time.
 */
export function prebuiltValidators(file: string, digestField: string, digest: () => string): Partial<Record<string, ValidateFunction>> | null {
  try {
    const mod = createRequire(import.meta.url)(join(packageRoot(), 'schemas', file)) as Record<string, unknown>;
    return mod[digestField] === digest() ? (mod as Partial<Record<string, ValidateFunction>>) : null;
  } catch {
    return null;
  }
}

/** What is wrong with `data` for `validate`, one line per error ([] when it is valid). */
export function validationProblems(validate: ValidateFunction, data: unknown): string[] {
  if (validate(data)) return [];
  return (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message ?? 'is invalid'}`);
}

/**
 * Checks against the definitions of one generated schema, `schemas/<schemaFile>`: each through
 * the validator scripts/compile-schemas.mjs compiled into `schemas/<generatedFile>` (recording
 * the schema's SHA-256 as `schemaDigest`), or, when the schema has changed since, compiled here
 * from it. Nothing is loaded until a check runs.
 */
export function definitionChecks(schemaFile: string, generatedFile: string): (definition: string) => (value: unknown) => string[] {
  const schemaText = () => readFileSync(join(packageRoot(), 'schemas', schemaFile), 'utf8');
  const validators = new Map<string, ValidateFunction>();
  let prebuilt: Partial<Record<string, ValidateFunction>> | null | undefined;
  const validatorOf = (definition: string): ValidateFunction => {
    const known = validators.get(definition);
    if (known) return known;
    prebuilt ??= prebuiltValidators(generatedFile, 'schemaDigest', () => createHash('sha256').update(schemaText()).digest('hex'));
    let v = prebuilt?.[definition];
    if (!v) {
      const { Ajv } = loadAjv();
      const ajv = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true, inlineRefs: false });
      const schema = JSON.parse(schemaText()) as { $id: string };
      ajv.addSchema(schema);
      v = ajv.getSchema(`${schema.$id}#/definitions/${definition}`);
      if (!v) throw new Error(`schemas/${schemaFile} has no definition ${definition}: run node scripts/compile-schemas.mjs`);
    }
    validators.set(definition, v);
    return v;
  };
  return (definition) => (value) => validationProblems(validatorOf(definition), value);
}
