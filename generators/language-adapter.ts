import type pLimit from 'p-limit';
import type { Result } from '../pipeline/result.js';
import { runProcess } from '../sandboxes/exec-process.js';
import type { ExecResult } from '../sandboxes/sandbox.js';
import type { ReportFormat } from '../test-results/index.js';
import type { FunctionSpan } from './js-functions.js';
import type { Language, SuiteResult, TestResult } from './types.js';

/** What a generator needs to know about one language and its test runner. */
export interface LanguageAdapter {
  readonly language: Language;
  isTestFile(path: string): boolean;
  /** A non-test source file whose exported functions may be stubbed. */
  isSourceFile(path: string): boolean;
  /** The exported functions of `source` (the file's path picks the dialect). */
  findFunctions(source: string, file: string): FunctionSpan[];
  /** How the prompt says what a stub does. */
  readonly stubBehaviour: string;
  /** An error message when `file` in `tree` does not parse, else null. */
  syntaxError(tree: string, file: string): Promise<string | null>;
  /** Runs the whole suite in `tree`; each test keyed by its id. */
  runSuite(tree: string): Promise<Result<SuiteResult, string>>;
  /** A shell command, run from the tree's root, that runs just this test and exits non-zero when it fails. */
  commandFor(id: string, test: TestResult): string;
  /** Whether the output of commandFor(id) shows the test ran and passed (not merely that nothing failed). */
  ranAndPassed(id: string, test: TestResult, output: string): boolean;
  /**
   * For a runner whose per-test command runs a whole file and then reads what it printed (tape):
   * the two halves, with commandFor(id) exactly `${run} 2>&1 | ${check}`. Tests that share a
   * `run` can then be checked from one run of it (the discrimination check runs each file once
   * per tree and repeat, not once per test).
   */
  verifierHalves?(id: string, test: TestResult): { run: string; check: string };
  /**
   * A runner read from its report file (report-runners.ts): the task's verifier is then one
   * invocation of it for its tests' files (`verifier.runner`), and so is each discrimination run.
   */
  reportRunner?: ReportRunner;
}

export interface RunnerContext {
  testCommand: string;
  env: Record<string, string>;
  timeoutMs: number;
  /** Bounds how many test processes run at once (shared by everything a generator runs). */
  limit: ReturnType<typeof pLimit>;
  /** Aborted on SIGINT or SIGTERM: every running test process group is killed. */
  signal?: AbortSignal;
}

export function runShell(ctx: RunnerContext, tree: string, command: string): Promise<ExecResult> {
  return ctx.limit(() =>
    runProcess(['sh', '-c', command], { cwd: tree, env: ctx.env, timeoutMs: ctx.timeoutMs, ...(ctx.signal ? { signal: ctx.signal } : {}) }),
  );
}

/** One runner: how its report is read, and its command for some test files (none: the whole suite). */
export interface ReportRunner {
  readonly name: string;
  readonly report: ReportFormat;
  /** `{report}` stands for the report's path. */
  command(files: readonly string[]): string;
}
