/**
 * How the owner of a query a memo cannot see (a child process, a socket) declares what its answer
 * is a function of, while a memo is being recorded (record.ts):
 * - `stampedQuery(owner, inputs, fn)`: the answer is a function of `inputs` (paths: binaries,
 *   sysctls under /proc by their content), which are observed in place of the query;
 * - `stampedAnswer(stamp, fn, answer)`: the answer is the daemon's state, asked again at replay by
 *   the memo's own means (stamps.ts).
 * Either way a change is a miss, and the query inside is no doubt (other work running meanwhile
 * still is). The uid and the other host facts the owner asks for are recorded as facts. The
 * recorder is bundled apart from the rest of pairbench (it starts first), so the two meet on a
 * global symbol.
 */
import type { Stamp } from './stamps.js';

export const MEMO_RECORDER = Symbol.for('pairbench.memo.recorder');

export interface StampedQueries {
  run<T>(owner: string, inputs: readonly string[], fn: () => T): T;
  ask<T>(stamp: Stamp, fn: () => Promise<T>, answer: (value: T) => string): Promise<T>;
}

const recorder = () => (globalThis as Record<symbol, StampedQueries | undefined>)[MEMO_RECORDER];

export function stampedQuery<T>(owner: string, inputs: readonly string[], fn: () => T): T {
  const r = recorder();
  return r ? r.run(owner, inputs, fn) : fn();
}

export function stampedAnswer<T>(stamp: Stamp, fn: () => Promise<T>, answer: (value: T) => string): Promise<T> {
  const r = recorder();
  return r ? r.ask(stamp, fn, answer) : fn();
}
