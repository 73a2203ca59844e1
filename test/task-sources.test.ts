import { mkdirSync, mkdtempSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { formatDiagnostic, type Diagnostic } from '../pipeline/diagnostic.js';
import type { Result } from '../pipeline/result.js';
import { loadHarborTask } from '../steps/task-sources/harbor.js';
import { loadSwebenchInstances, shellQuote } from '../steps/task-sources/swebench.js';
import { makeRepo } from './fixtures.js';

let tmp: string;
beforeEach(() => (tmp = mkdtempSync(join(tmpdir(), 'pairbench-task-sources-'))));
afterEach(() => rmSync(tmp, { recursive: true, force: true }));

function write(path: string, content: string): string {
  const p = join(tmp, path);
  mkdirSync(dirname(p), { recursive: true });
  writeFileSync(p, content);
  return p;
}

function errors<T>(r: Result<T, Diagnostic[]>): string[] {
  if (r.ok) throw new Error('expected errors, got a value');
  return r.error.map(formatDiagnostic);
}

const TASK_TOML = `version = "1.0"

[metadata]
author_name = "Fixture"
difficulty = "easy"
category = "file-operations"
tags = ["bash", "files"]
canary = "pairbench-canary 3f1c2a"

[verifier]
timeout_sec = 120.0

[agent]
timeout_sec = 300.0

[environment]
build_timeout_sec = 600.0
docker_image = "ubuntu:24.04"
cpus = 1
memory_mb = 2048
storage_mb = 10240
allow_internet = false

[[environment.mcp_servers]]
name = "files"
transport = "stdio"
command = "mcp-files"
`;

const TEST_SH = `#!/bin/bash
if [ "$(cat /app/hello.txt)" = "Hello, world!" ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
`;

/** A Harbor dataset as a real git repository: tasks/hello/{instruction.md, task.toml, environment/, tests/, solution/}. */
function harborDataset(files: Record<string, string> = {}): { repo: string; commit: string; taskDir: string } {
  const repo = join(tmp, 'dataset');
  const [commit] = makeRepo(repo, [
    {
      'tasks/hello/instruction.md': 'Create /app/hello.txt containing "Hello, world!".\n',
      'tasks/hello/task.toml': TASK_TOML,
      'tasks/hello/environment/Dockerfile': 'FROM ubuntu:24.04\nWORKDIR /app\n',
      'tasks/hello/environment/README.md': 'starting workspace\n',
      'tasks/hello/tests/test.sh': TEST_SH,
      'tasks/hello/solution/solve.sh': '#!/bin/bash\necho "Hello, world!" > /app/hello.txt\n',
      ...files,
    },
  ]);
  return { repo, commit: commit!, taskDir: join(repo, 'tasks', 'hello') };
}

describe('Harbor task directories', () => {
  it('maps instruction.md, task.toml, tests/ and solution/ onto a Task', () => {
    const { repo, commit, taskDir } = harborDataset();
    const r = loadHarborTask(taskDir, 'hello', { source: repo, commit, subdir: 'tasks/hello/environment' });
    if (!r.ok) throw new Error(r.error.map(formatDiagnostic).join('\n'));
    expect(commit).toMatch(/^[0-9a-f]{40}$/);
    expect(r.value).toEqual({
      id: 'hello',
      family: 'file-operations',
      category: 'file-operations',
      dir: taskDir,
      file: join(taskDir, 'task.toml'),
      repo: { source: repo, commit, subdir: 'tasks/hello/environment' },
      prompt: 'Create /app/hello.txt containing "Hello, world!".\n',
      allowedPaths: ['**'],
      allowedPathsFrom: expect.stringContaining('the whole workspace'),
      verifier: {
        command: 'bash "$VERIFIER_DIR/test.sh"',
        failToPass: {},
        passToPass: {},
        timeoutSec: 120,
        filesDir: join(taskDir, 'tests'),
        patch: null,
        result: 'reward-file',
      },
      solution: { patch: null, script: join(taskDir, 'solution', 'solve.sh') },
      // task.toml's [agent], [verifier] and [environment] settings carry over.
      environment: {
        dockerfile: 'Dockerfile',
        allowInternet: false,
        network: 'no-network',
        allowedHosts: [],
        verifierNetwork: null,
        verifierAllowedHosts: [],
        verifierUser: null,
        buildTimeoutSec: 600,
        agentTimeoutSec: 300,
        cpus: 1,
        memoryMb: 2048,
        verifierEnv: {},
        // Fields Harbor defines that pairbench does not carry out are listed with why.
        ignored: [
          { field: 'environment.docker_image', reason: expect.stringContaining('built from environment/Dockerfile') },
          { field: 'environment.storage_mb', reason: expect.stringContaining('disk quotas') },
          { field: 'environment.mcp_servers', reason: expect.stringContaining("cohort's arms") },
        ],
      },
      origin: join(taskDir, 'task.toml'),
      canary: 'pairbench-canary 3f1c2a',
    });
  });

  it('defaults: no category, timeout or canary, no solution; unknown keys are not errors', () => {
    const { repo, commit, taskDir } = harborDataset({ 'tasks/hello/task.toml': '[task]\nname = "hello"\n[future]\nknob = 3\n' });
    unlinkSync(join(taskDir, 'solution', 'solve.sh'));
    const r = loadHarborTask(taskDir, 'hello', { source: repo, commit, subdir: 'tasks/hello/environment' });
    if (!r.ok) throw new Error(r.error.map(formatDiagnostic).join('\n'));
    expect(r.value.family).toBe('hello');
    expect(r.value.category).toBe('uncategorized');
    expect(r.value.verifier.timeoutSec).toBe(600);
    expect(r.value.canary).toBeNull();
    expect(r.value.solution).toEqual({ patch: null, script: null });
  });

  it('missing instruction.md and tests/test.sh name the task and the file', () => {
    const { repo, commit, taskDir } = harborDataset();
    unlinkSync(join(taskDir, 'instruction.md'));
    unlinkSync(join(taskDir, 'tests', 'test.sh'));
    const e = errors(loadHarborTask(taskDir, 'hello', { source: repo, commit, subdir: 'tasks/hello/environment' }));
    expect(e).toEqual([
      `error: instruction.md: Harbor task "hello": missing instruction.md (looked for ${join(taskDir, 'instruction.md')})\n  hint: instruction.md is the prompt the agent is given`,
      `error: tests/test.sh: Harbor task "hello": missing tests/test.sh (looked for ${join(taskDir, 'tests', 'test.sh')})\n  hint: tests/test.sh is the verifier: it writes /logs/verifier/reward.txt (one float) or reward.json`,
    ]);
  });

  it('a field we read with the wrong type is an error at its line, naming file, task and field', () => {
    const toml = TASK_TOML.replace('timeout_sec = 120.0', 'timeout_sec = "120"').replace('category = "file-operations"', 'category = ["a"]');
    const { repo, commit, taskDir } = harborDataset({ 'tasks/hello/task.toml': toml });
    const file = join(taskDir, 'task.toml');
    const e = errors(loadHarborTask(taskDir, 'hello', { source: repo, commit, subdir: 'tasks/hello/environment' }));
    expect(e).toEqual([
      `${file}:6:1: error: metadata.category: Harbor task "hello": got an array; expected a non-empty string\n  6 | category = ["a"]\n    | ^^^^^^^^`,
      `${file}:11:1: error: verifier.timeout_sec: Harbor task "hello": got string "120"; expected a positive number of seconds\n  11 | timeout_sec = "120"\n     | ^^^^^^^^^^^`,
    ]);
  });

  it('a table that is not a table, and a key in an inline table, are located too', () => {
    const { repo, commit, taskDir } = harborDataset({ 'tasks/hello/task.toml': 'metadata = "x"\nverifier = { timeout_sec = -1 }\n' });
    const file = join(taskDir, 'task.toml');
    const e = errors(loadHarborTask(taskDir, 'hello', { source: repo, commit, subdir: 'tasks/hello/environment' }));
    expect(e[0]).toContain(`${file}:1:1: error: metadata: Harbor task "hello": got string "x"; expected a table`);
    expect(e[1]).toContain(`${file}:2:1: error: verifier.timeout_sec: Harbor task "hello": got number -1; expected a positive number of seconds`);
  });

  it('invalid TOML is reported at its line and column', () => {
    const { repo, commit, taskDir } = harborDataset({ 'tasks/hello/task.toml': '[verifier]\ntimeout_sec = 120\ntimeout_sec = 60\n' });
    const e = errors(loadHarborTask(taskDir, 'hello', { source: repo, commit, subdir: 'tasks/hello/environment' }));
    expect(e).toHaveLength(1);
    expect(e[0]).toMatch(new RegExp(`^${join(taskDir, 'task.toml')}:3:1: error: Harbor task "hello": invalid TOML: .*redefine`));
  });

  it('a short commit and an escaping subdir are errors', () => {
    const { repo, taskDir } = harborDataset();
    const e = errors(loadHarborTask(taskDir, 'hello', { source: repo, commit: 'abc123', subdir: '../elsewhere' }));
    expect(e[0]).toContain('error: repo.commit: Harbor task "hello": commit "abc123" of');
    expect(e[1]).toContain('error: repo.subdir: Harbor task "hello": subdir "../elsewhere" must be a relative path inside');
  });
});

const GOLD = `diff --git a/src/add.py b/src/add.py
--- a/src/add.py
+++ b/src/add.py
@@ -1,2 +1,2 @@
 def add(a, b):
-    return a - b
+    return a + b
`;

const TEST_PATCH = `diff --git a/tests/test_add.py b/tests/test_add.py
new file mode 100644
--- /dev/null
+++ b/tests/test_add.py
@@ -0,0 +1,4 @@
+from src.add import add
+
+def test_add():
+    assert add(2, 3) == 5
`;

function instance(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    repo: 'acme/calc',
    instance_id: 'acme__calc-1',
    base_commit: '0'.repeat(40),
    patch: GOLD,
    test_patch: TEST_PATCH,
    problem_statement: 'add(2, 3) returns -1.\n',
    hints_text: '',
    created_at: '2024-01-01T00:00:00Z',
    version: '1.0',
    FAIL_TO_PASS: JSON.stringify(['tests/test_add.py::test_add']),
    PASS_TO_PASS: JSON.stringify(['tests/test_mod.py::test_imports', "tests/test_mod.py::test_name[it's]"]),
    environment_setup_commit: '0'.repeat(40),
    ...overrides,
  };
}

function jsonl(...lines: (Record<string, unknown> | string)[]): string {
  return write('swe.jsonl', lines.map((l) => (typeof l === 'string' ? l : JSON.stringify(l))).join('\n') + '\n');
}

describe('SWE-bench instances (JSONL)', () => {
  const pytest = { testCommand: 'python -m pytest {test}' };

  it('maps each instance onto a Task, patches as text, test ids as commands', () => {
    const calc = join(tmp, 'calc');
    const [commit] = makeRepo(calc, [{ 'src/add.py': 'def add(a, b):\n    return a - b\n', 'src/__init__.py': '' }]);
    const file = jsonl(
      instance({ base_commit: commit }),
      '',
      '   ',
      instance({
        instance_id: 'acme__calc-2',
        base_commit: commit,
        FAIL_TO_PASS: ['tests/test_add.py::test_add', 'test_sub (tests.SubTests)'],
        PASS_TO_PASS: [],
      }),
    );
    const r = loadSwebenchInstances(file, { 'acme/calc': calc }, pytest);
    if (!r.ok) throw new Error(r.error.map(formatDiagnostic).join('\n'));
    expect([...r.value.keys()]).toEqual(['acme__calc-1', 'acme__calc-2']);
    expect(r.value.get('acme__calc-1')).toEqual({
      id: 'acme__calc-1',
      family: 'acme/calc',
      category: 'swe-bench',
      dir: tmp,
      file,
      repo: { source: calc, commit },
      prompt: 'add(2, 3) returns -1.\n',
      // Derived from the reference patch, not `**`: it writes src/add.py.
      allowedPaths: ['src/**'],
      allowedPathsFrom: 'the directories of the files the reference solution (patch) changes',
      verifier: {
        command: null,
        failToPass: { 'tests/test_add.py::test_add': 'python -m pytest tests/test_add.py::test_add' },
        passToPass: {
          'tests/test_mod.py::test_imports': 'python -m pytest tests/test_mod.py::test_imports',
          "tests/test_mod.py::test_name[it's]": `python -m pytest 'tests/test_mod.py::test_name[it'"'"'s]'`,
        },
        timeoutSec: 1800,
        filesDir: null,
        patch: TEST_PATCH,
        result: 'exit-code',
      },
      solution: { patch: GOLD, script: null },
      origin: `${file}:1`,
      canary: null,
      workdir: '/testbed',
      // What an environment's Dockerfile template may use: never the patches or the tests.
      environmentFields: { repo: 'acme/calc', version: '1.0', environment_setup_commit: '0'.repeat(40), base_commit: commit, instance_id: 'acme__calc-1' },
    });
    const second = r.value.get('acme__calc-2')!;
    expect(second.origin).toBe(`${file}:4`);
    expect(second.verifier.failToPass).toEqual({
      'tests/test_add.py::test_add': 'python -m pytest tests/test_add.py::test_add',
      'test_sub (tests.SubTests)': "python -m pytest 'test_sub (tests.SubTests)'",
    });
    expect(second.verifier.passToPass).toEqual({});
  });

  it('the template puts the quoted id wherever {test} is', () => {
    const file = jsonl(instance({ FAIL_TO_PASS: '["add works"]', PASS_TO_PASS: '[]' }));
    const r = loadSwebenchInstances(file, { 'acme/calc': '/repos/calc' }, { testCommand: 'node --test --test-name-pattern={test} test/' });
    if (!r.ok) throw new Error(r.error.map(formatDiagnostic).join('\n'));
    expect(r.value.get('acme__calc-1')!.verifier.failToPass).toEqual({ 'add works': "node --test --test-name-pattern='add works' test/" });
    expect(shellQuote('')).toBe("''");
    expect(shellQuote('a;rm -rf /')).toBe("'a;rm -rf /'");
  });

  it('a base_commit that is not full 40-hex names file, line, instance and field', () => {
    const file = jsonl(instance(), instance({ instance_id: 'acme__calc-2', base_commit: 'abc123' }));
    const e = errors(loadSwebenchInstances(file, { 'acme/calc': '/repos/calc' }, pytest));
    expect(e).toHaveLength(1);
    expect(e[0]).toMatch(
      new RegExp(`^${file}:2:\\d+: error: base_commit: instance "acme__calc-2": base_commit "abc123" is not a full 40-hex commit id\\n  hint: `),
    );
  });

  it('FAIL_TO_PASS that is not a list', () => {
    const file = jsonl(
      instance({ FAIL_TO_PASS: 'tests/test_add.py::test_add' }),
      instance({ instance_id: 'acme__calc-2', FAIL_TO_PASS: { test: 'x' } }),
      instance({ instance_id: 'acme__calc-3', FAIL_TO_PASS: '[]' }),
    );
    const e = errors(loadSwebenchInstances(file, { 'acme/calc': '/repos/calc' }, pytest));
    expect(e).toHaveLength(3);
    expect(e[0]).toMatch(
      new RegExp(`^${file}:1:\\d+: error: FAIL_TO_PASS: instance "acme__calc-1": got string "tests/test_add.py::test_add", which is not a JSON-encoded list`),
    );
    expect(e[1]).toMatch(new RegExp(`^${file}:2:\\d+: error: FAIL_TO_PASS: instance "acme__calc-2": got an object; expected a list of test ids`));
    expect(e[2]).toMatch(new RegExp(`^${file}:3:\\d+: error: FAIL_TO_PASS: instance "acme__calc-3": lists no test`));
  });

  it('an unknown repo names the instance and field `repo`, with a hint', () => {
    const file = jsonl(instance({ repo: 'acme/calk' }), instance({ instance_id: 'other__x-1', repo: 'other/x' }));
    const e = errors(loadSwebenchInstances(file, { 'acme/calc': '/repos/calc' }, pytest));
    expect(e).toHaveLength(2);
    expect(e[0]).toMatch(
      new RegExp(`^${file}:1:\\d+: error: repo: instance "acme__calc-1": no local repository for "acme/calk"\\n  hint: did you mean "acme/calc"\\?`),
    );
    expect(e[1]).toMatch(
      new RegExp(
        `^${file}:2:\\d+: error: repo: instance "other__x-1": no local repository for "other/x"\\n  hint: map "other/x" to a local git clone; known: acme/calc`,
      ),
    );
  });

  it('the column points at the offending key', () => {
    const file = jsonl({
      instance_id: 'a-1',
      repo: 'acme/calc',
      base_commit: 'HEAD',
      problem_statement: 'p',
      patch: '',
      test_patch: '',
      FAIL_TO_PASS: ['t'],
      PASS_TO_PASS: [],
    });
    const e = errors(loadSwebenchInstances(file, { 'acme/calc': '/repos/calc' }, pytest));
    const line =
      '{"instance_id":"a-1","repo":"acme/calc","base_commit":"HEAD","problem_statement":"p","patch":"","test_patch":"","FAIL_TO_PASS":["t"],"PASS_TO_PASS":[]}';
    const column = line.indexOf('"base_commit"') + 1;
    expect(e[0]).toContain(`${file}:1:${column}: error: base_commit: instance "a-1"`);
    expect(e[0]).toContain(`\n  1 | ${line}\n    | ${' '.repeat(column - 1)}${'^'.repeat('"base_commit"'.length)}`);
  });

  it('a malformed JSON line is an error with its line number; others are still checked', () => {
    const file = jsonl(instance(), '{"instance_id": "broken", ', instance({ instance_id: 'acme__calc-2', problem_statement: 42 }), instance());
    const e = errors(loadSwebenchInstances(file, { 'acme/calc': '/repos/calc' }, pytest));
    expect(e).toHaveLength(3);
    expect(e[0]).toMatch(new RegExp(`^${file}:2:\\d+: error: line 2 is not JSON: `));
    expect(e[1]).toMatch(new RegExp(`^${file}:3:\\d+: error: problem_statement: instance "acme__calc-2": got number 42; expected a string`));
    expect(e[2]).toMatch(
      new RegExp(`^${file}:4:\\d+: error: instance_id: instance "acme__calc-1": instance "acme__calc-1" is listed twice \\(first at line 1\\)`),
    );
  });

  it('missing fields and a bad instance id', () => {
    const file = jsonl({ repo: 'acme/calc' }, instance({ instance_id: '../etc' }), '[1, 2]');
    const e = errors(loadSwebenchInstances(file, { 'acme/calc': '/repos/calc' }, pytest));
    expect(e[0]).toMatch(new RegExp(`^${file}:1:1: error: instance_id: instance at line 1: missing required field "instance_id"`));
    expect(e.filter((m) => m.startsWith(`${file}:1:`)).map((m) => /error: (\S+):/.exec(m)![1])).toEqual([
      'instance_id',
      'base_commit',
      'problem_statement',
      'patch',
      'test_patch',
      'FAIL_TO_PASS',
    ]);
    expect(e.find((m) => m.startsWith(`${file}:2:`))).toContain('error: instance_id: instance "../etc": instance id "../etc" must match');
    expect(e.at(-1)).toMatch(new RegExp(`^${file}:3:1: error: line 3: expected a JSON object \\(one SWE-bench instance\\), got an array`));
  });

  it('a JSON array (as SWE-bench publishes its datasets) is read too; a problem names the item and its line; {tests} makes one runner', () => {
    const file = write('swe.json', JSON.stringify([instance(), instance({ instance_id: 'acme__calc-2', base_commit: 'abc' })], null, 2) + '\n');
    const e = errors(loadSwebenchInstances(file, { 'acme/calc': '/repos/calc' }, pytest));
    const line =
      readFileSync(file, 'utf8')
        .split('\n')
        .findIndex((l) => l.includes('"acme__calc-2"')) + 1;
    expect(e).toHaveLength(1);
    expect(e[0]).toContain('instance "acme__calc-2": base_commit "abc" is not a full 40-hex commit id');
    // The item's line: the opening brace of the second object, a few lines above its id.
    expect(Number(/swe\.json:(\d+):/.exec(e[0]!)?.[1])).toBeGreaterThan(1);
    expect(Number(/swe\.json:(\d+):/.exec(e[0]!)?.[1])).toBeLessThanOrEqual(line);
    const ok = write('swe2.json', JSON.stringify([instance()]));
    const r = loadSwebenchInstances(ok, { 'acme/calc': '/repos/calc' }, { testCommand: 'python -m pytest -rA {tests}', testTimeoutSec: 30 });
    if (!r.ok) throw new Error(r.error.map(formatDiagnostic).join('\n'));
    const v = r.value.get('acme__calc-1')!.verifier;
    expect(v.runner).toEqual({ command: 'python -m pytest -rA {tests}', report: 'pytest-rA', reportFile: null, testTimeoutSec: 30 });
    expect(Object.keys(v.failToPass)).toEqual(Object.values(v.failToPass));
  });

  it('a test command without {test} is refused', () => {
    const file = jsonl(instance());
    const e = errors(loadSwebenchInstances(file, { 'acme/calc': '/repos/calc' }, { testCommand: 'pytest' }));
    expect(e[0]).toContain('error: test_command: test command "pytest" has no {tests} (or {test}) placeholder');
  });
});
