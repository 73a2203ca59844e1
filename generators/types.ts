/** The languages whose test suites a generator can run and whose functions it can stub. */
export type Language = 'js' | 'python';

/** Options shared by the generators: where the repo is, which commit, how to run its tests. */
export interface GenerateOptions {
  /** A local git repository. */
  repo: string;
  /** The full 40-hex commit the tasks are derived from. */
  commit: string;
  /** Orders candidates: sha256(`${seed}:${candidate id}`). */
  seed: number;
  /** At most how many valid tasks to produce (none found is an error). */
  count: number;
  language: Language;
  /**
   * Runs the whole suite from the repo root and prints per-test results:
   * js `node --test --test-reporter=tap` or `tape FILES` (run once per test file, with the file
   * appended, so that each test is attributed to its file); python `python -m pytest -rA -q`.
   * Default: the repository's own (package.json scripts.test; pytest -rA for Python).
   */
  testCommand?: string;
  /** Task directories are written to `<outDir>/<id>/`. */
  outDir: string;
  /** How task.yaml refers to the repo, relative to the task dir; default: the relative path. */
  taskRepoPath?: string;
  /** How many times the discrimination check runs each verifier command per tree; default 2. */
  repeats?: number;
  /** A limit for each test run, and the tasks' verifier timeout; default 600. */
  timeoutSec?: number;
  /** How many test processes run at once; default 4. */
  concurrency?: number;
  /** The environment of every test run; default PATH, HOME (and pyenv/virtualenv variables), LANG, TZ. */
  env?: Record<string, string>;
  /** Progress lines (no console in library code). */
  log?: (line: string) => void;
}

export interface DroppedCandidate {
  candidate: string;
  reason: string;
}

export interface StubTaskReport {
  id: string;
  dir: string;
  function: string;
  file: string;
  /** The fail_to_pass tests: pass on the commit, fail with the stub. */
  covering: string[];
}

export interface RevertTaskReport {
  id: string;
  dir: string;
  /** The commit the task is based on (its change to `file` is what the agent re-implements). */
  commit: string;
  file: string;
  /** The fail_to_pass tests: pass at the commit, fail with the file at its parent version. */
  covering: string[];
}

export interface GenerateReport<T = StubTaskReport> {
  tasks: T[];
  dropped: DroppedCandidate[];
}

export type TestStatus = 'pass' | 'fail' | 'skip' | 'ambiguous';

/** One test of a suite run, keyed by its id (js `file::a > b`, python the pytest node id). */
export interface TestResult {
  status: TestStatus;
  file: string;
  /** js: the names --test-name-pattern must match to reach the test (non-suite ancestors and itself). */
  selectors: string[];
}

export type SuiteResult = Map<string, TestResult>;
