/** One line of pytest's `-rA` short test summary. */
export interface PytestOutcome {
  id: string;
  status: 'pass' | 'fail' | 'skip';
}

const LINE = /^(PASSED|FAILED|ERROR|XFAIL|XPASS) (.+)$/;

/**
 * Reads the "short test summary info" section that `pytest -rA` prints: `PASSED <node id>`,
 * `FAILED <node id> - <message>`, `ERROR <node id> - <message>`. Captured output printed before
 * the section is not read, so a test that prints "PASSED x" cannot fake a result.
 */
export function parsePytestSummary(text: string): PytestOutcome[] {
  const lines = text.split('\n').map((l) => l.replace(/\r$/, ''));
  const start = lines.findIndex((l) => /^=+ short test summary info =+$/.test(l));
  if (start < 0) return [];
  const out: PytestOutcome[] = [];
  for (const line of lines.slice(start + 1)) {
    if (/^=+ .* =+$/.test(line)) break;
    const m = LINE.exec(line);
    if (!m) continue;
    const kind = m[1]!;
    const rest = m[2]!;
    const id = kind === 'PASSED' ? rest : rest.split(' - ')[0]!;
    const status = kind === 'PASSED' ? 'pass' : kind === 'FAILED' || kind === 'ERROR' ? 'fail' : 'skip';
    out.push({ id: id.trim(), status });
  }
  return out;
}
