import { lazyRequire } from '../../pipeline/lazy-require.js';
import { err, errorMessage, ok, type Result } from '../../pipeline/result.js';

// Loaded on the first TOML file read (a config without Harbor tasks never pays for it).
const toml = lazyRequire<typeof import('smol-toml')>('smol-toml');

/** A parsed TOML table: plain objects, arrays, strings, numbers, booleans and dates (`TomlDate`, a `Date`). */
export type TomlTable = Record<string, unknown>;

/** Where something is in a TOML text: 1-based line and column, the span length, the line itself. */
export interface TomlPosition {
  line: number;
  column: number;
  length: number;
  lineText: string;
}

/** A syntax error: the parser's one-line reason and, when it gave one, where. */
export interface TomlSyntaxError {
  message: string;
  position?: TomlPosition;
}

/** Parses TOML 1.0 with smol-toml; a syntax error becomes a value with its line and column. */
export function parseToml(text: string): Result<TomlTable, TomlSyntaxError> {
  try {
    return ok(toml().parse(text) as TomlTable);
  } catch (e) {
    if (e instanceof toml().TomlError) {
      const message = (e.message.split('\n')[0] ?? '').replace(/^Invalid TOML document: /, '');
      const lineText = text.split(/\r?\n/)[e.line - 1];
      return err({ message, ...(lineText !== undefined ? { position: { line: e.line, column: e.column, length: 1, lineText } } : {}) });
    }
    return err({ message: errorMessage(e) });
  }
}

export function isTomlTable(v: unknown): v is TomlTable {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Date);
}

/**
 * Best-effort position of the key at `path` (e.g. ['verifier', 'timeout_sec'], or
 * ['environment', 'mcp_servers', '1', 'name'] for the second `[[environment.mcp_servers]]`):
 * the `key = ...` line, else the nearest enclosing `[table]` header that can be found.
 * A line scanner, not a parser: it reads `[a.b]`, `[[a.b]]` and `a.b = ` lines (bare or
 * quoted keys), skips multi-line strings, and does not look inside inline tables.
 */
export function locateTomlKey(text: string, path: readonly string[]): TomlPosition | undefined {
  const lines = text.split(/\r?\n/);
  const found = new Map<string, TomlPosition>();
  const arrayCounts = new Map<string, number>();
  let table: string[] = [];
  let inString: '"""' | "'''" | null = null;
  lines.forEach((raw, i) => {
    if (inString) {
      if (countOf(raw, inString) % 2 === 1) inString = null;
      return;
    }
    const header = /^(\s*)(\[\[?)\s*([^\]]+?)\s*\]\]?\s*(#.*)?$/.exec(raw);
    if (header) {
      const keys = splitKey(header[3]!);
      if (!keys) return;
      if (header[2] === '[[') {
        const name = keys.join('\0');
        const n = arrayCounts.get(name) ?? 0;
        arrayCounts.set(name, n + 1);
        table = [...keys, String(n)];
      } else {
        table = keys;
      }
      remember(found, table, { line: i + 1, column: header[1]!.length + 1, length: raw.trim().length, lineText: raw });
      return;
    }
    const kv = /^(\s*)((?:[A-Za-z0-9_-]+|"[^"]*"|'[^']*')(?:\s*\.\s*(?:[A-Za-z0-9_-]+|"[^"]*"|'[^']*'))*)\s*=\s*(.*)$/.exec(raw);
    if (!kv) return;
    const keys = splitKey(kv[2]!);
    if (!keys) return;
    remember(found, [...table, ...keys], { line: i + 1, column: kv[1]!.length + 1, length: kv[2]!.length, lineText: raw });
    const value = kv[3]!;
    for (const q of ['"""', "'''"] as const) {
      if (value.startsWith(q) && countOf(value, q) % 2 === 1) inString = q;
    }
  });
  for (let n = path.length; n > 0; n--) {
    const hit = found.get(path.slice(0, n).join('\0'));
    if (hit) return hit;
  }
  return undefined;
}

function remember(found: Map<string, TomlPosition>, path: string[], position: TomlPosition): void {
  const key = path.join('\0');
  if (!found.has(key)) found.set(key, position);
}

function countOf(s: string, needle: string): number {
  return s.split(needle).length - 1;
}

/** `a."b.c".d` -> ['a', 'b.c', 'd']; undefined when it is not a simple dotted key. */
function splitKey(s: string): string[] | undefined {
  const keys: string[] = [];
  const re = /\s*(?:([A-Za-z0-9_-]+)|"([^"\\]*)"|'([^']*)')\s*(\.|$)/y;
  let m: RegExpExecArray | null;
  while (re.lastIndex < s.length && (m = re.exec(s))) {
    keys.push(m[1] ?? m[2] ?? m[3] ?? '');
    if (m[4] === '') return keys;
  }
  return keys.length && re.lastIndex >= s.length ? keys : undefined;
}
