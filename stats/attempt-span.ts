import type { AttemptRecord } from './types.js';

/** The attempts' time span: when the first started and the last ended (null when none says). */
export function attemptSpan(attempts: readonly Pick<AttemptRecord, 'started_at' | 'ended_at'>[]): { first: string | null; last: string | null } {
  const started = attempts
    .map((a) => a.started_at)
    .filter((x): x is string => Boolean(x))
    .sort();
  const ended = attempts
    .map((a) => a.ended_at)
    .filter((x): x is string => Boolean(x))
    .sort();
  return { first: started[0] ?? null, last: ended[ended.length - 1] ?? null };
}
