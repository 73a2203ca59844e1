import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { err, ok, type Result } from '../pipeline/result.js';
import { graded, parseReport, reportedStatus, reportFileName, type RunnerStatus } from '../test-results/index.js';
import { shellQuote } from './shell.js';
import { runShell, type LanguageAdapter, type ReportRunner, type RunnerContext } from './language-adapter.js';
import type { SuiteResult, TestResult } from './types.js';

/**
 * Test runners read from the structured report they write to a file pairbench owns: vitest and
 * jest (their JSON report), pytest (JUnit XML). The whole suite is one invocation, the runner's
 * own discovery choosing the test files (vitest's and jest's config, `.ts`, `.mts`, `.tsx`,
 * `__tests__/`: wherever the project puts them); a task's verifier is one invocation for its
 * tests' files (`verifier.runner`), each test's status read from the report, a test it does not
 * name failing.
 */

/** The local install's binaries first, as `npm test` finds them. */
const LOCAL_BIN = 'PATH="$PWD/node_modules/.bin:$PATH"';

/** vitest: `vitest run` (never watch mode) with the JSON reporter written to `{report}`. */
export function vitestRunner(script: string): ReportRunner {
  const once = /(^|[\s;&|(])vitest\s+run(\s|$)/.test(script) ? script.trim() : script.trim().replace(/(^|[\s;&|(])vitest(?=\s|$)/, '$1vitest run');
  return {
    name: 'vitest',
    report: 'jest-json',
    command: (files) => `${LOCAL_BIN} ${once} --reporter=json --outputFile={report}${files.map((f) => ` ${shellQuote(f)}`).join('')}`,
  };
}

/** jest with its JSON report written to `{report}`; files as path patterns (jest's positional arguments). */
export function jestRunner(script: string): ReportRunner {
  return {
    name: 'jest',
    report: 'jest-json',
    command: (files) => `${LOCAL_BIN} ${script.trim()} --json --outputFile={report}${files.map((f) => ` ${shellQuote(f)}`).join('')}`,
  };
}

/** pytest with a JUnit XML report at `{report}` (xunit1: each case names its file, so node ids are found). */
export function pytestRunner(command: string): ReportRunner {
  const base = command.trim().replace(/\s-rA\b/, '');
  return {
    name: 'pytest',
    report: 'junit-xml',
    command: (files) => `${base} -o junit_family=xunit1 --junitxml={report}${files.map((f) => ` ${shellQuote(f)}`).join('')}`,
  };
}

/** A runner's invocation in `tree` with its report at a fresh path of pairbench's: the statuses, or why there are none. */
export async function runWithReport(
  ctx: RunnerContext,
  runner: ReportRunner,
  tree: string,
  files: readonly string[],
): Promise<Result<Map<string, RunnerStatus>, string>> {
  const dir = mkdtempSync(join(tmpdir(), 'pairbench-report-'));
  try {
    const report = join(dir, reportFileName(runner.report));
    const r = await runShell(ctx, tree, runner.command(files).replaceAll('{report}', shellQuote(report)));
    let text = '';
    try {
      text = readFileSync(report, 'utf8');
    } catch {
      // none written: parseReport says so
    }
    const parsed = parseReport(runner.report, text, tree);
    if (!parsed.ok) {
      const last = (r.stdout + r.stderr).trim().split('\n').slice(-3).join(' | ');
      return err(
        `${runner.name} wrote no report it can be read from (${parsed.error}; exit ${r.exitCode}${r.timedOut ? ', timed out' : ''}${last ? `: ${last}` : ''})`,
      );
    }
    return parsed;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function suiteOf(statuses: ReadonlyMap<string, RunnerStatus>): SuiteResult {
  const suite: SuiteResult = new Map();
  for (const [id, status] of statuses) {
    const g = graded(status);
    suite.set(id, { status: g === 'pass' ? 'pass' : g === 'skipped' ? 'skip' : 'fail', file: id.slice(0, id.indexOf('::')), selectors: [] });
  }
  return suite;
}

/**
 * `base` (its test files, sources, functions and parse check) with `runner` running the suite
 * and the verifier. `suiteFromReport`: the suite's tests are the report's (jest, vitest); else
 * base's runSuite names them (pytest's -rA node ids, which its JUnit cases are also found by).
 */
export function reportRunnerAdapter(base: LanguageAdapter, ctx: RunnerContext, runner: ReportRunner, suiteFromReport: boolean): LanguageAdapter {
  return {
    ...base,
    async runSuite(tree) {
      if (!suiteFromReport) return base.runSuite(tree);
      const r = await runWithReport(ctx, runner, tree, []);
      return r.ok ? ok(suiteOf(r.value)) : err(`runner output not understood: ${r.error}`);
    },
    commandFor(_id, test: TestResult) {
      return runner.command([test.file]);
    },
    ranAndPassed(id, _test, output) {
      const parsed = parseReport(runner.report, output, null);
      return parsed.ok && graded(reportedStatus(parsed.value, id)) === 'pass';
    },
    reportRunner: runner,
  };
}
