import type { RunnerStatus } from './status.js';

/** Django's and sympy's runners, as SWE-bench's harness reads their logs (fidelity mode: the log is the report). */

/**
 * Django's test runner at --verbosity 2, read by SWE-bench's Django parser's rules: the id is
 * the text before " ... " (`test_x (module.Class)`); a line ending " ... ok" passes,
 * " ... skipped" anywhere skips, " ... FAIL" / "FAIL: id" fails, " ... ERROR" / "ERROR: id"
 * errors; a line that is just "ok" passes the test whose " ... " came last (its output was
 * printed in between, e.g. a docstring or a log line).
 */
export function parseDjangoLog(log: string): Map<string, RunnerStatus> {
  const out = new Map<string, RunnerStatus>();
  let prev: string | null = null;
  for (const raw of log.split('\n')) {
    const line = raw.trim();
    const at = line.indexOf(' ... ');
    if (at > 0) prev = line.slice(0, at);
    const id = at > 0 ? line.slice(0, at) : prev;
    if (/ \.\.\. (ok|OK)$| \.\.\. {2}OK$/.test(line)) out.set(line.slice(0, at), 'PASSED');
    else if (line.includes(' ... skipped') && at > 0) out.set(line.slice(0, at), 'SKIPPED');
    else if (line.endsWith(' ... FAIL') && at > 0) out.set(line.slice(0, at), 'FAILED');
    else if (line.endsWith(' ... ERROR') && at > 0) out.set(line.slice(0, at), 'ERROR');
    else if (line.endsWith(' ... expected failure') && at > 0) out.set(line.slice(0, at), 'XFAIL');
    else if (line.startsWith('FAIL: ')) out.set(line.slice(6).trim(), 'FAILED');
    else if (line.startsWith('ERROR: ')) out.set(line.slice(7).trim(), 'ERROR');
    else if (/^ok$|^ok /.test(line) && id) out.set(id, 'PASSED');
  }
  return out;
}

/**
 * sympy's `bin/test`, by SWE-bench's sympy parser's rules: a `____ path.py:test_name ____`
 * header fails `path.py:test_name`; a line starting `test_` ending " ok" / " F" / " E"
 * passes, fails or errors the test named by its first word.
 */
export function parseSympyLog(log: string): Map<string, RunnerStatus> {
  const out = new Map<string, RunnerStatus>();
  for (const m of log.matchAll(/(_*) (.*)\.py:(.*) (_*)/g)) out.set(`${m[2]}.py:${m[3]}`, 'FAILED');
  for (const raw of log.split('\n')) {
    const line = raw.trim();
    if (!line.startsWith('test_')) continue;
    const id = line.split(/\s+/)[0]!;
    if (line.endsWith(' E')) out.set(id, 'ERROR');
    else if (line.endsWith(' F')) out.set(id, 'FAILED');
    else if (line.endsWith(' ok')) out.set(id, 'PASSED');
  }
  return out;
}
