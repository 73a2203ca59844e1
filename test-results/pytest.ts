import type { RunnerStatus } from './status.js';

/** One result line of pytest's `-rA` short test summary. */
export interface PytestLine {
  status: RunnerStatus;
  /** The test id as pytest printed it (the rest of the line, without a failure's " - reason"). */
  id: string;
  /** The id as SWE-bench's parser keys it: the line's second word (a parametrized id with spaces is cut there). */
  key: string;
}

const STATUSES: readonly RunnerStatus[] = ['PASSED', 'FAILED', 'SKIPPED', 'ERROR', 'XFAIL'];
const SUMMARY_HEADER = /^=+ short test summary info =+$/;
/** SWE-bench drops pytest's `SKIPPED [N] path:line: reason` lines: [N] is a count, not a test. Only there. */
const SKIP_COUNT = /^\[\d+\]$/;

/**
 * The result lines of a pytest log, by SWE-bench's rules (a line that starts with a status word;
 * its second word is the test; `SKIPPED [N]` counts are not tests), read from pytest's LAST short
 * test summary section when the log has one -- a test that prints "PASSED x" while it runs prints
 * it before that section, where it is not read -- else from the whole log, as the harness does.
 */
export function pytestLines(log: string): PytestLine[] {
  const lines = log.split('\n').map((l) => l.replace(/\r$/, ''));
  let start = -1;
  for (let i = lines.length - 1; i >= 0; i--)
    if (SUMMARY_HEADER.test(lines[i]!)) {
      start = i;
      break;
    }
  const out: PytestLine[] = [];
  for (const line of start >= 0 ? lines.slice(start + 1) : lines) {
    if (start >= 0 && /^=+ .* =+$/.test(line)) break;
    const status = STATUSES.find((s) => line.startsWith(s));
    if (!status) continue;
    const words = (status === 'FAILED' ? line.replace(/ - /g, ' ') : line).split(/\s+/).filter(Boolean);
    if (words.length <= 1 || words[0] !== status) continue;
    if (status === 'SKIPPED' && SKIP_COUNT.test(words[1]!)) continue;
    let id = line.slice(status.length).trim();
    const cut = status === 'PASSED' ? -1 : id.indexOf(' - ');
    if (cut > 0) id = id.slice(0, cut).trim();
    out.push({ status, id, key: words[1]! });
  }
  return out;
}

/**
 * The status of each test as SWE-bench's harness maps it (keyed by the second word; a later line
 * wins), and by its whole id too when that has spaces: a record may list either.
 */
export function parsePytestLog(log: string): Map<string, RunnerStatus> {
  const out = new Map<string, RunnerStatus>();
  for (const l of pytestLines(log)) {
    out.set(l.key, l.status);
    if (l.id !== l.key) out.set(l.id, l.status);
  }
  return out;
}
