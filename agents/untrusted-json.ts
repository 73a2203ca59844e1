/**
 * Reading JSON an agent wrote (its stdout stream): every field is checked before it is used.
 * A field of the wrong type reads as absent, so a forged line can neither crash the parser
 * (which would turn the attempt into an excluded infra error) nor pass a string for a count.
 */
import { isRecord } from './adapter.js';

export const stringOr = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/** A token count or a turn count: a finite, non-negative number. */
export const countOr = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : undefined);

/** The elements of `v` that `read` accepts (undefined for a non-array). */
export function arrayOf<T>(v: unknown, read: (x: unknown) => T | undefined): T[] | undefined {
  if (!Array.isArray(v)) return undefined;
  const out: T[] = [];
  for (const x of v) {
    const t = read(x);
    if (t !== undefined) out.push(t);
  }
  return out;
}

/** A map of counts (usage), keeping only the entries that are counts. */
export function countsOr(v: unknown): Record<string, number> | undefined {
  if (!isRecord(v)) return undefined;
  const out: Record<string, number> = {};
  for (const [k, x] of Object.entries(v)) {
    const n = countOr(x);
    if (n !== undefined) out[k] = n;
  }
  return out;
}

/** Each line of `stdout` that is a JSON object, read by `read` (lines it refuses, and partial lines of a killed process, are skipped). */
export function jsonLines<T>(stdout: string, read: (x: Record<string, unknown>) => T | undefined): T[] {
  const out: T[] = [];
  for (const line of stdout.split('\n')) {
    if (!line.trim().startsWith('{')) continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      continue;
    }
    const t = isRecord(value) ? read(value) : undefined;
    if (t !== undefined) out.push(t);
  }
  return out;
}
