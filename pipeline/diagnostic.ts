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

/** Another place a diagnostic involves: the first definition of a duplicate, the other steps of a cycle. */
export interface RelatedLocation {
  message: string;
  field?: string;
  location?: SourceLocation;
}

export interface Diagnostic {
  /** error (the default): the command cannot go on; warning: it goes on, and says so. */
  severity?: 'error' | 'warning';
  message: string;
  /** Dotted field path in the config, e.g. `steps.build.cmd`. */
  field?: string;
  location?: SourceLocation;
  /** What to do about it, when the message alone does not say. */
  hint?: string;
  related?: RelatedLocation[];
}

const at = (loc: SourceLocation | undefined) => (loc ? `${loc.file}:${loc.line}:${loc.column}: ` : '');

export function formatDiagnostic(d: Diagnostic): string {
  const field = d.field ? `${d.field}: ` : '';
  let out = `${at(d.location)}${d.severity ?? 'error'}: ${field}${d.message}`;
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
  for (const r of d.related ?? []) out += `\n  note: ${at(r.location)}${r.field ? `${r.field}: ` : ''}${r.message}`;
  return out;
}

export function diagnosticToJson(d: Diagnostic): Record<string, unknown> {
  const place = (l: SourceLocation | undefined) => (l ? { file: l.file, line: l.line, column: l.column } : {});
  const { location, related, severity, ...rest } = d;
  return {
    severity: severity ?? 'error',
    ...rest,
    ...place(location),
    ...(related?.length ? { related: related.map(({ location: l, ...r }) => ({ ...r, ...place(l) })) } : {}),
  };
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

/** Edit distance counting a swap of two neighbours as one edit (optimal string alignment): "jbos" is 1 from "jobs". */
function editDistance(a: string, b: string): number {
  let before = new Array<number>(b.length + 1).fill(0);
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      let d = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, before[j - 2]! + 1);
      row.push(d);
    }
    before = prev;
    prev = row;
  }
  return prev[b.length]!;
}
