/**
 * A step's output as its kind declares it: its name, what it is, and for a JSON file, how a
 * reader checks what it parsed. A consumer reads another kind's output through the producer's
 * descriptor, so neither the name nor the shape is restated outside the kind that writes it.
 */
import type { Sha256 } from './digest.js';
import { err, ok, type Result } from './result.js';
import type { OutputManifest } from './store/action-cache.js';

export interface Artifact<N extends string = string> {
  /** The output's name in a node's record. */
  readonly name: N;
  /** What it is, in a person's words (`show` says it). */
  readonly about: string;
}

/** A JSON output holding a T: `problems` says what is wrong with a parsed value ([] when it is a T). */
export interface JsonArtifact<T, N extends string = string> extends Artifact<N> {
  readonly problems: (value: unknown) => string[];
  /** Carries T for the type checker only. */
  readonly type?: T;
}

export function artifact<const N extends string>(name: N, about: string): Artifact<N> {
  return { name, about };
}

export function jsonArtifact<T, const N extends string = string>(name: N, about: string, problems: (value: unknown) => string[]): JsonArtifact<T, N> {
  return { name, about, problems };
}

/** Whether a declared output is a JSON file with a type (what a step taking all of an upstream's outputs checks them by). */
export function isJsonArtifact(a: Artifact): a is JsonArtifact<unknown> {
  return typeof (a as Partial<JsonArtifact<unknown>>).problems === 'function';
}

/** How a consumer's `selectUpstream` names an output its upstream may not have (`name?`). */
export function optional(a: Artifact | string): string {
  return `${typeof a === 'string' ? a : a.name}?`;
}

/** Outputs by name, with what each is (`show` lists them so). */
export function describeOutputs(artifacts: readonly Artifact[]): Record<string, string> {
  return Object.fromEntries(artifacts.map((a) => [a.name, a.about]));
}

/**
 * The T in a node's JSON output, parsed and checked: undefined when the node has no such output,
 * an error (naming the output and what is wrong) when its bytes are not JSON or not a T.
 */
export function readJsonArtifact<T>(
  a: JsonArtifact<T>,
  outputs: OutputManifest,
  read: (digest: Sha256) => Buffer,
  node: string,
): Result<T, string> | undefined {
  const entry = outputs[a.name];
  return entry ? parseJsonArtifact(a, read(entry.digest).toString('utf8'), node) : undefined;
}

/** The T in the text of `node`'s output `a`, parsed and checked (an error names the output and what is wrong). */
export function parseJsonArtifact<T>(a: JsonArtifact<T>, text: string, node: string): Result<T, string> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    return err(`${node}'s ${a.name} is not JSON (${(e as Error).message})`);
  }
  const problems = a.problems(value);
  return problems.length
    ? err(`${node}'s ${a.name} is not ${a.about}: ${problems.slice(0, 3).join('; ')}${problems.length > 3 ? ` (and ${problems.length - 3} more)` : ''}`)
    : ok(value as T);
}

/** An output made in memory, stored as a file (no file is written to be read back). */
export function putFileOutput(
  cas: { putBytes(bytes: Uint8Array): Sha256 },
  content: string | Uint8Array,
): { type: 'file'; digest: Sha256; size: number; executable: false } {
  const bytes = typeof content === 'string' ? Buffer.from(content) : content;
  return { type: 'file', digest: cas.putBytes(bytes), size: bytes.length, executable: false };
}
