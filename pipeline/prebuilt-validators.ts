import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { ValidateFunction } from 'ajv';
import { packageRoot } from './package-root.js';

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
