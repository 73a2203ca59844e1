/**
 * The one convention of every `--json` output: an object whose first field is
 * `schema_version` (schemas/cli-output.schema.json), snake_case fields, and one error
 * shape: {schema_version, ok: false, errors: [{severity, message, field?, file?, line?, column?, hint?, related?}]}.
 */
import { diagnosticToJson, type Diagnostic } from '../pipeline/diagnostic.js';

type Out = { write(s: string): unknown };

export const JSON_SCHEMA_VERSION = 1;

/** One JSON document (pretty, for a command's result). */
export function printJson(out: Out, value: Record<string, unknown>): void {
  out.write(JSON.stringify({ schema_version: JSON_SCHEMA_VERSION, ...value }, null, 2) + '\n');
}

/** One JSON line (a stream of events, e.g. a worker's jobs). */
export function printJsonLine(out: Out, value: Record<string, unknown>): void {
  out.write(JSON.stringify({ schema_version: JSON_SCHEMA_VERSION, ...value }) + '\n');
}

export function printJsonErrors(out: Out, errors: readonly Diagnostic[]): void {
  printJson(out, { ok: false, errors: errors.map(diagnosticToJson) });
}
