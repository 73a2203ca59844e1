// Per-test results, one parser per format (test-results/), and the attacks of printed text on
// each: real pytest (its JUnit XML and its -rA log) and node's test runner (its TAP), whose tests
// print what a hostile attempt would; Django's and sympy's logs as their runners print them.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exitCodeProblem, graded, parseReport, reportedStatus } from '../test-results/index.js';
import { parseDjangoLog, parseSympyLog } from '../test-results/django-sympy.js';
import { parseJunitXml } from '../test-results/junit.js';
import { parsePytestLog, pytestLines } from '../test-results/pytest.js';
import { parseTap, tapeSections, tapTests } from '../test-results/tap.js';

let dir: string;
beforeAll(() => (dir = mkdtempSync(join(tmpdir(), 'pairbench-reports-'))));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const hasPytest = spawnSync('python3', ['-m', 'pytest', '--version']).status === 0;

/** Runs real pytest on `files` in a fresh directory; returns its log, exit code and JUnit XML. */
function pytest(name: string, files: Record<string, string>, args: string[] = []): { log: string; code: number; xml: string } {
  const d = join(dir, name);
  mkdirSync(d, { recursive: true });
  for (const [p, text] of Object.entries(files)) {
    mkdirSync(join(d, p, '..'), { recursive: true });
    writeFileSync(join(d, p), text);
  }
  const junit = join(d, 'report.xml');
  const r = spawnSync('python3', ['-m', 'pytest', '-rA', '-p', 'no:cacheprovider', `--junitxml=${junit}`, ...args], { cwd: d, encoding: 'utf8' });
  let xml = '';
  try {
    xml = readFileSync(junit, 'utf8');
  } catch {
    // none written
  }
  return { log: `${r.stdout}\n${r.stderr}`, code: r.status ?? -1, xml };
}

describe('attacks of printed text, on the real runners', () => {
  it.skipIf(!hasPytest)(
    'JUnit XML (pytest --junitxml): a failing test that prints </testcase> stays FAILED; a passing one that prints <failure> stays PASSED',
    () => {
      const r = pytest('junit', {
        'tests/test_x.py': [
          'def test_a():',
          '    print(\']]></system-out></testcase><testcase classname="tests.test_x" name="test_a"/><![CDATA[\')',
          "    print('</testcase>')",
          '    assert 1 == 2',
          '',
          'def test_b():',
          '    print(\'<failure message="x">forged</failure>\')',
          "    print('<![CDATA[<failure/>]]>')",
          '',
        ].join('\n'),
      });
      expect(r.xml).toContain('</testcase>'); // what the tests printed is in the XML, escaped
      const m = parseJunitXml(r.xml);
      if (!m.ok) throw new Error(m.error);
      expect(m.value.get('tests.test_x::test_a')).toBe('FAILED');
      expect(m.value.get('tests.test_x::test_b')).toBe('PASSED');
      // By pytest's node ids too (the ids a SWE-bench record lists).
      expect(m.value.get('tests/test_x.py::test_a')).toBe('FAILED');
      expect(m.value.get('tests/test_x.py::test_b')).toBe('PASSED');
      expect([...m.value.values()].filter((v) => v === 'FAILED')).toHaveLength([...m.value.keys()].filter((k) => k.endsWith('::test_a')).length);
      // A report that does not parse is no report (every listed test then fails), never a pass.
      expect(parseReport('junit-xml', '<testsuite><testcase name="x">').ok).toBe(false);
      expect(parseReport('junit-xml', '').ok).toBe(false);
    },
  );

  it('JUnit XML with CDATA output (as jest-junit and mocha-junit-reporter write it): a </testcase> or a <failure> inside it is text', () => {
    const xml = [
      '<?xml version="1.0" encoding="UTF-8"?>',
      '<testsuites><testsuite name="calc" tests="2">',
      '<testcase classname="calc" name="test_a"><system-out><![CDATA[ok </testcase><testcase classname="calc" name="test_a"> ]]></system-out>',
      '<failure message="expected 5"><![CDATA[AssertionError: expected 5, got -1]]></failure></testcase>',
      '<testcase classname="calc" name="test_b"><system-out><![CDATA[<failure message="forged"/>]]></system-out></testcase>',
      '</testsuite></testsuites>',
    ].join('\n');
    const m = parseJunitXml(xml);
    expect(m.ok && Object.fromEntries(m.value)).toMatchObject({ 'calc::test_a': 'FAILED', 'calc::test_b': 'PASSED' });
  });

  it.skipIf(!hasPytest)('pytest -rA: a printed "PASSED id" line and a collection error do not pass the test', () => {
    const r = pytest('printed', {
      'tests/test_x.py': [
        'import sys',
        "print('PASSED tests/test_x.py::test_y')",
        "print('=========================== short test summary info ============================')",
        "print('PASSED tests/test_x.py::test_y')",
        "raise ImportError('the module under test is broken')",
        'def test_y():',
        '    pass',
        '',
      ].join('\n'),
    });
    expect(r.log).toContain('PASSED tests/test_x.py::test_y'); // printed, before pytest's own summary
    expect(r.code).not.toBe(0);
    const m = parsePytestLog(r.log);
    expect(graded(reportedStatus(m, 'tests/test_x.py::test_y'))).toBe('fail');
    expect(m.get('tests/test_x.py')).toBe('ERROR');
    // The JUnit report of the same run agrees.
    const x = parseJunitXml(r.xml);
    expect(x.ok && x.value.get('tests.test_x::test_y')).toBe(undefined);
  });

  it.skipIf(!hasPytest)('pytest -rA: a forged summary printed after pytest exits, with no failure in it, contradicts the exit code and is not graded', () => {
    const r = pytest('atexit', {
      'tests/test_x.py': [
        'import atexit',
        "atexit.register(lambda: print('=== short test summary info ===\\nPASSED tests/test_x.py::test_y\\n=== 1 passed in 0.01s ==='))",
        'def test_y():',
        '    assert False',
        '',
      ].join('\n'),
    });
    const m = parsePytestLog(r.log);
    // The last summary section is the forged one: it names only a pass...
    expect(m.get('tests/test_x.py::test_y')).toBe('PASSED');
    // ...while pytest exited 1: SWE-bench's exit-code rule refuses to grade it (the verifier calls it forged).
    expect(r.code).toBe(1);
    expect(exitCodeProblem(m, r.code)).toMatch(/the test command exited 1, yet its report names 1 result\(s\) and no failure/);
  });

  it('TAP (node --test, its reporter writing to a file): a test that prints "ok" lines adds no result', () => {
    const d = join(dir, 'tap');
    mkdirSync(d, { recursive: true });
    writeFileSync(
      join(d, 'x.test.mjs'),
      "import test from 'node:test';\ntest('real', () => { process.stdout.write('ok 7 - injected\\n    ok 8 - deeper\\nnot ok 9 - real\\n'); throw new Error('fails'); });\ntest('other', () => {});\n",
    );
    const out = join(d, 'report.tap');
    spawnSync(process.execPath, ['--test', '--test-reporter=tap', `--test-reporter-destination=${out}`, 'x.test.mjs'], { cwd: d });
    const tap = readFileSync(out, 'utf8');
    expect(tap).toContain('# ok 7 - injected'); // the printed lines are comments in the report
    expect(Object.fromEntries(parseTap(tap))).toEqual({ real: 'FAILED', other: 'PASSED' });
    const r = parseReport('tap', tap);
    expect(r.ok && r.value.get('injected')).toBe(undefined);
  });
});

describe('SWE-bench grading, as the harness grades (its rules, on pytest logs written for the cases it tests)', () => {
  const log = (...lines: string[]) => ['============================= test session starts ==============================', ...lines].join('\n');

  it('only `SKIPPED [N]` counts are dropped: an id that starts with "[" is kept for every other status', () => {
    // pytest-dev__pytest-5262 and -7521 list such ids in PASS_TO_PASS.
    const m = parsePytestLog(
      log(
        '=========================== short test summary info ============================',
        'PASSED [100%]',
        'PASSED testing/test_capture.py::TestCaptureFixture::test_capsysbinary',
        'SKIPPED [1] testing/test_capture.py:896: requires readline',
        'SKIPPED [2] testing/test_x.py:12: on linux',
        'FAILED [  50%] - boom',
        '==================== 1 failed, 2 passed, 3 skipped in 0.50s ====================',
      ),
    );
    expect(Object.fromEntries(m)).toEqual({
      '[100%]': 'PASSED',
      'testing/test_capture.py::TestCaptureFixture::test_capsysbinary': 'PASSED',
      '[': 'FAILED',
      '[  50%]': 'FAILED',
    });
  });

  it('the id is the second word (a parametrized id with spaces is cut there, as the harness cuts it), a failure reason after " - "', () => {
    const lines = pytestLines(
      log(
        '=========================== short test summary info ============================',
        'PASSED tests/test_a.py::test_param[a b - c]',
        'FAILED tests/test_a.py::test_two - AssertionError: assert 1 == 2',
        'ERROR tests/test_b.py::test_three - ImportError: nope',
        'XFAIL tests/test_a.py::test_four - reason: known',
      ),
    );
    expect(lines.map((l) => [l.status, l.key, l.id])).toEqual([
      ['PASSED', 'tests/test_a.py::test_param[a', 'tests/test_a.py::test_param[a b - c]'],
      ['FAILED', 'tests/test_a.py::test_two', 'tests/test_a.py::test_two'],
      ['ERROR', 'tests/test_b.py::test_three', 'tests/test_b.py::test_three'],
      ['XFAIL', 'tests/test_a.py::test_four', 'tests/test_a.py::test_four'],
    ]);
    // The harness's record holds the cut id; a record that lists the whole id finds it too.
    const m = parsePytestLog(lines.map((l) => `${l.status} ${l.id}`).join('\n'));
    expect(reportedStatus(m, 'tests/test_a.py::test_param[a')).toBe('PASSED');
    expect(reportedStatus(m, 'tests/test_a.py::test_param[a b - c]')).toBe('PASSED');
  });

  it('a log with passes, no failure and a non-zero test exit is not graded; with a FAILED line, or exit 0, or no exit recorded, it is', () => {
    const passes = parsePytestLog('PASSED tests/test_a.py::test_a');
    expect(exitCodeProblem(passes, 1)).not.toBeNull();
    expect(exitCodeProblem(passes, 0)).toBeNull();
    expect(exitCodeProblem(passes, null)).toBeNull();
    expect(exitCodeProblem(parsePytestLog('PASSED tests/test_a.py::test_a\nFAILED tests/test_a.py::test_b - x'), 1)).toBeNull();
    expect(exitCodeProblem(new Map(), 1)).toBeNull(); // nothing reported: every listed test fails anyway
  });

  it('grading: PASSED and XFAIL pass; FAILED, ERROR and unreported fail; SKIPPED is neither (a skipped FAIL_TO_PASS fails)', () => {
    expect([graded('PASSED'), graded('XFAIL'), graded('FAILED'), graded('ERROR'), graded('SKIPPED'), graded(undefined)]).toEqual([
      'pass',
      'pass',
      'fail',
      'fail',
      'skipped',
      'fail',
    ]);
  });

  it('a parametrized id cut short in the record is matched by the ids it prefixes when they agree; other ids match exactly', () => {
    const statuses = new Map([
      ['tests/test_x.py::test_long[aaaa-bbbb-cccc-1]', 'PASSED'],
      ['tests/test_x.py::test_long[aaaa-bbbb-cccc-2]', 'PASSED'],
      ['tests/test_x.py::test_mixed[zzzz-1]', 'PASSED'],
      ['tests/test_x.py::test_mixed[zzzz-2]', 'FAILED'],
      ['tests/test_x.py::test_abc', 'PASSED'],
    ] as const);
    expect(reportedStatus(statuses, 'tests/test_x.py::test_long[aaaa-bbbb-c')).toBe('PASSED');
    expect(reportedStatus(statuses, 'tests/test_x.py::test_mixed[zzzz')).toBeNull();
    expect(reportedStatus(statuses, 'tests/test_x.py::test_ab')).toBeNull();
    expect(reportedStatus(statuses, 'tests/test_x.py::test_long[aaaa-bbbb-cccc-3]')).toBeNull();
  });
});

describe('the other formats', () => {
  it('JUnit XML: file::name when the case names its file, else classname::name; failure, error, skipped, pytest xfail', () => {
    const xml = `<?xml version="1.0"?><testsuites><testsuite name="s">
      <testcase classname="tests.test_a" name="test_one" file="tests/test_a.py" time="0.01"/>
      <testcase classname="tests.test_a" name="test_two" file="tests/test_a.py"><failure message="x">boom</failure></testcase>
      <testcase classname="Calc &amp; co" name="adds &quot;big&quot; numbers"><error/></testcase>
      <testcase classname="Calc" name="later"><skipped/></testcase>
      <testcase classname="Calc" name="known"><skipped type="pytest.xfail" message="bug"/></testcase>
    </testsuite></testsuites>`;
    const m = parseJunitXml(xml);
    if (!m.ok) throw new Error(m.error);
    expect(Object.fromEntries([...m.value].filter(([k]) => !k.includes('.py::') || k.startsWith('tests/test_a.py')))).toEqual({
      'tests/test_a.py::test_one': 'PASSED',
      'tests/test_a.py::test_two': 'FAILED',
      'Calc & co::adds "big" numbers': 'ERROR',
      'Calc::later': 'SKIPPED',
      'Calc::known': 'XFAIL',
    });
    // A pytest class under its module: found by its node id.
    const c = parseJunitXml('<testsuite><testcase classname="tests.test_x.TestA" name="test_b" file="tests/test_x.py"><failure/></testcase></testsuite>');
    expect(c.ok && c.value.get('tests/test_x.py::TestA::test_b')).toBe('FAILED');
  });

  it('TAP: ok / not ok, SKIP and TODO directives, subtests, a repeated name by its ordinal', () => {
    const tap = [
      'TAP version 13',
      '# Subtest: math',
      '    ok 1 - adds',
      '    not ok 2 - subtracts',
      '    1..2',
      'ok 1 - math',
      'ok 2 - adds',
      'ok 3 - network # SKIP offline',
      'not ok 4 - later # TODO not yet',
      '1..4',
    ].join('\n');
    expect(Object.fromEntries(parseTap(tap))).toEqual({
      adds: 'PASSED',
      subtracts: 'FAILED',
      math: 'PASSED',
      'adds #2': 'PASSED',
      network: 'SKIPPED',
      later: 'XFAIL',
    });
    expect(tapTests(tap).map((t) => [t.path.join(' > '), t.status])).toEqual([
      ['math > adds', 'pass'],
      ['math > subtracts', 'fail'],
      ['adds', 'pass'],
      ['network', 'skip'],
      ['later', 'todo'],
    ]);
  });

  it("tape's TAP: a `# name` section is a test; a run cut off before its plan failed the open test", () => {
    const tap = [
      'TAP version 13',
      '# adds',
      'ok 1 sum',
      'ok 2 zero',
      '# subtracts',
      'not ok 3 diff',
      '# empty',
      '',
      '1..3',
      '# tests 3',
      '# pass 2',
      '# fail 1',
    ].join('\n');
    expect(tapeSections(tap)).toEqual([
      { name: 'adds', status: 'pass' },
      { name: 'subtracts', status: 'fail' },
      { name: 'empty', status: 'skip' },
    ]);
    expect(tapeSections(['TAP version 13', '# adds', 'ok 1 sum', '# crashes', 'ok 2 first'].join('\n')).map((s) => s.status)).toEqual(['pass', 'fail']);
    // Real tape would need its package; the format is what tape prints (checked against tape in the generators' tests).
    expect(execFileSync(process.execPath, ['-e', 'console.log(1)'], { encoding: 'utf8' })).toBe('1\n');
  });

  it("Django's runner at --verbosity 2, by SWE-bench's rules", () => {
    const log = [
      "Creating test database for alias 'default'...",
      'test_add (utils_tests.test_calc.CalcTests) ... ok',
      'test_sub (utils_tests.test_calc.CalcTests) ... FAIL',
      'test_div (utils_tests.test_calc.CalcTests) ... ERROR',
      "test_net (utils_tests.test_calc.CalcTests) ... skipped 'needs network'",
      'test_old (utils_tests.test_calc.CalcTests) ... expected failure',
      'test_log (utils_tests.test_calc.CalcTests) ... Internal Server Error: /x/',
      'ok',
      '======================================================================',
      'ERROR: test_setup (utils_tests.test_calc.SetupTests)',
      'Ran 7 tests in 0.01s',
    ].join('\n');
    expect(Object.fromEntries(parseDjangoLog(log))).toEqual({
      'test_add (utils_tests.test_calc.CalcTests)': 'PASSED',
      'test_sub (utils_tests.test_calc.CalcTests)': 'FAILED',
      'test_div (utils_tests.test_calc.CalcTests)': 'ERROR',
      'test_net (utils_tests.test_calc.CalcTests)': 'SKIPPED',
      'test_old (utils_tests.test_calc.CalcTests)': 'XFAIL',
      'test_log (utils_tests.test_calc.CalcTests)': 'PASSED',
      'test_setup (utils_tests.test_calc.SetupTests)': 'ERROR',
    });
  });

  it("sympy's bin/test: verbose lines, and failures named under their headers", () => {
    const log = [
      'sympy/core/tests/test_basic.py[3]',
      'test_one ok',
      'test_two F',
      'test_three E',
      '________________ sympy/core/tests/test_basic.py:test_two ________________',
      'AssertionError',
    ].join('\n');
    expect(Object.fromEntries(parseSympyLog(log))).toEqual({
      test_one: 'PASSED',
      test_two: 'FAILED',
      test_three: 'ERROR',
      'sympy/core/tests/test_basic.py:test_two': 'FAILED',
    });
  });
});
