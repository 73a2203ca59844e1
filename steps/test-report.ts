/**
 * Per-test results from one test-runner invocation's report, as SWE-bench grades them:
 * a test passes when its status is PASSED or XFAIL; it fails when its status is FAILED
 * or ERROR, or when the report does not mention it at all; SKIPPED counts neither way.
 */

export type RunnerStatus = 'PASSED' | 'FAILED' | 'SKIPPED' | 'ERROR' | 'XFAIL';
export type ReportFormat = 'pytest-rA' | 'junit-xml' | 'tap' | 'django' | 'sympy';
export const REPORT_FORMATS: readonly ReportFormat[] = ['pytest-rA', 'junit-xml', 'tap', 'django', 'sympy'];

const PYTEST_STATUSES: readonly RunnerStatus[] = ['PASSED', 'FAILED', 'SKIPPED', 'ERROR', 'XFAIL'];

/** The verdict of one listed test from its status (undefined: not in the report). */
export function graded(status: RunnerStatus | undefined): 'pass' | 'fail' | 'skipped' {
  if (status === 'PASSED' || status === 'XFAIL') return 'pass';
  if (status === 'SKIPPED') return 'skipped';
  return 'fail';
}

/**
 * pytest's `-rA` short test summary: `PASSED tests/x.py::test_a`, `FAILED tests/x.py::test_b - AssertionError`.
 * The id is the rest of the line (a parametrized id may hold spaces), up to " - " for a failure's reason.
 */
export function parsePytestSummary(log: string): Map<string, RunnerStatus> {
  const out = new Map<string, RunnerStatus>();
  for (const raw of log.split('\n')) {
    const line = raw.replace(/\r$/, '');
    const status = PYTEST_STATUSES.find((s) => line.startsWith(`${s} `));
    if (!status) continue;
    let id = line.slice(status.length + 1);
    if (status === 'FAILED' || status === 'ERROR' || status === 'XFAIL' || status === 'SKIPPED') {
      const cut = id.indexOf(' - ');
      if (cut > 0) id = id.slice(0, cut);
    }
    id = id.trim();
    // SKIPPED lines read "SKIPPED [1] tests/x.py:12: reason": no test id there.
    if (!id || id.startsWith('[')) continue;
    out.set(id, status);
  }
  return out;
}

/**
 * JUnit XML (pytest --junitxml, jest-junit, mocha-junit-reporter): one status per
 * <testcase>; its id is `file::name` when the case names its file, else `classname::name`.
 */
export function parseJunitXml(xml: string): Map<string, RunnerStatus> {
  const out = new Map<string, RunnerStatus>();
  const cases = /<testcase\b([^>]*?)(\/>|>([\s\S]*?)<\/testcase>)/g;
  for (const m of xml.matchAll(cases)) {
    const attrs = attributes(m[1]!);
    const body = m[3] ?? '';
    const name = attrs['name'];
    if (name === undefined) continue;
    const where = attrs['file'] ?? attrs['classname'];
    const id = where ? `${where}::${name}` : name;
    const status: RunnerStatus = /<failure\b/.test(body) ? 'FAILED' : /<error\b/.test(body) ? 'ERROR' : /<skipped\b/.test(body) ? 'SKIPPED' : 'PASSED';
    out.set(id, status);
  }
  return out;
}

function attributes(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of text.matchAll(/([\w:-]+)\s*=\s*("([^"]*)"|'([^']*)')/g)) out[m[1]!] = unescapeXml(m[3] ?? m[4] ?? '');
  return out;
}

function unescapeXml(s: string): string {
  return s
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&#(\d+);/g, (_, d: string) => String.fromCodePoint(Number(d)))
    .replace(/&#x([0-9a-fA-F]+);/g, (_, h: string) => String.fromCodePoint(parseInt(h, 16)))
    .replace(/&amp;/g, '&');
}

/**
 * TAP (node --test's tap reporter, tape): `ok N - name`, `not ok N - name`, with `# SKIP`
 * and `# TODO` directives. Subtests are indented; each is identified by its name, and
 * a repeated name by its ordinal (`name #2`), as the generators identify them.
 */
export function parseTap(tap: string): Map<string, RunnerStatus> {
  const out = new Map<string, RunnerStatus>();
  const seen = new Map<string, number>();
  for (const raw of tap.split('\n')) {
    const m = /^\s*(not ok|ok)\b\s*\d*\s*(?:-\s*)?(.*)$/.exec(raw.replace(/\r$/, ''));
    if (!m) continue;
    let name = m[2]!.trim();
    const directive = /\s#\s*(SKIP|TODO)\b.*$/i.exec(name);
    if (directive) name = name.slice(0, directive.index).trim();
    if (!name) continue;
    const n = (seen.get(name) ?? 0) + 1;
    seen.set(name, n);
    const id = n === 1 ? name : `${name} #${n}`;
    const status: RunnerStatus = directive ? (directive[1]!.toUpperCase() === 'SKIP' ? 'SKIPPED' : 'XFAIL') : m[1] === 'ok' ? 'PASSED' : 'FAILED';
    out.set(id, status);
  }
  return out;
}

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

/**
 * The status of a listed test id, as SWE-bench resolves it: exactly, else -- for a
 * parametrized id cut short in the record (more "[" than "]", e.g. `test_x[a-very-long-par`)
 * -- by the reported ids it is a prefix of, when they all agree on pass or fail.
 */
export function reportedStatus(statuses: ReadonlyMap<string, RunnerStatus>, id: string): RunnerStatus | null {
  const exact = statuses.get(id);
  if (exact) return exact;
  if ((id.match(/\[/g) ?? []).length <= (id.match(/\]/g) ?? []).length) return null;
  const prefixed = [...statuses].filter(([k]) => k.startsWith(id)).map(([, v]) => v);
  if (!prefixed.length) return null;
  const verdicts = new Set(prefixed.map((st) => graded(st) === 'pass'));
  // Matches that disagree resolve nothing: the test is not found.
  return verdicts.size === 1 ? prefixed[0]! : null;
}

export function parseReport(format: ReportFormat, text: string): Map<string, RunnerStatus> {
  switch (format) {
    case 'pytest-rA':
      return parsePytestSummary(text);
    case 'junit-xml':
      return parseJunitXml(text);
    case 'tap':
      return parseTap(text);
    case 'django':
      return parseDjangoLog(text);
    case 'sympy':
      return parseSympyLog(text);
  }
}
