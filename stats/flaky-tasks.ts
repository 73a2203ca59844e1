/**
 * A task whose verifier gave one attempt's changes different verdicts (audit's flaky-verifier
 * exclusion) cannot be scored at all: every attempt of it, in every arm, is excluded. Excluding
 * only the attempts caught would drop the correct ones more often (a verifier flaky on correct
 * solutions disagrees only there), which biases the comparison against the better arm.
 */
import type { AttemptRecord } from './types.js';

/** Audit's reason code for an attempt whose verifier runs disagreed. */
export const FLAKY_VERIFIER = 'flaky-verifier';

/** The tasks some attempt of which was a flaky-verifier exclusion, sorted. */
export function flakyVerifierTasks(attempts: readonly AttemptRecord[]): string[] {
  return [...new Set(attempts.filter((a) => a.reason_code === FLAKY_VERIFIER).map((a) => a.task))].sort();
}

/** The attempts with every attempt of a flaky-verifier task excluded, and those tasks. */
export function excludeFlakyTasks(attempts: readonly AttemptRecord[]): { attempts: AttemptRecord[]; tasks: string[] } {
  const tasks = flakyVerifierTasks(attempts);
  if (!tasks.length) return { attempts: [...attempts], tasks };
  const flaky = new Set(tasks);
  const caught = new Map<string, string>();
  for (const a of attempts) if (a.reason_code === FLAKY_VERIFIER && !caught.has(a.task)) caught.set(a.task, a.node);
  return {
    attempts: attempts.map((a) =>
      // An attempt already excluded keeps its own reason.
      !flaky.has(a.task) || a.admission === 'excluded'
        ? a
        : {
            ...a,
            admission: 'excluded' as const,
            reason_code: FLAKY_VERIFIER,
            explanation: `the verifier of task ${a.task} gave different verdicts on the same changes (${caught.get(a.task)}): no attempt of the task can be scored (this one's verdict was ${a.pass ? 'pass' : 'fail'})`,
            pass: null,
          },
    ),
    tasks,
  };
}
