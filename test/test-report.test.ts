import { describe, expect, it } from 'vitest';
import { graded, parseJunitXml, parsePytestSummary, parseTap } from '../steps/test-report.js';

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
    expect([graded('PASSED'), graded('XFAIL'), graded('FAILED'), graded('ERROR'), graded('SKIPPED'), graded(undefined)]).toEqual(['pass', 'pass', 'fail', 'fail', 'skipped', 'fail']);
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
    const tap = ['TAP version 13', '# Subtest: math', '    ok 1 - adds', '    not ok 2 - subtracts', 'ok 1 - math', 'ok 3 - adds', 'ok 4 - network # SKIP offline', 'not ok 5 - later # TODO not yet', '1..5'].join('\n');
    expect(Object.fromEntries(parseTap(tap))).toEqual({ adds: 'PASSED', subtracts: 'FAILED', math: 'PASSED', 'adds #2': 'PASSED', network: 'SKIPPED', later: 'XFAIL' });
  });
});
