import { Parser } from 'tap-parser';
import type { ReportFormat } from './index.js';

/**
 * Whether a report written as text has one reading. A runner prints its own summary once, at
 * its end; a second summary, or text after the runner's final line, was printed by something
 * else (the code under test, an atexit hook): which one the runner wrote cannot be told, so the
 * report decides nothing -- an infrastructure exclusion, never a pass. TAP has no summary but
 * numbers its points: a point id repeated, or past the plan, is a line the producer did not
 * write. Structured files (JUnit XML, jest's JSON) are read by their parsers alone.
 */
export function reportAmbiguity(format: ReportFormat, text: string): string | null {
  const lines = text.split('\n').map((l) => l.replace(/\r$/, '').trim());
  switch (format) {
    case 'pytest-rA':
      return summaryAmbiguity(
        lines,
        'pytest',
        /^=+ short test summary info =+$/,
        /^=+ .*\b(passed|failed|errors?|skipped|deselected|xfailed|xpassed|no tests ran)\b.* in [\d.]+s.*=+$/,
      );
    case 'django':
      // "Ran N tests in Xs", then OK / FAILED (...); Django's own teardown line may follow.
      return summaryAmbiguity(lines, 'Django', /^Ran \d+ tests? in [\d.]+s$/, /^(OK|FAILED)( \(.*\))?$/, /^Destroying test database/);
    case 'sympy':
      return summaryAmbiguity(lines, 'sympy', /^=+ tests finished: .* =+$/, /^=+ tests finished: .* =+$/, /^DO \*NOT\* COMMIT!$/);
    case 'tap':
      return tapAmbiguity(text);
    case 'junit-xml':
    case 'jest-json':
      return null;
  }
}

/** What an eval script prints around its test command (SWE-bench's `>>>>> Test Exit Code: 1`). */
const HARNESS = /^>>>>> /;

/** One summary (`opens` once), nothing but `trailer` lines after its final line (`ends`, at or after it). */
function summaryAmbiguity(lines: string[], runner: string, opens: RegExp, ends: RegExp, trailer?: RegExp): string | null {
  const starts = lines.flatMap((l, i) => (opens.test(l) ? [i] : []));
  if (starts.length > 1)
    return `the log holds ${starts.length} of ${runner}'s summaries (lines ${starts.map((i) => i + 1).join(', ')}): one was printed by something else`;
  const start = starts[0];
  if (start === undefined) return null; // no summary at all: read as the harness reads it (every listed test unreported fails)
  const end = lines.findIndex((l, i) => i >= start && ends.test(l));
  if (end < 0) return null;
  const after = lines.slice(end + 1).findIndex((l) => l !== '' && !HARNESS.test(l) && !trailer?.test(l));
  return after < 0
    ? null
    : `text follows ${runner}'s final summary line (line ${end + 1 + after + 1}: "${lines[end + 1 + after]!.slice(0, 80)}"): printed after the runner ended`;
}

function tapAmbiguity(text: string): string | null {
  let problem: string | null = null;
  const parser = new Parser({ passes: true });
  parser.on('complete', (r: { failures: { tapError?: string }[] }) => {
    const errors = r.failures.flatMap((f) => (f.tapError ? [f.tapError] : []));
    if (errors.length)
      problem = `the TAP's points do not follow its own numbering (${[...new Set(errors)].join('; ')}): a line in it was not written by the producer`;
  });
  parser.end(text);
  return problem;
}
