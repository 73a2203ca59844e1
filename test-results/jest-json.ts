import { err, errorMessage, ok, type Result } from '../pipeline/result.js';
import type { RunnerStatus } from './status.js';

/**
 * The JSON report jest writes with `--json --outputFile=FILE`, and vitest with `--reporter=json
 * --outputFile=FILE` (the same shape): per test file (`testResults[].name`, an absolute path),
 * each test's titles and status. A test's id is `file::describe > ... > title`, the file relative
 * to `root` (the directory the runner ran in). A test file that failed to load (a syntax error,
 * a throw at import) has no assertion results: its `status` is "failed" and it names no test,
 * so every listed test of it is unreported, which fails it. What a test prints never reaches
 * this file. A report that is not that JSON is no report (an error, never a pass).
 */
export function parseJestJson(text: string, root: string | null): Result<Map<string, RunnerStatus>, string> {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (e) {
    return err(`the JSON report does not parse: ${errorMessage(e)}`);
  }
  const files = (data as { testResults?: unknown } | null)?.testResults;
  if (!Array.isArray(files)) return err('the JSON report has no "testResults" array (not a jest or vitest --json report)');
  const out = new Map<string, RunnerStatus>();
  const rel = (file: string) => (root && file.startsWith(`${root}/`) ? file.slice(root.length + 1) : file);
  const seen = new Map<string, number>();
  for (const f of files as { name?: unknown; assertionResults?: unknown }[]) {
    if (typeof f?.name !== 'string' || !Array.isArray(f.assertionResults)) continue;
    for (const a of f.assertionResults as { ancestorTitles?: unknown; title?: unknown; status?: unknown }[]) {
      if (typeof a?.title !== 'string') continue;
      const ancestors = Array.isArray(a.ancestorTitles) ? a.ancestorTitles.filter((t): t is string => typeof t === 'string') : [];
      const key = `${rel(f.name)}::${[...ancestors, a.title].join(' > ')}`;
      // Two tests of one name in one file: the second is `#2` (as the generators name it).
      const n = (seen.get(key) ?? 0) + 1;
      seen.set(key, n);
      out.set(n > 1 ? `${key} #${n}` : key, statusOf(a.status));
    }
  }
  return ok(out);
}

function statusOf(status: unknown): RunnerStatus {
  switch (status) {
    case 'passed':
      return 'PASSED';
    case 'failed':
      return 'FAILED';
    // skipped, pending, todo, disabled: it did not run.
    default:
      return 'SKIPPED';
  }
}
