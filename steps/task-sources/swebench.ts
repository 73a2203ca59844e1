import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { displayPath } from '../../pipeline/config/load.js';
import { closest, type Diagnostic, type SourceLocation } from '../../pipeline/diagnostic.js';
import { err, errorMessage, ok, type Result } from '../../pipeline/result.js';
import type { Task } from '../task.js';

export interface SwebenchOptions {
  /**
   * The command that runs one test, with `{test}` where the shell-quoted test id goes,
   * e.g. `python -m pytest {test}` or `node --test --test-name-pattern={test} test/`.
   */
  testCommand: string;
}

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
  const file = resolve(jsonlFile);
  const shown = displayPath(file);
  if (!options.testCommand.includes('{test}')) {
    return err([{ field: 'testCommand', message: `test command "${options.testCommand}" has no {test} placeholder`, hint: 'e.g. python -m pytest {test}: each FAIL_TO_PASS and PASS_TO_PASS id is put in place of {test}, shell-quoted' }]);
  }
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    return err([{ message: `cannot read SWE-bench instances ${shown}: ${errorMessage(e)}` }]);
  }

  const problems: Diagnostic[] = [];
  const tasks = new Map<string, Task>();
  const firstLine = new Map<string, number>();
  text.split('\n').forEach((raw, i) => {
    const lineText = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (!lineText.trim()) return;
    const line = new InstanceLine(shown, i + 1, lineText, problems);
    const task = line.toTask(file, repos, options.testCommand);
    if (!task) return;
    const earlier = firstLine.get(task.id);
    if (earlier !== undefined) {
      line.problem('instance_id', `instance "${task.id}" is listed twice (first at line ${earlier})`);
      return;
    }
    firstLine.set(task.id, line.line);
    tasks.set(task.id, task);
  });
  return problems.length ? err(problems) : ok(tasks);
}

/** Shell-quotes a word the way Python's shlex.quote does: unchanged when safe, else in single quotes. */
export function shellQuote(word: string): string {
  if (word && /^[\w@%+=:,./-]+$/.test(word)) return word;
  return `'${word.replace(/'/g, `'"'"'`)}'`;
}

/** One JSONL line: parses it and reports problems at its line, at the column of the offending key. */
class InstanceLine {
  private label: string;

  constructor(
    private readonly file: string,
    readonly line: number,
    private readonly text: string,
    private readonly problems: Diagnostic[],
  ) {
    this.label = `instance at line ${line}`;
  }

  toTask(absFile: string, repos: Record<string, string>, testCommand: string): Task | undefined {
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
      this.problems.push({ message: `line ${this.line}: expected a JSON object (one SWE-bench instance), got ${Array.isArray(data) ? 'an array' : typeof data}`, location: this.at(1) });
      return undefined;
    }
    const o = data as Record<string, unknown>;
    const before = this.problems.length;

    const id = this.string(o, 'instance_id');
    if (id !== undefined) {
      this.label = `instance "${id}"`;
      if (!INSTANCE_ID.test(id)) this.problem('instance_id', `instance id "${id}" must match ${INSTANCE_ID.source}`);
    }
    const repoName = this.string(o, 'repo');
    let source: string | undefined;
    if (repoName !== undefined) {
      source = repos[repoName];
      if (source === undefined) {
        const known = Object.keys(repos);
        const near = closest(repoName, known);
        this.problem(
          'repo',
          `no local repository for "${repoName}"`,
          near ? `did you mean "${near}"?` : known.length ? `map "${repoName}" to a local git clone; known: ${known.join(', ')}` : `map "${repoName}" to a local git clone of it`,
        );
      }
    }
    const commit = this.string(o, 'base_commit');
    if (commit !== undefined && !FULL_SHA.test(commit)) {
      this.problem('base_commit', `base_commit "${commit}" is not a full 40-hex commit id`, 'SWE-bench pins each instance to the exact commit its patches apply to');
    }
    const prompt = this.string(o, 'problem_statement');
    const gold = this.string(o, 'patch', true);
    const testPatch = this.string(o, 'test_patch', true);
    const failToPass = this.testList(o, 'FAIL_TO_PASS', testCommand);
    const passToPass = this.testList(o, 'PASS_TO_PASS', testCommand);
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
        timeoutSec: 600,
        filesDir: null,
        patch: testPatch || null,
        result: 'exit-code',
      },
      solution: { patch: gold || null, script: null },
      origin: `${this.file}:${this.line}`,
      canary: null,
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
        this.problem(field, `got string ${truncate(JSON.stringify(v))}, which is not a JSON-encoded list`, `expected a list of test ids, e.g. "[\\"tests/test_x.py::test_y\\"]" or ["tests/test_x.py::test_y"]`);
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
      commands[t] = testCommand.replaceAll('{test}', shellQuote(t));
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
