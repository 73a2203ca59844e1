/**
 * What a test runner reported of one test, and how a listed test is graded from it -- the rules
 * of SWE-bench's harness (swebench/harness/grading.py): PASSED and XFAIL pass; FAILED and ERROR
 * fail; a test the report does not name fails; SKIPPED fails a FAIL_TO_PASS test and keeps a
 * PASS_TO_PASS one.
 */
export type RunnerStatus = 'PASSED' | 'FAILED' | 'SKIPPED' | 'ERROR' | 'XFAIL';

/** The verdict of one listed test from its status (undefined: not in the report). */
export function graded(status: RunnerStatus | undefined | null): 'pass' | 'fail' | 'skipped' {
  if (status === 'PASSED' || status === 'XFAIL') return 'pass';
  if (status === 'SKIPPED') return 'skipped';
  return 'fail';
}

/**
 * The status of a listed test id, as SWE-bench resolves it: exactly, else -- for a
 * parametrized id cut short in the record (more "[" than "]", e.g. `test_x[a-very-long-par`)
 * -- by the reported ids it is a prefix of, when they all agree on pass or fail.
 */
export function reportedStatus(statuses: ReadonlyMap<string, RunnerStatus>, id: string): RunnerStatus | null {
  const exact = statuses.get(id);
  if (exact) return exact;
  if ((id.match(/\[/g) ?? []).length <= (id.match(/\]/g) ?? []).length) return null;
  const prefixed = [...statuses].filter(([k]) => k.startsWith(id)).map(([, v]) => v);
  if (!prefixed.length) return null;
  const verdicts = new Set(prefixed.map((st) => graded(st) === 'pass'));
  // Matches that disagree resolve nothing: the test is not found.
  return verdicts.size === 1 ? prefixed[0]! : null;
}

/**
 * SWE-bench's exit-code cross-check (its issue 620): a test command that exited non-zero while
 * its report names results and not one failure is not describing the run that happened (the
 * code under test printed them): the report is not graded. Returns why, or null.
 */
export function exitCodeProblem(statuses: ReadonlyMap<string, RunnerStatus>, exitCode: number | null): string | null {
  if (exitCode === null || exitCode === 0 || statuses.size === 0) return null;
  if ([...statuses.values()].some((s) => s === 'FAILED' || s === 'ERROR')) return null;
  return `the test command exited ${exitCode}, yet its report names ${statuses.size} result(s) and no failure: the report does not describe the run (SWE-bench's exit-code rule), so it is not graded`;
}
