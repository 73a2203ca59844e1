/** A problem a user can act on: where it is (file:line:column and field path) and what was expected. */
export interface SourceLocation {
  /** Path as the user should see it (relative to the working directory when possible). */
  file: string;
  line: number;
  column: number;
  /** Length of the underlined span on that line (at least 1). */
  length: number;
  /** The source line, for the excerpt under the message. */
  lineText?: string;
}

export interface Diagnostic {
  message: string;
  /** Dotted field path in the config, e.g. `steps.build.cmd`. */
  field?: string;
  location?: SourceLocation;
  /** What to do about it, when the message alone does not say. */
  hint?: string;
}

export function formatDiagnostic(d: Diagnostic): string {
  const where = d.location ? `${d.location.file}:${d.location.line}:${d.location.column}: ` : '';
  const field = d.field ? `${d.field}: ` : '';
  let out = `${where}error: ${field}${d.message}`;
  if (d.hint) out += `\n  hint: ${d.hint}`;
  const loc = d.location;
  if (loc?.lineText !== undefined) {
    // A long line is shown as a window around the column, never whole.
    const from = Math.max(0, loc.column - 1 - 60);
    const text = loc.lineText.slice(from, from + 160);
    const shown = `${from > 0 ? '...' : ''}${text}${from + 160 < loc.lineText.length ? '...' : ''}`;
    const caret = loc.column - 1 - from + (from > 0 ? 3 : 0);
    const n = String(loc.line);
    out += `\n  ${n} | ${shown}`;
    out += `\n  ${' '.repeat(n.length)} | ${' '.repeat(Math.max(0, caret))}${'^'.repeat(Math.max(1, Math.min(loc.length, 160)))}`;
  }
  return out;
}

export function diagnosticToJson(d: Diagnostic): Record<string, unknown> {
  const { location, ...rest } = d;
  return location ? { ...rest, file: location.file, line: location.line, column: location.column } : rest;
}

/** Closest candidate by edit distance, for "did you mean" hints. */
export function closest(word: string, candidates: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Math.floor(word.length / 3) + 1;
  for (const c of candidates) {
    const d = editDistance(word.toLowerCase(), c.toLowerCase());
    if (d < bestDistance) {
      best = c;
      bestDistance = d;
    }
  }
  return best;
}

function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const tmp = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = tmp;
    }
  }
  return row[b.length]!;
}
