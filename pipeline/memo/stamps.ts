/**
 * Stamps: the answers of queries a memo cannot see as files (a daemon's state), each declared by
 * its owner where it asks (pipeline/hooks.ts) and asked again at replay by the asker its owner registers
 * for its kind (cli/memo-entry.ts): the memo knows no daemon. A stamp whose kind has no asker, or
 * that cannot be answered (the daemon is gone, it does not answer in time), is a miss.
 */
import type { Stamp } from '../hooks.js';

/** A stamp and the answer it gave when the memo was recorded. */
export type StampRecord = readonly [stamp: Stamp, answer: string];

/** The askers by stamp kind: each answers its question as its owner did when the memo was recorded. */
export type StampAskers = Readonly<Record<string, (question: unknown) => Promise<string>>>;

/** Why a recorded answer no longer holds, or undefined when every one does. */
export async function changedAnswer(stamps: readonly StampRecord[], askers: StampAskers): Promise<string | undefined> {
  for (const [stamp, answer] of stamps) {
    const ask = askers[stamp.kind];
    if (!ask) return `no asker for a ${stamp.kind} stamp`;
    let now: string;
    try {
      now = await ask(stamp.question);
    } catch (e) {
      return `${stamp.kind}: ${(e as Error).message}`;
    }
    if (now !== answer) return `${stamp.kind} changed`;
  }
  return undefined;
}
