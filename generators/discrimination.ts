import { runShell, type LanguageAdapter, type RunnerContext } from './test-suite.js';
import { compare } from './seeded-order.js';
import type { TestResult } from './types.js';

export interface VerifierPlan {
  /** Test id -> the test as the suite reported it (for its command and its output check). */
  failToPass: Map<string, TestResult>;
  passToPass: Map<string, TestResult>;
}

/**
 * Runs every verifier command `repeats` times on the starting tree (setup.patch applied) and on
 * the solved tree (setup.patch then solution.patch applied). fail_to_pass commands must fail on
 * the first and pass on the second every time; pass_to_pass commands must pass on both. A passing
 * fail_to_pass command must also show the test ran (node --test exits 0 when no test matches).
 * Returns why the task is rejected, or null when it discriminates.
 */
export async function discriminationFailure(
  adapter: LanguageAdapter,
  ctx: RunnerContext,
  plan: VerifierPlan,
  trees: { starting: string; solved: string },
  repeats: number,
): Promise<string | null> {
  const tests = [
    ...[...plan.failToPass].map(([id, t]) => ({ id, t, kind: 'fail_to_pass' as const })),
    ...[...plan.passToPass].map(([id, t]) => ({ id, t, kind: 'pass_to_pass' as const })),
  ].sort((a, b) => (a.kind === b.kind ? compare(a.id, b.id) : a.kind === 'fail_to_pass' ? -1 : 1));
  const runs = await Promise.all(
    tests.map(async (test) => {
      const command = adapter.commandFor(test.id, test.t);
      const one = async (tree: string) => {
        const r = await runShell(ctx, tree, command);
        return { pass: r.exitCode === 0 && !r.timedOut, ran: r.exitCode === 0 && adapter.ranAndPassed(test.id, test.t, r.stdout) };
      };
      const starting = await Promise.all(Array.from({ length: repeats }, () => one(trees.starting)));
      const solved = await Promise.all(Array.from({ length: repeats }, () => one(trees.solved)));
      return { ...test, starting, solved };
    }),
  );
  for (const r of runs) {
    const passedStarting = r.starting.filter((x) => x.pass).length;
    const passedSolved = r.solved.filter((x) => x.pass).length;
    const notRun = r.solved.filter((x) => x.pass && !x.ran).length;
    const what = `${r.kind} "${r.id}"`;
    if (notRun) return `verifier does not run the test (its command passes without running it): ${what}`;
    if (r.kind === 'fail_to_pass') {
      if (passedStarting === repeats) return `verifier passes on the untouched tree: ${what}`;
      if (passedStarting > 0) return `flaky: passed ${passedStarting} of ${repeats} on the untouched tree: ${what}`;
    } else if (passedStarting < repeats) {
      return passedStarting === 0
        ? `pass_to_pass test fails on the untouched tree: ${what}`
        : `flaky: passed ${passedStarting} of ${repeats} on the untouched tree: ${what}`;
    }
    if (passedSolved === 0) return `verifier fails with the solution: ${what}`;
    if (passedSolved < repeats) return `flaky: passed ${passedSolved} of ${repeats} with the solution: ${what}`;
  }
  return null;
}
