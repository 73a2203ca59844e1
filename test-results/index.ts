/**
 * Per-test results of a test runner's invocation, one parser per format, shared by the task
 * generators, certify and verify. Two channels:
 *   - a report file the runner writes to `{report}`, a path pairbench owns outside the
 *     workspace (JUnit XML, TAP): structured, so nothing a test prints is read as a result;
 *   - the runner's log, read by SWE-bench's harness rules where a dataset requires them
 *     (fidelity mode: pytest's -rA summary, Django's and sympy's runners), with the harness's
 *     exit-code cross-check. A printed line is evidence there; the canary stands behind it.
 */
import { err, ok, type Result } from '../pipeline/result.js';
import { parseDjangoLog, parseSympyLog } from './django-sympy.js';
import { parseJestJson } from './jest-json.js';
import { parseJunitXml } from './junit.js';
import { parsePytestLog } from './pytest.js';
import type { RunnerStatus } from './status.js';
import { parseTap } from './tap.js';

export { exitCodeProblem, graded, reportedStatus, type RunnerStatus } from './status.js';

export type ReportFormat = 'pytest-rA' | 'junit-xml' | 'jest-json' | 'tap' | 'django' | 'sympy';

/** Each format's channel: a report file at `{report}`, or the runner's log. */
export const REPORT_CHANNEL: Readonly<Record<ReportFormat, 'file' | 'log'>> = {
  'junit-xml': 'file',
  'jest-json': 'file',
  tap: 'file',
  'pytest-rA': 'log',
  django: 'log',
  sympy: 'log',
};
export const REPORT_FORMATS = Object.keys(REPORT_CHANNEL) as ReportFormat[];

/** The name a report file of `format` is written under (its extension says what it holds). */
export function reportFileName(format: ReportFormat): string {
  return format === 'tap' ? 'report.tap' : format === 'jest-json' ? 'report.json' : 'report.xml';
}

/**
 * The statuses a report gives, or why it is no report (a JUnit file that does not parse). `root`:
 * the directory the runner ran in, for a report that names files by absolute path (jest-json).
 */
export function parseReport(format: ReportFormat, text: string, root: string | null = null): Result<Map<string, RunnerStatus>, string> {
  switch (format) {
    case 'pytest-rA':
      return ok(parsePytestLog(text));
    case 'junit-xml':
      return text.trim() ? parseJunitXml(text) : err('the runner wrote no JUnit XML report');
    case 'jest-json':
      return text.trim() ? parseJestJson(text, root) : err('the runner wrote no JSON report');
    case 'tap':
      return text.trim() ? ok(parseTap(text)) : err('the runner wrote no TAP report');
    case 'django':
      return ok(parseDjangoLog(text));
    case 'sympy':
      return ok(parseSympyLog(text));
  }
}
