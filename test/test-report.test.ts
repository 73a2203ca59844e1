import { describe, expect, it } from 'vitest';
import { graded, parseDjangoLog, parseJunitXml, parsePytestSummary, parseSympyLog, parseTap, reportedStatus } from '../steps/test-report.js';

// Per-test results from one runner invocation, graded as SWE-bench grades them.
describe('test reports', () => {
  it('pytest -rA: ids with spaces and "::", a failure reason after " - ", SKIPPED location lines ignored', () => {
    const log = [
      '============================= test session starts ==============================',
      'tests/test_a.py .F.s                                                     [100%]',
      '=========================== short test summary info ============================',
      'PASSED tests/test_a.py::test_one',
      'PASSED tests/test_a.py::test_param[a b - c]',
      'FAILED tests/test_a.py::test_two - AssertionError: assert 1 == 2',
      'ERROR tests/test_b.py::test_three - ImportError: nope',
      'XFAIL tests/test_a.py::test_four - reason: known',
      'SKIPPED [1] tests/test_a.py:40: needs network',
      '==================== 1 failed, 2 passed, 1 skipped in 0.05s ====================',
    ].join('\n');
    const m = parsePytestSummary(log);
    expect(Object.fromEntries(m)).toEqual({
      'tests/test_a.py::test_one': 'PASSED',
      'tests/test_a.py::test_param[a b - c]': 'PASSED',
      'tests/test_a.py::test_two': 'FAILED',
      'tests/test_b.py::test_three': 'ERROR',
      'tests/test_a.py::test_four': 'XFAIL',
    });
    expect([graded('PASSED'), graded('XFAIL'), graded('FAILED'), graded('ERROR'), graded('SKIPPED'), graded(undefined)]).toEqual([
      'pass',
      'pass',
      'fail',
      'fail',
      'skipped',
      'fail',
    ]);
  });

  it('JUnit XML: file::name when the case names its file, else classname::name; failure, error, skipped', () => {
    const xml = `<?xml version="1.0"?><testsuites><testsuite name="s">
      <testcase classname="tests.test_a" name="test_one" file="tests/test_a.py" time="0.01"/>
      <testcase classname="tests.test_a" name="test_two" file="tests/test_a.py"><failure message="x">boom</failure></testcase>
      <testcase classname="Calc &amp; co" name="adds &quot;big&quot; numbers"><error/></testcase>
      <testcase classname="Calc" name="later"><skipped/></testcase>
    </testsuite></testsuites>`;
    expect(Object.fromEntries(parseJunitXml(xml))).toEqual({
      'tests/test_a.py::test_one': 'PASSED',
      'tests/test_a.py::test_two': 'FAILED',
      'Calc & co::adds "big" numbers': 'ERROR',
      'Calc::later': 'SKIPPED',
    });
  });

  it('TAP: ok / not ok, SKIP and TODO directives, subtests, a repeated name by its ordinal', () => {
    const tap = [
      'TAP version 13',
      '# Subtest: math',
      '    ok 1 - adds',
      '    not ok 2 - subtracts',
      'ok 1 - math',
      'ok 3 - adds',
      'ok 4 - network # SKIP offline',
      'not ok 5 - later # TODO not yet',
      '1..5',
    ].join('\n');
    expect(Object.fromEntries(parseTap(tap))).toEqual({
      adds: 'PASSED',
      subtracts: 'FAILED',
      math: 'PASSED',
      'adds #2': 'PASSED',
      network: 'SKIPPED',
      later: 'XFAIL',
    });
  });

  it("Django's runner at --verbosity 2, by SWE-bench's rules: `test (module.Class) ... status`, output between the dots and the ok, FAIL:/ERROR: headers", () => {
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

  it('a parametrized id cut short in the record is matched by the ids it prefixes when they agree; other ids match exactly', () => {
    const statuses = new Map([
      ['tests/test_x.py::test_long[aaaa-bbbb-cccc-1]', 'PASSED'],
      ['tests/test_x.py::test_long[aaaa-bbbb-cccc-2]', 'PASSED'],
      ['tests/test_x.py::test_mixed[zzzz-1]', 'PASSED'],
      ['tests/test_x.py::test_mixed[zzzz-2]', 'FAILED'],
      ['tests/test_x.py::test_abc', 'PASSED'],
    ] as const);
    expect(reportedStatus(statuses, 'tests/test_x.py::test_long[aaaa-bbbb-c')).toBe('PASSED');
    // Matches that disagree resolve nothing (the test counts as not found: failed).
    expect(reportedStatus(statuses, 'tests/test_x.py::test_mixed[zzzz')).toBeNull();
    expect(reportedStatus(statuses, 'tests/test_x.py::test_ab')).toBeNull();
    expect(reportedStatus(statuses, 'tests/test_x.py::test_long[aaaa-bbbb-cccc-3]')).toBeNull();
  });
});
