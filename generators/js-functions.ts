/** An exported function found in a source file, and how to stub it: replace [start, end) with `replacement`. */
export interface FunctionSpan {
  name: string;
  start: number;
  end: number;
  replacement: string;
}

export const JS_STUB_BODY = "{ throw new Error('not implemented'); }";

const REGEX_AFTER_PUNCT = new Set(['(', ',', '=', ':', '[', '!', '&', '|', '?', '{', '}', ';', '+', '-', '*', '%', '<', '>', '~', '^']);
const REGEX_AFTER_WORD = new Set(['return', 'typeof', 'instanceof', 'in', 'of', 'new', 'delete', 'void', 'throw', 'case', 'do', 'else', 'yield', 'await']);

type Prev = { kind: 'start' } | { kind: 'punct'; ch: string } | { kind: 'word'; word: string } | { kind: 'literal' };

/**
 * The source with comments and the insides of strings, template literals (their `${}` parts
 * included) and regular expression literals replaced by spaces (newlines and the literals'
 * delimiters kept), so that braces and keywords in the result are code. Same length as the source.
 */
export function maskJs(src: string): string {
  const out = src.split('');
  scanCode(src, 0, out, false);
  return out.join('');
}

function blank(out: string[] | null, from: number, to: number): void {
  if (!out) return;
  for (let k = from; k < to; k++) if (out[k] !== '\n') out[k] = ' ';
}

/** Blanks a literal's inside but keeps its delimiters, so that the masked code still has a token there. */
function blankLiteral(out: string[] | null, from: number, to: number): void {
  blank(out, from + 1, to - 1);
}

/** Scans code from `start`; with `nested`, stops after the `}` that closes a `${`. Returns the end index. */
function scanCode(src: string, start: number, out: string[] | null, nested: boolean): number {
  let depth = 0;
  let prev: Prev = { kind: 'start' };
  let i = start;
  while (i < src.length) {
    const c = src[i]!;
    const d = src[i + 1];
    if (c === '/' && d === '/') {
      let j = src.indexOf('\n', i);
      if (j < 0) j = src.length;
      blank(out, i, j);
      i = j;
    } else if (c === '/' && d === '*') {
      let j = src.indexOf('*/', i + 2);
      j = j < 0 ? src.length : j + 2;
      blank(out, i, j);
      i = j;
    } else if (c === '"' || c === "'") {
      const j = skipQuoted(src, i);
      blankLiteral(out, i, j);
      i = j;
      prev = { kind: 'literal' };
    } else if (c === '`') {
      const j = skipTemplate(src, i);
      blankLiteral(out, i, j);
      i = j;
      prev = { kind: 'literal' };
    } else if (c === '/' && regexAllowed(prev)) {
      const j = skipRegex(src, i);
      if (j < 0) {
        prev = { kind: 'punct', ch: c };
        i++;
      } else {
        blankLiteral(out, i, j);
        i = j;
        prev = { kind: 'literal' };
      }
    } else if (/[A-Za-z0-9_$]/.test(c)) {
      const m = /[A-Za-z0-9_$]+/y;
      m.lastIndex = i;
      const word = m.exec(src)![0];
      prev = { kind: 'word', word };
      i += word.length;
    } else {
      if (c === '{') depth++;
      else if (c === '}') {
        if (nested && depth === 0) return i + 1;
        depth--;
      }
      if (!/\s/.test(c)) prev = { kind: 'punct', ch: c };
      i++;
    }
  }
  return i;
}

function regexAllowed(prev: Prev): boolean {
  switch (prev.kind) {
    case 'start':
      return true;
    case 'punct':
      return REGEX_AFTER_PUNCT.has(prev.ch);
    case 'word':
      return REGEX_AFTER_WORD.has(prev.word);
    case 'literal':
      return false;
  }
}

function skipQuoted(src: string, i: number): number {
  const q = src[i];
  let k = i + 1;
  while (k < src.length) {
    const c = src[k];
    if (c === '\\') k += 2;
    else if (c === q) return k + 1;
    else if (c === '\n') return k;
    else k++;
  }
  return k;
}

function skipTemplate(src: string, i: number): number {
  let k = i + 1;
  while (k < src.length) {
    const c = src[k];
    if (c === '\\') k += 2;
    else if (c === '`') return k + 1;
    else if (c === '$' && src[k + 1] === '{') k = scanCode(src, k + 2, null, true);
    else k++;
  }
  return k;
}

/** The end of a regex literal starting at `i`, or -1 when it is not one (a newline comes first). */
function skipRegex(src: string, i: number): number {
  let k = i + 1;
  let inClass = false;
  while (k < src.length) {
    const c = src[k];
    if (c === '\n') return -1;
    if (c === '\\') k += 2;
    else if (c === '[') (inClass = true), k++;
    else if (c === ']') (inClass = false), k++;
    else if (c === '/' && !inClass) {
      k++;
      while (k < src.length && /[a-z]/i.test(src[k]!)) k++;
      return k;
    } else k++;
  }
  return -1;
}

/** Brace depth before each index of masked code. */
function braceDepths(masked: string): Int32Array {
  const depths = new Int32Array(masked.length + 1);
  let d = 0;
  for (let i = 0; i < masked.length; i++) {
    depths[i] = d;
    if (masked[i] === '{') d++;
    else if (masked[i] === '}') d--;
  }
  depths[masked.length] = d;
  return depths;
}

const OPEN: Record<string, string> = { '(': ')', '[': ']', '{': '}' };

/** The index of the bracket closing the one at `open` (masked code), or -1. */
function matchBracket(masked: string, open: number): number {
  const stack: string[] = [];
  for (let i = open; i < masked.length; i++) {
    const c = masked[i]!;
    if (c in OPEN) stack.push(OPEN[c]!);
    else if (c === ')' || c === ']' || c === '}') {
      if (stack.pop() !== c) return -1;
      if (stack.length === 0) return i;
    }
  }
  return -1;
}

function skipWs(masked: string, i: number): number {
  while (i < masked.length && /\s/.test(masked[i]!)) i++;
  return i;
}

const TYPE_CONTINUES = new Set([':', '|', '&', ',', '<', '(', '[', '?', '=>', '.']);

/**
 * From just after a return type's `:`, finds where the type ends: the body's `{` (mode
 * 'function') or the arrow's `=>` (mode 'arrow'). -1 when there is no body (an overload).
 */
function endOfReturnType(masked: string, from: number, mode: 'function' | 'arrow'): number {
  let depth = 0;
  let prev = ':';
  for (let k = from; k < masked.length; k++) {
    const c = masked[k]!;
    if (/\s/.test(c)) continue;
    if (c === '=' && masked[k + 1] === '>') {
      if (mode === 'arrow' && depth === 0) return k;
      prev = '=>';
      k++;
      continue;
    }
    if (depth === 0 && c === '{' && mode === 'function' && !TYPE_CONTINUES.has(prev)) return k;
    if (depth === 0 && (c === ';' || c === '=')) return -1;
    if (c === '(' || c === '[' || c === '{' || c === '<') depth++;
    else if (c === ')' || c === ']' || c === '}' || c === '>') depth--;
    if (depth < 0) return -1;
    prev = c;
  }
  return -1;
}

const STATEMENT_START = /^(?:export|import|const|let|var|function|class|async\s+function|if|for|while|return|throw|\}|$)/;

/** The end of an arrow function's expression body starting at `from` (masked code). */
function endOfExpression(masked: string, from: number): number {
  let depth = 0;
  for (let k = from; k < masked.length; k++) {
    const c = masked[k]!;
    if (c === '(' || c === '[' || c === '{') depth++;
    else if (c === ')' || c === ']' || c === '}') {
      if (depth === 0) return k;
      depth--;
    } else if (depth === 0 && (c === ';' || c === ',')) return k;
    else if (depth === 0 && c === '\n') {
      const rest = masked.slice(k + 1).trimStart();
      if (STATEMENT_START.test(rest)) return k;
    }
  }
  return masked.length;
}

const DECLARATION = /(?<![.\w$])export\s+(?:default\s+)?(?:async\s+)?function\b\s*\*?\s*([A-Za-z_$][\w$]*)\s*(?:<[^()]*?>)?\s*\(/g;
const BINDING =
  /(?<![.\w$])export\s+(?:const|let|var)\s+([A-Za-z_$][\w$]*)\s*(?::[^=;]*?)?=\s*(?:async\b\s*)?(?:(function\b\s*\*?\s*(?:[A-Za-z_$][\w$]*)?\s*(?:<[^()]*?>)?\s*\()|((?:<[^()]*?>\s*)?\()|([A-Za-z_$][\w$]*\s*=>))/g;

/**
 * Top-level exported functions with a body: `export [async] function name(...) {...}` and
 * `export const name = [async] (...) => ...` / `= function (...) {...}`. The signature and any
 * doc comment stay; the body becomes `{ throw new Error('not implemented'); }`.
 */
export function findJsFunctions(src: string): FunctionSpan[] {
  const masked = maskJs(src);
  const depths = braceDepths(masked);
  const found = new Map<string, FunctionSpan>();
  const add = (name: string, start: number, end: number) => {
    if (!found.has(name) && start >= 0 && end > start) found.set(name, { name, start, end, replacement: JS_STUB_BODY });
  };
  for (const m of masked.matchAll(DECLARATION)) {
    if (depths[m.index] !== 0) continue;
    const open = m.index + m[0].length - 1;
    const body = functionBody(masked, open, 'function');
    if (body) add(m[1]!, body.start, body.end);
  }
  for (const m of masked.matchAll(BINDING)) {
    if (depths[m.index] !== 0) continue;
    const matchEnd = m.index + m[0].length;
    if (m[2] !== undefined) {
      const body = functionBody(masked, matchEnd - 1, 'function');
      if (body) add(m[1]!, body.start, body.end);
    } else if (m[3] !== undefined) {
      const body = functionBody(masked, matchEnd - 1, 'arrow');
      if (body) add(m[1]!, body.start, body.end);
    } else {
      const body = arrowBody(masked, matchEnd);
      if (body) add(m[1]!, body.start, body.end);
    }
  }
  return [...found.values()].sort((a, b) => a.start - b.start);
}

/** From a parameter list's `(`, the body range [start, end) of a function or arrow. */
function functionBody(masked: string, open: number, mode: 'function' | 'arrow'): { start: number; end: number } | null {
  const close = matchBracket(masked, open);
  if (close < 0) return null;
  let j = skipWs(masked, close + 1);
  if (masked[j] === ':') {
    j = endOfReturnType(masked, j + 1, mode);
    if (j < 0) return null;
  }
  if (mode === 'function') {
    if (masked[j] !== '{') return null;
    const end = matchBracket(masked, j);
    return end < 0 ? null : { start: j, end: end + 1 };
  }
  if (masked[j] !== '=' || masked[j + 1] !== '>') return null;
  return arrowBody(masked, j + 2);
}

/** From just after `=>`: a braced body, or an expression body up to its `;`, `,` or line end. */
function arrowBody(masked: string, from: number): { start: number; end: number } | null {
  const j = skipWs(masked, from);
  if (j >= masked.length) return null;
  if (masked[j] === '{') {
    const end = matchBracket(masked, j);
    return end < 0 ? null : { start: j, end: end + 1 };
  }
  let end = endOfExpression(masked, j);
  while (end > j && /\s/.test(masked[end - 1]!)) end--;
  return end > j ? { start: j, end } : null;
}

/** The source with one function's body replaced by its stub. */
export function applyStub(src: string, span: FunctionSpan): string {
  return src.slice(0, span.start) + span.replacement + src.slice(span.end);
}
