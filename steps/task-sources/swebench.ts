import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { displayPath } from '../../pipeline/config/load.js';
import { closest, type Diagnostic, type SourceLocation } from '../../pipeline/diagnostic.js';
import { err, errorMessage, ok, type Result } from '../../pipeline/result.js';
import type { Task } from '../task.js';
import { REPORT_CHANNEL, type ReportFormat } from '../../test-results/index.js';

export interface SwebenchOptions {
  /**
   * The test command. With `{tests}`: ONE invocation runs every listed test (their
   * shell-quoted ids in its place) and each test's result is read from its report, as
   * SWE-bench's harness does, e.g. `python -m pytest -rA -p no:cacheprovider {tests}`.
   * With `{test}`: one process per test id (small suites, or runners with no report).
   */
  testCommand: string;
  /** How a `{tests}` runner's report is read (default: pytest's -rA summary). */
  report?: ReportFormat;
  /** The name of a `{tests}` runner's report file in pairbench's report directory (`{report}` is its path). */
  reportFile?: string | null;
  /** Seconds for the whole verification (the runner, or each per-test process). Default 1800. */
  timeoutSec?: number;
  /** Seconds per test, handed to the runner as $PAIRBENCH_TEST_TIMEOUT. Default none. */
  testTimeoutSec?: number | null;
  /**
   * Per repository (`django/django`): its own test command ({tests} in it) and how its log is
   * read, as SWE-bench runs each repository's suite (e.g. Django's runtests.py, sympy's bin/test).
   */
  perRepo?: Record<string, { testCommand: string; report: ReportFormat }>;
  /** Run each instance's own `eval_script` (SWE-bench 5.x records) as the verifier instead of a test command. */
  evalScript?: boolean;
}

/** SWE-bench 5.x's log_parser names, as the report formats that read those logs. */
const LOG_PARSERS: Record<string, ReportFormat> = {
  parse_log_pytest: 'pytest-rA',
  parse_log_pytest_v2: 'pytest-rA',
  parse_log_pytest_options: 'pytest-rA',
  parse_log_django: 'django',
  parse_log_sympy: 'sympy',
};

const DEFAULT_TIMEOUT_SEC = 1800;

/**
 * The fields of a record an environment's Dockerfile template may use: those that say which
 * environment an instance needs and where its repository is, never its answer (the gold patch,
 * the hidden tests, the eval script: an image is what the agent runs in).
 */
export const ENVIRONMENT_FIELDS = ['repo', 'version', 'environment_setup_commit', 'base_commit', 'instance_id'] as const;

const FULL_SHA = /^[0-9a-f]{40}$/;
const INSTANCE_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;
/** Longer lines (gold patches, problem statements) are not echoed under a message. */
const MAX_EXCERPT = 200;

/**
 * SWE-bench instances (one JSON object per line: instance_id, repo, base_commit,
 * problem_statement, patch, test_patch, FAIL_TO_PASS, PASS_TO_PASS, ...) as pairbench
 * Tasks keyed by instance id. `repos` maps each `owner/name` to a local git repository.
 * Each FAIL_TO_PASS / PASS_TO_PASS test id becomes one command from `testCommand`;
 * the test_patch is hidden and applied before the tests run. Every error names the
 * file, the line, the instance and the field.
 */
export function loadSwebenchInstances(jsonlFile: string, repos: Record<string, string>, options: SwebenchOptions): Result<Map<string, Task>, Diagnostic[]> {
  const each = loadSwebenchInstancesById(jsonlFile, repos, options);
  if (!each.ok) return each;
  const problems = [...each.value.values()].flatMap((r) => (r.ok ? [] : r.error));
  return problems.length ? err(problems) : ok(new Map([...each.value].map(([id, r]) => [id, (r as { ok: true; value: Task }).value])));
}

/**
 * Every instance of the file on its own: an instance whose repository is not mapped (or
 * that has another problem) fails alone, and only a step that selects it sees the error.
 * What no instance can be read without (the file, its JSON, an instance without an id)
 * fails the whole file.
 */
export function loadSwebenchInstancesById(
  jsonlFile: string,
  repos: Record<string, string>,
  options: SwebenchOptions,
): Result<Map<string, Result<Task, Diagnostic[]>>, Diagnostic[]> {
  const file = resolve(jsonlFile);
  const shown = displayPath(file);
  const runnerMode = /\{(tests|test_files|test_modules)\}/.test(options.testCommand);
  if (!runnerMode && !options.testCommand.includes('{test}')) {
    return err([
      {
        field: 'test_command',
        message: `test command "${options.testCommand}" has no {tests} (or {test}) placeholder`,
        hint: 'e.g. python -m pytest -rA -p no:cacheprovider {tests}: one run for every FAIL_TO_PASS and PASS_TO_PASS id, each result read from the -rA summary',
      },
    ]);
  }
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    return err([{ message: `cannot read SWE-bench instances ${shown}: ${errorMessage(e)}` }]);
  }

  const problems: Diagnostic[] = [];
  const tasks = new Map<string, Result<Task, Diagnostic[]>>();
  const firstLine = new Map<string, number>();
  const add = (line: InstanceLine) => {
    const before = problems.length;
    const task = line.toTask(file, repos, options);
    const id = task?.id ?? line.id;
    if (id !== undefined && firstLine.has(id)) {
      line.problem('instance_id', `instance "${id}" is listed twice (first at line ${firstLine.get(id)})`);
      return;
    }
    if (id === undefined) return; // no id: the file's problem (left in `problems`)
    firstLine.set(id, line.line);
    // This instance's own problems are its own: other instances still load.
    tasks.set(id, task ? ok(task) : err(problems.splice(before)));
  };
  // SWE-bench's datasets are published as JSON arrays as well as JSON Lines: both are read.
  if (text.trimStart().startsWith('[')) {
    const elements = arrayElements(text);
    if (!elements.ok)
      return err([
        {
          message: `${shown} is not a JSON array of instances: ${elements.error}`,
          hint: 'give one JSON object per instance, as an array or one per line (JSONL)',
        },
      ]);
    for (const e of elements.value) add(new InstanceLine(shown, e.line, e.text, problems, `item ${e.index} (line ${e.line})`));
  } else {
    text.split('\n').forEach((raw, i) => {
      const lineText = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
      if (lineText.trim()) add(new InstanceLine(shown, i + 1, lineText, problems));
    });
  }
  if (!problems.length) return ok(tasks);
  // The file fails: every problem, its own and each instance's, in the order of the file.
  const all = [...problems, ...[...tasks.values()].flatMap((r) => (r.ok ? [] : r.error))];
  return err(all.sort((a, b) => (a.location?.line ?? 0) - (b.location?.line ?? 0)));
}

/** The top-level elements of a JSON array, each with the line it starts on (for messages). */
function arrayElements(text: string): Result<{ index: number; line: number; text: string }[], string> {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (e) {
    return err(errorMessage(e));
  }
  if (!Array.isArray(data)) return err('it does not hold an array');
  // Where each element starts: the first character of each value at depth 1, outside strings.
  const starts: number[] = [];
  let depth = 0;
  let inString = false;
  let expectValue = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
      continue;
    }
    if (depth === 1 && expectValue && !/\s/.test(c)) {
      starts.push(i);
      expectValue = false;
    }
    if (c === '"') inString = true;
    else if (c === '{' || c === '[') {
      depth++;
      if (depth === 1) expectValue = true;
    } else if (c === '}' || c === ']') depth--;
    else if (c === ',' && depth === 1) expectValue = true;
  }
  const lineAt = (offset: number) => text.slice(0, offset).split('\n').length;
  return ok(data.map((value, index) => ({ index, line: lineAt(starts[index] ?? 0), text: JSON.stringify(value) })));
}

/** Shell-quotes a word the way Python's shlex.quote does: unchanged when safe, else in single quotes. */
export function shellQuote(word: string): string {
  if (word && /^[\w@%+=:,./-]+$/.test(word)) return word;
  return `'${word.replace(/'/g, `'"'"'`)}'`;
}

/** One JSONL line: parses it and reports problems at its line, at the column of the offending key. */
class InstanceLine {
  private label: string;
  /** The instance id, once read. */
  id: string | undefined;

  constructor(
    private readonly file: string,
    readonly line: number,
    private readonly text: string,
    private readonly problems: Diagnostic[],
    where?: string,
  ) {
    this.label = `instance at ${where ?? `line ${line}`}`;
  }

  /** The line's JSON object, or undefined when it is not one (toTask reports why). */
  private object(): Record<string, unknown> | undefined {
    try {
      const v = JSON.parse(this.text) as unknown;
      return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
    } catch {
      return undefined;
    }
  }

  /** The line as one JSON object (an instance), or undefined with the problem said. */
  private instance(): Record<string, unknown> | undefined {
    let data: unknown;
    try {
      data = JSON.parse(this.text);
    } catch (e) {
      const message = errorMessage(e);
      const pos = /position (\d+)/.exec(message);
      this.problems.push({ message: `line ${this.line} is not JSON: ${message}`, location: this.at(pos ? Number(pos[1]) + 1 : 1) });
      return undefined;
    }
    if (typeof data !== 'object' || data === null || Array.isArray(data)) {
      this.problems.push({
        message: `line ${this.line}: expected a JSON object (one SWE-bench instance), got ${Array.isArray(data) ? 'an array' : typeof data}`,
        location: this.at(1),
      });
      return undefined;
    }
    return data as Record<string, unknown>;
  }

  /** The local clone the source maps `repoName` to, or undefined with the nearest name offered. */
  private localRepository(repoName: string, repos: Record<string, string>): string | undefined {
    const source = repos[repoName];
    if (source !== undefined) return source;
    const known = Object.keys(repos);
    const near = closest(repoName, known);
    this.problem(
      'repo',
      `no local repository for "${repoName}"`,
      near
        ? `did you mean "${near}"?`
        : known.length
          ? `map "${repoName}" to a local git clone; known: ${known.join(', ')}`
          : `map "${repoName}" to a local git clone of it`,
    );
    return undefined;
  }

  toTask(absFile: string, repos: Record<string, string>, options: SwebenchOptions): Task | undefined {
    const o0 = this.object();
    const repoName0 = typeof o0?.['repo'] === 'string' ? o0['repo'] : undefined;
    // The repository's own test command when the source maps one; the instance's eval_script when asked.
    const perRepo = repoName0 ? options.perRepo?.[repoName0] : undefined;
    const evalScript = options.evalScript && typeof o0?.['eval_script'] === 'string' ? o0['eval_script'] : undefined;
    const command = evalScript !== undefined ? 'bash -c "$PAIRBENCH_EVAL_SCRIPT" {tests}' : (perRepo?.testCommand ?? options.testCommand);
    // One invocation for every test: a command that takes the ids, or the repository's own (which takes its test files or modules).
    const runnerMode = /\{(tests|test_files|test_modules)\}/.test(command) || perRepo !== undefined;
    // A runner lists the ids; per-test mode has one command per id.
    const testCommand = runnerMode ? '{test}' : command;
    const parserName = typeof o0?.['log_parser'] === 'string' ? o0['log_parser'] : undefined;
    if (parserName !== undefined && !LOG_PARSERS[parserName])
      this.problem('log_parser', `log_parser "${parserName}" is not one pairbench reads (it reads: ${Object.keys(LOG_PARSERS).join(', ')})`);
    const report: ReportFormat = (parserName ? LOG_PARSERS[parserName] : undefined) ?? perRepo?.report ?? options.report ?? 'pytest-rA';
    // A report file goes where pairbench owns it, outside the workspace: the command names that place.
    if (runnerMode && REPORT_CHANNEL[report] === 'file' && !command.includes('{report}'))
      this.problem(
        'test_command',
        `a ${report} report is read from a file the runner writes to {report} (a path pairbench owns, outside the workspace, where no attempt can leave one), but the test command has no {report}`,
        report === 'junit-xml'
          ? 'e.g. python -m pytest -p no:cacheprovider --junitxml={report} {tests}'
          : 'e.g. node --test --test-reporter=tap --test-reporter-destination={report} {test_files}',
      );
    const image = typeof o0?.['image'] === 'string' ? o0['image'] : undefined;
    const o = this.instance();
    if (!o) return undefined;
    const before = this.problems.length;

    const id = this.string(o, 'instance_id');
    if (id !== undefined) {
      this.id = id;
      this.label = `instance "${id}"`;
      if (!INSTANCE_ID.test(id)) this.problem('instance_id', `instance id "${id}" must match ${INSTANCE_ID.source}`);
    }
    const repoName = this.string(o, 'repo');
    const source = repoName === undefined ? undefined : this.localRepository(repoName, repos);
    const commit = this.string(o, 'base_commit');
    if (commit !== undefined && !FULL_SHA.test(commit)) {
      this.problem(
        'base_commit',
        `base_commit "${commit}" is not a full 40-hex commit id`,
        'SWE-bench pins each instance to the exact commit its patches apply to',
      );
    }
    const prompt = this.string(o, 'problem_statement');
    const gold = this.string(o, 'patch', true);
    const testPatch = this.string(o, 'test_patch', true);
    const failToPass = this.testList(o, 'FAIL_TO_PASS', testCommand);
    // SWE-bench 4.x reads a missing or null PASS_TO_PASS as no test.
    const passToPass = o['PASS_TO_PASS'] === undefined || o['PASS_TO_PASS'] === null ? {} : this.testList(o, 'PASS_TO_PASS', testCommand);
    if (failToPass && Object.keys(failToPass).length === 0) {
      this.problem('FAIL_TO_PASS', 'lists no test', 'an instance is solved when its FAIL_TO_PASS tests pass: it needs at least one');
    }

    if (this.problems.length > before) return undefined;
    return {
      id: id!,
      family: repoName!,
      category: 'swe-bench',
      dir: dirname(absFile),
      file: absFile,
      repo: { source: source!, commit: commit! },
      prompt: prompt!,
      // Where the reference solution writes, not `**`: a write elsewhere is out of bounds.
      allowedPaths: allowedPathsOf(gold),
      allowedPathsFrom: 'the directories of the files the reference solution (patch) changes',
      verifier: {
        command: null,
        failToPass: failToPass!,
        passToPass: passToPass!,
        timeoutSec: options.timeoutSec ?? DEFAULT_TIMEOUT_SEC,
        filesDir: null,
        patch: testPatch || null,
        result: 'exit-code',
        // An instance's eval_script applies the test patch itself (after resetting the test files).
        ...(evalScript !== undefined ? { patch: null, scanOnlyPatch: testPatch || null } : {}),
        ...(runnerMode
          ? {
              runner: {
                command,
                report,
                reportFile: options.reportFile ?? null,
                testTimeoutSec: options.testTimeoutSec ?? null,
                ...(evalScript !== undefined ? { env: { PAIRBENCH_EVAL_SCRIPT: evalScript } } : {}),
              },
            }
          : {}),
      },
      solution: { patch: gold || null, script: null },
      origin: `${this.file}:${this.line}`,
      canary: null,
      ...(image ? { image } : {}),
      environmentFields: Object.fromEntries(
        ENVIRONMENT_FIELDS.flatMap((f) => (typeof o[f] === 'string' || typeof o[f] === 'number' ? [[f, String(o[f])]] : [])),
      ),
      // SWE-bench's images hold the environment for the repository at /testbed.
      workdir: '/testbed',
    };
  }

  problem(field: string, message: string, hint?: string): void {
    this.problems.push({ field, message: `${this.label}: ${message}`, location: this.atKey(field), ...(hint ? { hint } : {}) });
  }

  /** A required string; `mayBeEmpty` for patches, where "" means none. */
  private string(o: Record<string, unknown>, field: string, mayBeEmpty = false): string | undefined {
    const v = o[field];
    if (v === undefined || v === null) {
      this.problem(field, `missing required field "${field}"`);
      return undefined;
    }
    if (typeof v !== 'string') {
      this.problem(field, `got ${describe(v)}; expected a string`);
      return undefined;
    }
    if (!mayBeEmpty && !v.trim()) {
      this.problem(field, 'is empty');
      return undefined;
    }
    return v;
  }

  /** FAIL_TO_PASS / PASS_TO_PASS: a JSON-encoded list of test ids (as SWE-bench ships them) or a real array. */
  private testList(o: Record<string, unknown>, field: string, testCommand: string): Record<string, string> | undefined {
    let v = o[field];
    if (v === undefined || v === null) {
      this.problem(field, `missing required field "${field}"`);
      return undefined;
    }
    if (typeof v === 'string') {
      try {
        v = JSON.parse(v);
      } catch {
        this.problem(
          field,
          `got string ${truncate(JSON.stringify(v))}, which is not a JSON-encoded list`,
          `expected a list of test ids, e.g. "[\\"tests/test_x.py::test_y\\"]" or ["tests/test_x.py::test_y"]`,
        );
        return undefined;
      }
    }
    if (!Array.isArray(v)) {
      this.problem(field, `got ${describe(v)}; expected a list of test ids`);
      return undefined;
    }
    const commands: Record<string, string> = {};
    for (const [i, t] of v.entries()) {
      if (typeof t !== 'string' || !t) {
        this.problem(field, `item ${i} is ${describe(t)}; expected a non-empty test id string`);
        return undefined;
      }
      // In runner mode the "command" is the id itself (the runner lists every id at once).
      commands[t] = testCommand === '{test}' ? t : testCommand.replaceAll('{test}', shellQuote(t));
    }
    return commands;
  }

  private atKey(field: string): SourceLocation {
    const m = new RegExp(`"${field}"\\s*:`).exec(this.text);
    return m ? this.at(m.index + 1, field.length + 2) : this.at(1);
  }

  private at(column: number, length = 1): SourceLocation {
    return { file: this.file, line: this.line, column, length, ...(this.text.length <= MAX_EXCERPT ? { lineText: this.text } : {}) };
  }
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'object') return 'an object';
  if (typeof v === 'string') return `string ${truncate(JSON.stringify(v))}`;
  return `${typeof v} ${String(v)}`;
}

function truncate(s: string, max = 60): string {
  return s.length <= max ? s : `${s.slice(0, max - 1)}…`;
}

/**
 * Allowed paths derived from a reference patch: each directory it changes a file in,
 * recursively (`src/pkg/**`); files at the top level by name. `**` when the patch is empty.
 */
export function allowedPathsOf(patch: string | undefined): string[] {
  const files = new Set<string>();
  for (const m of (patch ?? '').matchAll(/^(?:\+\+\+ b\/|--- a\/)(.+?)\s*$/gm)) if (m[1] !== '/dev/null') files.add(m[1]!);
  if (!files.size) return ['**'];
  const out = new Set<string>();
  for (const f of files) {
    const dir = f.includes('/') ? f.slice(0, f.lastIndexOf('/')) : '';
    out.add(dir ? `${dir}/**` : f);
  }
  return [...out].sort();
}
