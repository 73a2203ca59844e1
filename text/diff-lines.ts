/** A unified diff read line by line: what it adds, removes and keeps. */

export interface DiffLines {
  added: string[];
  removed: string[];
  context: string[];
}

/**
 * The added, removed and context lines of a unified diff. Inside a hunk the
 * header's line counts decide, so an added line whose text starts with '++' is
 * still an added line; outside a hunk '+++ ' and '--- ' are file headers.
 */
export function diffLines(patch: string): DiffLines {
  const out: DiffLines = { added: [], removed: [], context: [] };
  let oldLeft = 0;
  let newLeft = 0;
  for (const line of patch.split(/\r?\n/)) {
    const hunk = /^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@/.exec(line);
    if (hunk) {
      oldLeft = hunk[1] === undefined ? 1 : Number(hunk[1]);
      newLeft = hunk[2] === undefined ? 1 : Number(hunk[2]);
      continue;
    }
    if (oldLeft > 0 || newLeft > 0) {
      const c = line[0];
      if (c === '+' && newLeft > 0) {
        out.added.push(line.slice(1));
        newLeft--;
      } else if (c === '-' && oldLeft > 0) {
        out.removed.push(line.slice(1));
        oldLeft--;
      } else if ((c === ' ' || line === '') && oldLeft > 0 && newLeft > 0) {
        out.context.push(line.slice(1));
        oldLeft--;
        newLeft--;
      } else if (c === '\\') {
        // "\ No newline at end of file"
      } else {
        // Counts and content disagree: fall back to the prefix rules below.
        oldLeft = newLeft = 0;
        lenient(line, out);
      }
      continue;
    }
    lenient(line, out);
  }
  return out;
}

function lenient(line: string, out: DiffLines): void {
  if (line.startsWith('+') && !line.startsWith('+++')) out.added.push(line.slice(1));
  else if (line.startsWith('-') && !line.startsWith('---')) out.removed.push(line.slice(1));
  else if (line.startsWith(' ')) out.context.push(line.slice(1));
}
