/**
 * Test helper: validates a trajectory against ATIF v1.7 as Harbor's pydantic models define
 * it: schemas/atif-v1.7.schema.json (every model, every field, extra fields forbidden) plus
 * the models' validators JSON Schema cannot say (agents/atif-rules.ts, which the run step checks too). Returns every problem found ([] = valid).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv, type ValidateFunction } from 'ajv';
import { atifModelProblems } from '../agents/atif-rules.js';

let validate: ValidateFunction | undefined;

function schemaValidator(): ValidateFunction {
  if (!validate) {
    const ajv = new Ajv({ allErrors: true, strict: true, strictRequired: false, allowUnionTypes: true });
    validate = ajv.compile(JSON.parse(readFileSync(join(import.meta.dirname, '..', 'schemas', 'atif-v1.7.schema.json'), 'utf8')));
  }
  return validate;
}

export function atifProblems(trajectory: unknown): string[] {
  const v = schemaValidator();
  if (!v(trajectory)) return (v.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message ?? 'is invalid'}`);
  return atifModelProblems(trajectory as Parameters<typeof atifModelProblems>[0]);
}

/** ATIF's prompt tokens from a result's gateway usage: every input token, uncached, cache-written or cache-read. */
export function promptTokens(usage: { input_tokens: number; cache_write_tokens?: number; cache_read_tokens?: number }): number {
  return usage.input_tokens + (usage.cache_write_tokens ?? 0) + (usage.cache_read_tokens ?? 0);
}
