import type { FunctionSpan } from './js-functions.js';

export const PY_STUB_STATEMENT = 'raise NotImplementedError';

/** The source with string literals and comments blanked (newlines kept), and the spans of the strings. */
export function maskPython(src: string): { masked: string; strings: { start: number; end: number }[] } {
  const out = src.split('');
  const strings: { start: number; end: number }[] = [];
  const blankRange = (a: number, b: number) => {
    for (let k = a; k < b; k++) if (out[k] !== '\n') out[k] = ' ';
  };
  let i = 0;
  while (i < src.length) {
    const c = src[i]!;
    if (c === '#') {
      let j = src.indexOf('\n', i);
      if (j < 0) j = src.length;
      blankRange(i, j);
      i = j;
    } else if (c === '"' || c === "'") {
      const triple = src.startsWith(c.repeat(3), i);
      const close = triple ? c.repeat(3) : c;
      let k = i + close.length;
      for (;;) {
        if (k >= src.length) break;
        const ch = src[k]!;
        if (ch === '\\') k += 2;
        else if (src.startsWith(close, k)) {
          k += close.length;
          break;
        } else if (ch === '\n' && !triple) break;
        else k++;
      }
      k = Math.min(k, src.length);
      strings.push({ start: i, end: k });
      blankRange(i, k);
      i = k;
    } else i++;
  }
  return { masked: out.join(''), strings };
}

interface Line {
  start: number;
  /** Index of the line's '\n' (or the source length). */
  end: number;
  /** Bracket depth at the line's start (masked code). */
  depth: number;
}

function linesOf(masked: string): Line[] {
  const lines: Line[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i <= masked.length; i++) {
    if (i === masked.length || masked[i] === '\n') {
      const lineDepth = depth;
      for (let k = start; k < i; k++) {
        const c = masked[k];
        if (c === '(' || c === '[' || c === '{') depth++;
        else if (c === ')' || c === ']' || c === '}') depth = Math.max(0, depth - 1);
      }
      lines.push({ start, end: i, depth: lineDepth });
      start = i + 1;
    }
  }
  return lines;
}

const DEF = /^(?:async\s+)?def\s+([A-Za-z_]\w*)\s*\(/;

/**
 * Public top-level functions (`def name(...):` at column 0, not starting with `_`). The
 * signature, decorators and docstring stay; the rest of the body becomes `raise NotImplementedError`.
 */
export function findPythonFunctions(src: string): FunctionSpan[] {
  const { masked, strings } = maskPython(src);
  const lines = linesOf(masked);
  const out: FunctionSpan[] = [];
  const seen = new Set<string>();
  for (let li = 0; li < lines.length; li++) {
    const line = lines[li]!;
    if (line.depth !== 0) continue;
    const m = DEF.exec(masked.slice(line.start, line.end));
    if (!m || m[1]!.startsWith('_') || seen.has(m[1]!)) continue;
    const open = line.start + m[0].length - 1;
    const colon = signatureColon(masked, open);
    if (colon < 0) continue;
    const colonLine = lines.findIndex((l) => l.start <= colon && colon <= l.end);
    const cl = lines[colonLine]!;
    const after = src.slice(colon + 1, cl.end);
    const afterCode = masked.slice(colon + 1, cl.end);
    if (after.trim() !== '' && !after.trim().startsWith('#')) {
      // `def f(x): return x` -- the body is the rest of the logical line.
      let endLine = colonLine;
      while (endLine + 1 < lines.length && lines[endLine + 1]!.depth > 0) endLine++;
      const bodyStart = colon + 1 + (afterCode.length - afterCode.trimStart().length);
      let bodyEnd = lines[endLine]!.end;
      while (bodyEnd > bodyStart && /\s/.test(src[bodyEnd - 1]!)) bodyEnd--;
      seen.add(m[1]!);
      out.push({ name: m[1]!, start: bodyStart, end: bodyEnd, replacement: PY_STUB_STATEMENT });
      continue;
    }
    // A block body: the lines after the signature up to the next line of code at column 0.
    let last = colonLine;
    for (let k = colonLine + 1; k < lines.length; k++) {
      const l = lines[k]!;
      const code = masked.slice(l.start, l.end);
      if (l.depth === 0 && code.trim() !== '' && !/^\s/.test(code)) break;
      last = k;
    }
    // Trailing blank lines and column-0 comments belong to what follows.
    while (last > colonLine) {
      const text = src.slice(lines[last]!.start, lines[last]!.end);
      if (text.trim() === '' || text.startsWith('#')) last--;
      else break;
    }
    if (last === colonLine) continue;
    const first = lines[colonLine + 1]!;
    const bodyStart = first.start;
    const bodyEnd = lines[last]!.end;
    let stmt = colonLine + 1;
    while (stmt <= last) {
      const t = src.slice(lines[stmt]!.start, lines[stmt]!.end).trim();
      if (t === '' || t.startsWith('#')) stmt++;
      else break;
    }
    if (stmt > last) continue;
    const stmtLine = lines[stmt]!;
    const text = src.slice(stmtLine.start, stmtLine.end);
    const indent = /^[ \t]*/.exec(text)![0];
    let keep = '';
    const at = stmtLine.start + indent.length;
    const prefix = /^[rRuUbBfF]{0,2}/.exec(src.slice(at, at + 2))![0];
    const doc = strings.find((s) => s.start === at + prefix.length);
    if (doc && !/^[bBfF]/.test(prefix)) {
      const docLine = lines.find((l) => l.start <= doc.end && doc.end <= l.end)!;
      const restOfLine = masked.slice(doc.end, docLine.end).trim();
      if (restOfLine === '') keep = src.slice(bodyStart, docLine.end) + '\n';
    }
    seen.add(m[1]!);
    out.push({ name: m[1]!, start: bodyStart, end: bodyEnd, replacement: `${keep}${indent}${PY_STUB_STATEMENT}` });
  }
  return out;
}

/** From a parameter list's `(`, the `:` that ends the signature (after any `-> annotation`). */
function signatureColon(masked: string, open: number): number {
  let depth = 0;
  for (let i = open; i < masked.length; i++) {
    const c = masked[i]!;
    if (c === '(' || c === '[' || c === '{') depth++;
    else if (c === ')' || c === ']' || c === '}') depth--;
    else if (c === ':' && depth === 0) return i;
  }
  return -1;
}
