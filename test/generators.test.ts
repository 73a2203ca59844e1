import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import {
  findJsFunctions,
  findPythonFunctions,
  applyStub,
  generateRevertTasks,
  generateStubFunctionTasks,
  seededOrder,
  type GenerateReport,
  type StubTaskReport,
} from '../generators/index.js';
import pLimit from 'p-limit';
import { discriminationFailure } from '../generators/discrimination.js';
import type { LanguageAdapter, RunnerContext } from '../generators/language-adapter.js';
import { adapterFor, defaultTestCommand, parseMochaJson } from '../generators/test-suite.js';
import { parseReport, type ReportFormat } from '../test-results/index.js';
import { parseJestJson } from '../test-results/jest-json.js';
import type { TestResult } from '../generators/types.js';
import { packageRoot } from '../pipeline/package-root.js';
import { loadTask } from '../steps/task.js';
import { makeRepo } from './fixtures.js';
import { tapTests } from '../test-results/tap.js';
import { pytestLines } from '../test-results/pytest.js';

const NODE_TEST = 'node --test --test-reporter=tap';
const ROOT = mkdtempSync(join(tmpdir(), 'pairbench-generators-'));
afterAll(() => rmSync(ROOT, { recursive: true, force: true }));

function sh(cwd: string, command: string): number {
  const r = spawnSync('sh', ['-c', command], {
    cwd,
    env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', HOME: process.env['HOME'] ?? '/tmp' },
    encoding: 'utf8',
  });
  return r.status ?? -1;
}

function checkout(repo: string, commit: string, dest: string): void {
  mkdirSync(dest, { recursive: true });
  execFileSync('sh', ['-c', `git -C '${repo}' archive ${commit} | tar -x -C '${dest}'`]);
}

function gitApply(tree: string, patchFile: string): void {
  execFileSync('git', ['apply', patchFile], { cwd: tree, env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', GIT_CEILING_DIRECTORIES: dirname(tree) } });
}

function filesUnder(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (rel: string) => {
    for (const e of readdirSync(join(dir, rel), { withFileTypes: true })) {
      const p = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) walk(p);
      else out[p] = readFileSync(join(dir, p), 'utf8');
    }
  };
  walk('');
  return out;
}

/**
 * A task dir is valid when task.yaml parses, holds what the schema expects (and loads through
 * the real loader), and its patches discriminate: setup.patch makes every fail_to_pass command
 * fail, solution.patch on top makes them pass, pass_to_pass pass on both.
 */
function assertTaskDiscriminates(outDir: string, id: string, repo: string, label: string): Record<string, any> {
  const dir = join(outDir, id);
  const text = readFileSync(join(dir, 'task.yaml'), 'utf8');
  const first = text.split('\n')[0]!;
  expect(first).toMatch(/^# yaml-language-server: \$schema=/);
  expect(resolve(dir, first.split('$schema=')[1]!)).toBe(join(packageRoot(), 'schemas', 'task.schema.json'));
  const data = parse(text) as Record<string, any>;
  expect(Object.keys(data)).toEqual(['id', 'family', 'category', 'repo', 'prompt', 'allowed_paths', 'verifier', 'solution']);
  expect(data['id']).toBe(id);
  expect(resolve(dir, data['repo'].path)).toBe(repo);
  expect(data['repo'].setup_patch).toBe('setup.patch');
  expect(data['solution']).toEqual({ patch: 'solution.patch' });
  const loaded = loadTask(outDir, id);
  if (!loaded.ok) throw new Error(loaded.error.map((d) => d.message).join('\n'));
  expect(loaded.value.category).toBe(label);

  const tree = join(ROOT, 'check', `${id}-${Math.random().toString(16).slice(2)}`);
  checkout(repo, data['repo'].commit, tree);
  const f2p = Object.entries(data['verifier'].fail_to_pass as Record<string, string>);
  const p2p = Object.entries((data['verifier'].pass_to_pass ?? {}) as Record<string, string>);
  expect(f2p.length).toBeGreaterThan(0);
  // A runner read from its report (verifier.runner): each test's status is the report's, not the exit code's.
  const runner = data['verifier'].runner as { report: ReportFormat } | undefined;
  const passes = (name: string, cmd: string) => (runner ? reportSays(tree, cmd, runner.report, name) : sh(tree, cmd) === 0);
  for (const [name, cmd] of [...f2p, ...p2p]) expect(passes(name, cmd), `${id}: ${name} passes on the commit`).toBe(true);
  gitApply(tree, join(dir, 'setup.patch'));
  for (const [name, cmd] of f2p) expect(passes(name, cmd), `${id}: ${name} fails on the starting tree`).toBe(false);
  for (const [name, cmd] of p2p) expect(passes(name, cmd), `${id}: ${name} passes on the starting tree`).toBe(true);
  gitApply(tree, join(dir, 'solution.patch'));
  for (const [name, cmd] of [...f2p, ...p2p]) expect(passes(name, cmd), `${id}: ${name} passes with the solution`).toBe(true);
  return data;
}

/** Runs a runner's command with its report at a fresh path; whether the report says `test` passed. */
function reportSays(tree: string, cmd: string, format: ReportFormat, test: string): boolean {
  const report = join(mkdtempSync(join(tmpdir(), 'report-')), 'report');
  sh(tree, cmd.replaceAll('{report}', report));
  const read = parseReport(format, readFileSync(report, 'utf8'), tree);
  if (!read.ok) throw new Error(read.error);
  return read.value.get(test) === 'PASSED';
}

describe('parsers and scanners', () => {
  it('reads node:test TAP: nested names, suites, t.test subtests, skips, escapes', () => {
    const tap = [
      'TAP version 13',
      '# Subtest: group',
      '    # Subtest: inner \\# one',
      '    ok 1 - inner \\# one',
      '      ---',
      '      duration_ms: 0.2',
      '      ...',
      '    1..1',
      'ok 1 - group',
      '  ---',
      "  type: 'suite'",
      '  ...',
      '# Subtest: parent',
      '    not ok 1 - child',
      '      ---',
      "      failureType: 'testCodeFailure'",
      '      ...',
      '    ok 2 - other # SKIP test name does not match pattern',
      'not ok 2 - parent',
      '  ---',
      "  failureType: 'subtestsFailed'",
      '  ...',
      'ok 3 - plain',
      '1..3',
    ].join('\n');
    expect(tapTests(tap)).toEqual([
      { path: ['group', 'inner # one'], selectors: ['inner # one'], status: 'pass' },
      { path: ['parent', 'child'], selectors: ['parent', 'child'], status: 'fail' },
      { path: ['parent', 'other'], selectors: ['parent', 'other'], status: 'skip' },
      { path: ['plain'], selectors: ['plain'], status: 'pass' },
    ]);
  });

  it('reads the pytest -rA summary only', () => {
    const out = [
      'PASSED fake line from captured output',
      '=========================== short test summary info ============================',
      'PASSED tests/test_m.py::test_add',
      'FAILED tests/test_m.py::test_mul - assert 6 == 5',
      'PASSED tests/test_m.py::test_td',
      'ERROR tests/test_m.py::test_td - RuntimeError: teardown',
      'SKIPPED [1] tests/test_m.py:9: nope',
      '3 passed, 1 failed in 0.02s',
    ].join('\n');
    expect(pytestLines(out).map((l) => ({ id: l.id, status: l.status }))).toEqual([
      { id: 'tests/test_m.py::test_add', status: 'PASSED' },
      { id: 'tests/test_m.py::test_mul', status: 'FAILED' },
      { id: 'tests/test_m.py::test_td', status: 'PASSED' },
      { id: 'tests/test_m.py::test_td', status: 'ERROR' },
    ]);
  });

  it('finds exported JS/TS functions past strings, templates, regexes and comments', () => {
    const src = [
      '/** doc */',
      'export function a(x: number): Promise<{ v: number }> {',
      '  const s = "}" + \'{\' + `${"}"}` + /[}{]/.source; // }',
      '  return Promise.resolve({ v: x });',
      '}',
      'function inner() { return 1; }',
      'export const b = async (x) => { return { x }; };',
      'export const c = x => x + 1;',
      'export const d = (x: number): number => x * 2',
      "export const e = (s) => s.toUpperCase() + '!';",
      "export const f = () => 'a' + `b${1}`",
      'export const notAFunction = (1 + 2);',
      'export function over(x: string): string;',
      'export function over(x: any): any { return x; }',
      'const t = `export function fake() {}`;',
      'export default function named() {',
      '  if (1) { return 2; }',
      '}',
    ].join('\n');
    const found = findJsFunctions(src);
    expect(found.map((f) => f.name)).toEqual(['a', 'b', 'c', 'd', 'e', 'f', 'over', 'named']);
    const stubbed = found.reduceRight((text, f) => applyStub(text, f), src);
    expect(stubbed).toContain("/** doc */\nexport function a(x: number): Promise<{ v: number }> { throw new Error('not implemented'); }\nfunction inner()");
    expect(stubbed).toContain("export const c = x => { throw new Error('not implemented'); };");
    expect(stubbed).toContain("export const d = (x: number): number => { throw new Error('not implemented'); }\nexport const e");
    expect(stubbed).toContain(
      "export const e = (s) => { throw new Error('not implemented'); };\nexport const f = () => { throw new Error('not implemented'); }\nexport const notAFunction",
    );
    expect(stubbed).toContain("export function over(x: string): string;\nexport function over(x: any): any { throw new Error('not implemented'); }");
    expect(stubbed).toContain('const t = `export function fake() {}`;');
  });

  it('finds CommonJS exports, parsed (not lexed): module.exports = function, an object of methods and names, exports.x', () => {
    const src = [
      "'use strict';",
      'function merge(a, b) { return Object.assign({}, a, b); }',
      'const clone = (o) => JSON.parse(JSON.stringify(o));',
      'function internal() { return "}"; }',
      'module.exports = {',
      '  merge,',
      '  clone: clone,',
      '  keys(o) { return Object.keys(o); },',
      '  values: function (o) { return Object.values(o); },',
      '  version: "1.0.0",',
      '};',
      'exports.isObject = (x) => x !== null && typeof x === "object";',
      'module.exports.size = function size(o) { return Object.keys(o).length; };',
    ].join('\n');
    const found = findJsFunctions(src, 'lib/index.js');
    expect(found.map((f) => f.name)).toEqual(['merge', 'clone', 'keys', 'values', 'isObject', 'size']);
    const stubbed = found.reduceRight((text, f) => applyStub(text, f), src);
    expect(stubbed).toContain("function merge(a, b) { throw new Error('not implemented'); }");
    expect(stubbed).toContain("const clone = (o) => { throw new Error('not implemented'); };");
    expect(stubbed).toContain('function internal() { return "}"; }');
    expect(stubbed).toContain("exports.isObject = (x) => { throw new Error('not implemented'); };");
    // module.exports = function name () {}: the whole module is one function.
    expect(findJsFunctions('module.exports = function parse(s) { return s.split(","); };\n', 'index.js').map((f) => f.name)).toEqual(['parse']);
    expect(findJsFunctions('module.exports = (s) => s.trim();\n', 'index.js').map((f) => f.name)).toEqual(['module.exports']);
  });

  it("the repository's own test command: tape, node --test, mocha and jest recognised; anything else refused with what to do", () => {
    const pkg = (test: string) => JSON.stringify({ scripts: { test } });
    expect(defaultTestCommand('js', pkg('tape test/*.js'))).toEqual({ ok: true, value: { command: 'tape test/*.js', runner: 'tape' } });
    expect(defaultTestCommand('js', pkg('node --test test/'))).toEqual({
      ok: true,
      value: { command: 'node --test --test-reporter=tap', runner: 'node-test' },
    });
    expect(defaultTestCommand('js', pkg('mocha --recursive'))).toEqual({ ok: true, value: { command: 'mocha --recursive', runner: 'mocha' } });
    expect(defaultTestCommand('js', pkg('jest'))).toEqual({ ok: true, value: { command: 'jest', runner: 'jest' } });
    expect(defaultTestCommand('python', null)).toMatchObject({ ok: true, value: { runner: 'pytest' } });
    const refused = defaultTestCommand('js', pkg('ava'));
    expect(refused.ok ? '' : refused.error).toMatch(/^runner output not understood: package.json's test script is "ava"; give --test-command/);
  });

  it("mocha's JSON output and jest's (and vitest's) JSON report: ids are file (relative) and full title, a repeated title by its ordinal", () => {
    const mocha = JSON.stringify({
      stats: { passes: 2, failures: 1, pending: 1 },
      tests: [
        { title: 'adds', fullTitle: 'calc adds', file: '/tmp/tree/test/calc.js', err: {} },
        { title: 'adds', fullTitle: 'calc adds', file: '/tmp/tree/test/calc.js', err: {} },
        { title: 'subtracts', fullTitle: 'calc subtracts', file: '/tmp/tree/test/calc.js', err: { message: 'expected 1 to equal 2' } },
        { title: 'later', fullTitle: 'calc later', file: '/tmp/tree/test/calc.js', err: {} },
      ],
      pending: [{ fullTitle: 'calc later' }],
    });
    const m = parseMochaJson(`> calc@1.0.0 test\n${mocha}`, '/tmp/tree');
    expect(m.ok && Object.fromEntries([...m.value].map(([id, t]) => [id, t.status]))).toEqual({
      'test/calc.js::calc adds': 'pass',
      'test/calc.js::calc adds #2': 'pass',
      'test/calc.js::calc subtracts': 'fail',
      'test/calc.js::calc later': 'skip',
    });
    const jest = JSON.stringify({
      numPassedTests: 2,
      numFailedTests: 1,
      testResults: [
        {
          name: '/tmp/tree/src/calc.test.ts',
          assertionResults: [
            { ancestorTitles: ['calc'], title: 'adds', fullName: 'calc adds', status: 'passed' },
            { ancestorTitles: ['calc'], title: 'adds', fullName: 'calc adds', status: 'passed' },
            { ancestorTitles: ['calc', 'minus'], title: 'subtracts', fullName: 'calc minus subtracts', status: 'failed' },
            { ancestorTitles: [], title: 'todo', fullName: 'todo', status: 'todo' },
          ],
        },
        // A file that failed to load names no test: its tests are unreported (failing), never passed.
        { name: '/tmp/tree/src/broken.test.ts', status: 'failed', assertionResults: [] },
      ],
    });
    const j = parseJestJson(jest, '/tmp/tree');
    expect(j.ok && Object.fromEntries([...j.value].map(([id, t]) => [id, t]))).toEqual({
      'src/calc.test.ts::calc > adds': 'PASSED',
      'src/calc.test.ts::calc > adds #2': 'PASSED',
      'src/calc.test.ts::calc > minus > subtracts': 'FAILED',
      'src/calc.test.ts::todo': 'SKIPPED',
    });
    expect(parseJestJson('no json here', null).ok).toBe(false);
    expect(parseJestJson('{"stats": {}}', null).ok).toBe(false);
  });

  it('finds public top-level Python functions and keeps their docstrings', () => {
    const src = [
      'import os',
      '',
      '@decorator',
      'def add(a: int,',
      '        b: int) -> dict[str, int]:',
      '    """Adds.',
      '',
      'def not_a_def(): inside the docstring',
      '    """',
      '    x = {',
      '"key": 1}',
      '    return a + b',
      '',
      '# a comment about what follows',
      '',
      'def one(x): return (x,',
      '    1)',
      'def _private():',
      '    return 1',
      'class C:',
      '    def method(self):',
      '        return 2',
    ].join('\n');
    const found = findPythonFunctions(src);
    expect(found.map((f) => f.name)).toEqual(['add', 'one']);
    const stubbed = found.reduceRight((text, f) => applyStub(text, f), src);
    expect(stubbed).toBe(
      [
        'import os',
        '',
        '@decorator',
        'def add(a: int,',
        '        b: int) -> dict[str, int]:',
        '    """Adds.',
        '',
        'def not_a_def(): inside the docstring',
        '    """',
        '    raise NotImplementedError',
        '',
        '# a comment about what follows',
        '',
        'def one(x): raise NotImplementedError',
        'def _private():',
        '    return 1',
        'class C:',
        '    def method(self):',
        '        return 2',
      ].join('\n'),
    );
  });
});

describe('the discrimination check', () => {
  const ctx: RunnerContext = { testCommand: NODE_TEST, env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin' }, timeoutMs: 30_000, limit: pLimit(1) };
  const trees = { starting: join(ROOT, 'disc', 'starting'), solved: join(ROOT, 'disc', 'solved') };
  const test = (file = 't'): TestResult => ({ status: 'pass', file, selectors: [] });
  /** An adapter whose test commands are the test ids themselves. */
  const byCommand: LanguageAdapter = { ...adapterFor('js', ctx), commandFor: (id) => id, ranAndPassed: () => true };
  const check = (f2p: string[], p2p: string[] = []) =>
    discriminationFailure(byCommand, ctx, { failToPass: new Map(f2p.map((c) => [c, test()])), passToPass: new Map(p2p.map((c) => [c, test()])) }, trees, 2);

  beforeAll(() => {
    mkdirSync(trees.starting, { recursive: true });
    mkdirSync(join(trees.solved, 'test'), { recursive: true });
    writeFileSync(join(trees.solved, 'solved'), '');
    writeFileSync(join(trees.solved, 'test', 'a.test.mjs'), "import { test } from 'node:test';\ntest('real', () => {});\n");
  });

  it('accepts commands that fail on the starting tree and pass on the solved one', async () => {
    expect(await check(['test -f solved'], ['true'])).toBeNull();
  });

  it('names what is wrong', async () => {
    expect(await check(['true'])).toBe('verifier passes on the untouched tree: fail_to_pass "true"');
    expect(await check(['false'])).toBe('verifier fails with the solution: fail_to_pass "false"');
    expect(await check(['test -f solved', 'test -f nothing'])).toBe('verifier fails with the solution: fail_to_pass "test -f nothing"');
    // Passes every other run on the solved tree (runs are one at a time here).
    const flaky = 'test -f solved && if [ -f .n ]; then rm .n; exit 1; else touch .n; fi';
    expect(await check([flaky])).toBe(`flaky: passed 1 of 2 with the solution: fail_to_pass "${flaky}"`);
    expect(await check(['test -f solved'], ['test -f solved'])).toBe('pass_to_pass test fails on the untouched tree: pass_to_pass "test -f solved"');
  });

  it('catches a node --test command that selects no test (it exits 0)', async () => {
    const js = adapterFor('js', ctx);
    const ghost: TestResult = { status: 'pass', file: 'test/a.test.mjs', selectors: ['ghost'] };
    const real: TestResult = { status: 'pass', file: 'test/a.test.mjs', selectors: ['real'] };
    const plan = (id: string, t: TestResult) => ({ failToPass: new Map([[id, t]]), passToPass: new Map<string, TestResult>() });
    expect(await discriminationFailure(js, ctx, plan('test/a.test.mjs::ghost', ghost), trees, 1)).toBe(
      'verifier does not run the test (its command passes without running it): fail_to_pass "test/a.test.mjs::ghost"',
    );
    // The real test passes on the solved tree but its file is missing from the starting tree: accepted.
    expect(await discriminationFailure(js, ctx, plan('test/a.test.mjs::real', real), trees, 1)).toBeNull();
  });
});

describe('stub_function on a node:test library', () => {
  const base = join(ROOT, 'stub');
  const repo = join(base, 'repo');
  let commit!: string;
  const uncovered = 'src/strings.mjs#shout';
  const covered = ['src/math.mjs#add', 'src/math.mjs#mul', 'src/math.mjs#clamp', 'src/strings.mjs#capitalize'];
  // A seed whose order reaches the uncovered function before three valid tasks are found.
  const seed = [...Array(100).keys()].find((s) => seededOrder(s, [...covered, uncovered], (x) => x).indexOf(uncovered) < 3)!;
  const otherSeed = [...Array(100).keys()].find((s) => {
    const a = seededOrder(seed, covered, (x) => x);
    const b = seededOrder(s, covered, (x) => x);
    return a[0] !== b[0];
  })!;
  let report: GenerateReport<StubTaskReport>;
  let firstMs = 0;

  beforeAll(async () => {
    commit = makeRepo(repo, [
      {
        'package.json': '{ "name": "tiny", "type": "module" }\n',
        'src/math.mjs': [
          '/** Adds two numbers. */',
          'export function add(a, b) {',
          '  return a + b;',
          '}',
          '',
          '/** Multiplies two numbers. */',
          'export const mul = (a, b) => {',
          '  return a * b;',
          '};',
          '',
          '/**',
          ' * Clamps x into [lo, hi].',
          ' */',
          'export function clamp(x, lo, hi) {',
          '  // braces in strings must not confuse the scanner: "}"',
          "  const s = '}' + \"{\" + `${'}'}`;",
          "  if (s.length !== 3) throw new Error('unreachable');",
          '  return Math.min(hi, Math.max(lo, x));',
          '}',
          '',
        ].join('\n'),
        'src/strings.mjs': [
          'export function capitalize(s) {',
          '  return s.charAt(0).toUpperCase() + s.slice(1);',
          '}',
          '',
          "export const shout = (s) => s.toUpperCase() + '!';",
          '',
        ].join('\n'),
        'test/math.test.mjs': [
          "import { describe, it, test } from 'node:test';",
          "import assert from 'node:assert/strict';",
          "import { add, mul, clamp } from '../src/math.mjs';",
          '',
          "describe('math', () => {",
          "  it('adds', () => assert.equal(add(2, 3), 5));",
          "  describe('mul', () => {",
          "    it('multiplies (x * y)', () => assert.equal(mul(4, 5), 20));",
          '  });',
          '});',
          '',
          "test('clamp', async (t) => {",
          "  await t.test('below', () => assert.equal(clamp(-1, 0, 10), 0));",
          "  await t.test('inside', () => assert.equal(clamp(5, 0, 10), 5));",
          '});',
          '',
          "test('constants', () => assert.ok(Math.PI > 3));",
          '',
        ].join('\n'),
        'test/strings.test.mjs': [
          "import { test } from 'node:test';",
          "import assert from 'node:assert/strict';",
          "import { capitalize } from '../src/strings.mjs';",
          '',
          "test('capitalize', () => assert.equal(capitalize('abc'), 'Abc'));",
          "test('unrelated', () => assert.ok(true));",
          '',
        ].join('\n'),
      },
    ])[0]!;
    const started = Date.now();
    const r = await generateStubFunctionTasks({ repo, commit: commit!, seed, count: 3, language: 'js', testCommand: NODE_TEST, outDir: join(base, 'out-a') });
    firstMs = Date.now() - started;
    if (!r.ok) throw new Error(r.error);
    report = r.value;
  });

  it('makes three tasks that discriminate, in seeded order', () => {
    expect(report.tasks).toHaveLength(3);
    const expected = seededOrder(seed, [...covered, uncovered], (x) => x)
      .filter((c) => c !== uncovered)
      .slice(0, 3);
    expect(report.tasks.map((t) => `${t.file}#${t.function}`)).toEqual(expected);
    for (const t of report.tasks) {
      expect(t.id).toMatch(new RegExp(`^stub-${t.function}-[0-9a-f]{8}$`));
      expect(t.dir).toBe(join(base, 'out-a', t.id));
      const data = assertTaskDiscriminates(join(base, 'out-a'), t.id, repo, 'stub_function');
      expect(data['family']).toBe(t.file);
      expect(data['category']).toBe('stub_function');
      expect(data['repo'].commit).toBe(commit);
      expect(data['prompt']).toBe(`Implement \`${t.function}\` in ${t.file}: it currently throws. Keep its signature.`);
      expect(data['allowed_paths']).toEqual([t.file]);
      expect(Object.keys(data['verifier'].fail_to_pass)).toEqual(t.covering);
      expect(Object.keys(data['verifier'].pass_to_pass).length).toBeGreaterThan(0);
      expect(Object.keys(data['verifier'].pass_to_pass).length).toBeLessThanOrEqual(5);
      expect(data['verifier'].timeout).toBe(600);
    }
    expect(firstMs).toBeLessThan(120_000);
  });

  it('finds the covering tests by running them, nested and subtest names included', () => {
    const byFn = Object.fromEntries(report.tasks.map((t) => [t.function, t.covering]));
    const want: Record<string, string[]> = {
      add: ['test/math.test.mjs::math > adds'],
      mul: ['test/math.test.mjs::math > mul > multiplies (x * y)'],
      clamp: ['test/math.test.mjs::clamp > below', 'test/math.test.mjs::clamp > inside'],
      capitalize: ['test/strings.test.mjs::capitalize'],
    };
    for (const [fn, covering] of Object.entries(byFn)) expect(covering).toEqual(want[fn]);
  });

  it('drops the uncovered function', () => {
    expect(report.dropped).toEqual([{ candidate: uncovered, reason: 'no test covers it' }]);
  });

  it('stubs keep the signature and doc comment', () => {
    for (const t of report.tasks) {
      const patch = readFileSync(join(t.dir, 'setup.patch'), 'utf8');
      expect(patch).toMatch(new RegExp(`^diff --git a/${t.file} b/${t.file}\n`));
      expect(patch).toContain("throw new Error('not implemented');");
      const solution = readFileSync(join(t.dir, 'solution.patch'), 'utf8');
      expect(solution).toMatch(new RegExp(`^diff --git a/${t.file} b/${t.file}\n`));
    }
  });

  it('gives byte-identical task files for the same seed', async () => {
    const r = await generateStubFunctionTasks({ repo, commit, seed, count: 3, language: 'js', testCommand: NODE_TEST, outDir: join(base, 'out-b') });
    if (!r.ok) throw new Error(r.error);
    expect(r.value.dropped).toEqual(report.dropped);
    expect(filesUnder(join(base, 'out-b'))).toEqual(filesUnder(join(base, 'out-a')));
    expect(Object.keys(filesUnder(join(base, 'out-a')))).toHaveLength(9);
  });

  it('follows a different order for a different seed', async () => {
    const r = await generateStubFunctionTasks({ repo, commit, seed: otherSeed, count: 2, language: 'js', testCommand: NODE_TEST, outDir: join(base, 'out-c') });
    if (!r.ok) throw new Error(r.error);
    const expected = seededOrder(otherSeed, [...covered, uncovered], (x) => x)
      .filter((c) => c !== uncovered)
      .slice(0, 2);
    expect(r.value.tasks.map((t) => `${t.file}#${t.function}`)).toEqual(expected);
    expect(expected[0]).not.toBe(report.tasks.map((t) => `${t.file}#${t.function}`)[0]);
  });

  it('writes the tasks the suite supports when fewer than asked, naming the dropped', async () => {
    const out = join(base, 'out-d');
    const r = await generateStubFunctionTasks({ repo, commit, seed, count: 5, language: 'js', testCommand: NODE_TEST, outDir: out });
    if (!r.ok) throw new Error(r.error);
    expect(r.value.tasks, JSON.stringify(r.value.dropped)).toHaveLength(4);
    expect(r.value.dropped).toContainEqual({ candidate: uncovered, reason: 'no test covers it' });
    expect(readdirSync(out)).toHaveLength(4);
  });

  it('refuses a commit that is not a full id', async () => {
    const r = await generateStubFunctionTasks({ repo, commit: 'main', seed, count: 1, language: 'js', testCommand: NODE_TEST, outDir: join(base, 'out-e') });
    expect(r).toEqual({ ok: false, error: 'stub_function: commit "main" is not a full 40-hex commit id (git rev-parse <ref>)' });
  });
});

describe('revert_reimplement on a node:test library', () => {
  const base = join(ROOT, 'revert');
  const repo = join(base, 'repo');
  let commits: string[] = [];

  beforeAll(() => {
    commits = makeRepo(repo, [
      {
        'src/math.mjs': 'export function add(a, b) {\n  return a + b;\n}\n\nexport function mul(a, b) {\n  return a * b;\n}\n',
        'test/math.test.mjs': [
          "import { test } from 'node:test';",
          "import assert from 'node:assert/strict';",
          "import { add, mul } from '../src/math.mjs';",
          "test('add', () => assert.equal(add(2, 3), 5));",
          "test('mul', () => assert.equal(mul(2, 3), 6));",
          '',
        ].join('\n'),
      },
      {
        // One function changes; a test that covers the change comes with it.
        'src/math.mjs': 'export function add(a, b) {\n  return a + b;\n}\n\nexport function mul(a, b, c = 1) {\n  return a * b * c;\n}\n',
        'test/mul3.test.mjs': [
          "import { test } from 'node:test';",
          "import assert from 'node:assert/strict';",
          "import { mul } from '../src/math.mjs';",
          "test('mul takes a third factor', () => assert.equal(mul(2, 3, 4), 24));",
          '',
        ].join('\n'),
      },
      { 'README.md': '# tiny\n' },
    ]);
  });

  it('reverts the change and finds the test that covers it', async () => {
    const outDir = join(base, 'out');
    const r = await generateRevertTasks({ repo, commit: commits[2]!, seed: 1, count: 1, language: 'js', testCommand: NODE_TEST, outDir });
    if (!r.ok) throw new Error(r.error);
    const [task] = r.value.tasks;
    expect(task).toMatchObject({
      id: `revert-${commits[1]!.slice(0, 12)}`,
      commit: commits[1],
      file: 'src/math.mjs',
      covering: ['test/mul3.test.mjs::mul takes a third factor'],
    });
    const data = assertTaskDiscriminates(outDir, task!.id, repo, 'revert_reimplement');
    expect(data['repo'].commit).toBe(commits[1]);
    expect(Object.keys(data['verifier'].fail_to_pass)).toEqual(['test/mul3.test.mjs::mul takes a third factor']);
    expect(Object.keys(data['verifier'].pass_to_pass).sort()).toEqual(['test/math.test.mjs::add', 'test/math.test.mjs::mul']);
    expect(data['allowed_paths']).toEqual(['src/math.mjs']);
    for (const d of r.value.dropped) expect(d.reason).toMatch(/^(the root commit has no parent|changes 0 non-test source files \(wants exactly 1\))$/);

    const again = await generateRevertTasks({
      repo,
      commit: commits[2]!,
      seed: 1,
      count: 1,
      language: 'js',
      testCommand: NODE_TEST,
      outDir: join(base, 'out2'),
    });
    if (!again.ok) throw new Error(again.error);
    expect(filesUnder(join(base, 'out2'))).toEqual(filesUnder(outDir));
  });

  it('writes the one commit that qualifies, listing why the others did not', async () => {
    const r = await generateRevertTasks({ repo, commit: commits[2]!, seed: 1, count: 2, language: 'js', testCommand: NODE_TEST, outDir: join(base, 'none') });
    if (!r.ok) throw new Error(r.error);
    expect(r.value.tasks).toHaveLength(1);
    const why = r.value.dropped.map((d) => `${d.candidate}: ${d.reason}`);
    expect(why).toContain(`${commits[0]}: the root commit has no parent`);
    expect(why).toContain(`${commits[2]}: changes 0 non-test source files (wants exactly 1)`);
  });
});

const hasPytest = spawnSync('sh', ['-c', 'python -m pytest --version'], { encoding: 'utf8' }).status === 0;

describe.skipIf(!hasPytest)('stub_function on a pytest library', () => {
  it('stubs a function, keeps its docstring, and verifies with pytest node ids', async () => {
    const base = join(ROOT, 'py');
    const repo = join(base, 'repo');
    const [commit] = makeRepo(repo, [
      {
        'pkg/__init__.py': '',
        'pkg/calc.py': [
          'def add(a, b):',
          '    """Adds two numbers."""',
          '    return a + b',
          '',
          '',
          'def unused(x):',
          '    return x',
          '',
          '',
          'def _private():',
          '    return 0',
          '',
        ].join('\n'),
        'tests/test_calc.py': [
          'from pkg.calc import add',
          '',
          '',
          'def test_add():',
          '    assert add(2, 3) == 5',
          '',
          '',
          'def test_other():',
          '    assert True',
          '',
        ].join('\n'),
      },
    ]);
    const outDir = join(base, 'out');
    const r = await generateStubFunctionTasks({
      repo,
      commit: commit!,
      seed: 3,
      count: 1,
      language: 'python',
      testCommand: 'python -m pytest -rA -q -p no:cacheprovider',
      outDir,
    });
    if (!r.ok) throw new Error(r.error);
    const [task] = r.value.tasks;
    expect(task).toMatchObject({ function: 'add', file: 'pkg/calc.py', covering: ['tests/test_calc.py::test_add'] });
    const data = assertTaskDiscriminates(outDir, task!.id, repo, 'stub_function');
    expect(data['prompt']).toBe('Implement `add` in pkg/calc.py: it currently raises NotImplementedError. Keep its signature.');
    expect(readFileSync(join(outDir, task!.id, 'setup.patch'), 'utf8')).toContain(
      ' def add(a, b):\n     """Adds two numbers."""\n-    return a + b\n+    raise NotImplementedError\n',
    );
    expect(r.value.dropped.every((d) => d.candidate === 'pkg/calc.py#unused' && d.reason === 'no test covers it')).toBe(true);
  });
});
