import { runProcess } from '../sandboxes/exec-process.js';
import type { ExecResult } from '../sandboxes/sandbox.js';
import { graded, reportedStatus, type RunnerStatus } from '../test-results/index.js';
import { runWithReport } from './report-runners.js';
import { runShell, type LanguageAdapter, type RunnerContext } from './language-adapter.js';
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
  const shared: SharedRuns = new Map();
  const runner = adapter.reportRunner;
  // A report runner: one invocation per tree and repeat for every test's file, as verify runs it.
  const reports = runner ? new Map<string, Promise<ReadonlyMap<string, RunnerStatus>>>() : null;
  const files = [...new Set(tests.map((t) => t.t.file))].sort(compare);
  const reportOf = (tree: string, repeat: number) => {
    const key = JSON.stringify([tree, repeat]);
    let r = reports!.get(key);
    if (!r) reports!.set(key, (r = runWithReport(ctx, runner!, tree, files).then((x) => (x.ok ? x.value : new Map<string, RunnerStatus>()))));
    return r;
  };
  const runs = await Promise.all(
    tests.map(async (test) => {
      const on = (tree: string) =>
        Promise.all(
          Array.from({ length: repeats }, async (_, repeat): Promise<Outcome> => {
            if (!runner) return outcome(adapter, ctx, shared, test, tree, repeat);
            // A test the report does not name did not pass (and did not run).
            const status = reportedStatus(await reportOf(tree, repeat), test.id);
            const pass = graded(status) === 'pass';
            return { pass, ran: pass };
          }),
        );
      const starting = await on(trees.starting);
      const solved = await on(trees.solved);
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

interface Outcome {
  /** The verifier command exited 0. */
  pass: boolean;
  /** ...and its output shows the test ran and passed. */
  ran: boolean;
}

/**
 * One test's outcome on `tree` in one repeat. A test whose command is `run 2>&1 | check` (tape) is
 * judged by its check over a run shared with every test of the same file in that tree and
 * repeat: the file runs once, not once per test, and the outcome is the command's own (the
 * check reads exactly what the pipe would have fed it).
 */
async function outcome(
  adapter: LanguageAdapter,
  ctx: RunnerContext,
  shared: SharedRuns,
  test: { id: string; t: TestResult },
  tree: string,
  repeat: number,
): Promise<Outcome> {
  const halves = adapter.verifierHalves?.(test.id, test.t);
  if (!halves) {
    const r = await runShell(ctx, tree, adapter.commandFor(test.id, test.t));
    return { pass: r.exitCode === 0 && !r.timedOut, ran: r.exitCode === 0 && adapter.ranAndPassed(test.id, test.t, r.stdout) };
  }
  const r = await sharedRun(ctx, shared, tree, halves.run, repeat);
  if (r.timedOut) return { pass: false, ran: false };
  const c = await ctx.limit(() => runProcess(['sh', '-c', halves.check], { cwd: tree, env: ctx.env, timeoutMs: ctx.timeoutMs, stdin: r.stdout }));
  const pass = c.exitCode === 0 && !c.timedOut;
  return { pass, ran: pass && adapter.ranAndPassed(test.id, test.t, c.stdout) };
}

/** The runs one discrimination check shares, by tree, command and repeat. */
type SharedRuns = Map<string, Promise<ExecResult>>;

/** One run of `command 2>&1` per tree and repeat, however many tests read it. */
function sharedRun(ctx: RunnerContext, runs: SharedRuns, tree: string, command: string, repeat: number): Promise<ExecResult> {
  const key = JSON.stringify([tree, command, repeat]);
  let r = runs.get(key);
  if (!r) runs.set(key, (r = runShell(ctx, tree, `${command} 2>&1`)));
  return r;
}
