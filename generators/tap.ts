/** A leaf test of node:test's TAP output (suites and tests that only hold subtests are not tests). */
export interface TapTest {
  /** Names from the top-level test down to this one. */
  path: string[];
  /** The names --test-name-pattern must match to run it: its non-suite ancestors and itself. */
  selectors: string[];
  status: 'pass' | 'fail' | 'skip' | 'todo';
}

interface Entry {
  name: string;
  ok: boolean;
  directive: 'SKIP' | 'TODO' | null;
  yaml: Map<string, string>;
  children: Entry[];
}

const RESULT = /^( *)(not ok|ok)\b(?: +\d+)?(?: +-)?(?: (.*))?$/;

/**
 * Parses TAP as node:test writes it: subtests are indented four spaces per level and come
 * before their parent's result line; a YAML block (`---` ... `...`) follows each result.
 */
export function parseTap(text: string): TapTest[] {
  const pending = new Map<number, Entry[]>();
  let current: { entry: Entry; indent: number } | null = null;
  let inYaml = false;
  for (const raw of text.split('\n')) {
    const line = raw.replace(/\r$/, '');
    if (inYaml && current) {
      if (line.trim() === '...') inYaml = false;
      else {
        const kv = /^\s*([A-Za-z_]+):\s*(.*)$/.exec(line);
        if (kv && line.length - line.trimStart().length === current.indent + 2) {
          current.entry.yaml.set(kv[1]!, kv[2]!.replace(/^'(.*)'$/, '$1'));
        }
      }
      continue;
    }
    if (current && line === ' '.repeat(current.indent + 2) + '---') {
      inYaml = true;
      continue;
    }
    const m = RESULT.exec(line);
    if (!m) continue;
    const indent = m[1]!.length;
    const level = Math.floor(indent / 4);
    const { name, directive } = splitDirective(m[3] ?? '');
    const entry: Entry = { name, ok: m[2] === 'ok', directive, yaml: new Map(), children: pending.get(level + 1) ?? [] };
    pending.delete(level + 1);
    for (const deeper of [...pending.keys()]) if (deeper > level) pending.delete(deeper);
    const siblings = pending.get(level) ?? [];
    siblings.push(entry);
    pending.set(level, siblings);
    current = { entry, indent };
  }
  const out: TapTest[] = [];
  const walk = (entry: Entry, path: string[], selectors: string[]) => {
    const isSuite = entry.yaml.get('type') === 'suite';
    const p = [...path, entry.name];
    const s = isSuite ? selectors : [...selectors, entry.name];
    if (entry.children.length) {
      for (const c of entry.children) walk(c, p, s);
      return;
    }
    if (isSuite) return;
    const status = entry.directive === 'SKIP' ? 'skip' : entry.directive === 'TODO' ? 'todo' : entry.ok ? 'pass' : 'fail';
    out.push({ path: p, selectors: s, status });
  };
  for (const root of pending.get(0) ?? []) walk(root, [], []);
  return out;
}

/** `name # SKIP reason` -> name and directive; `\#` in a name is an escaped `#`. */
function splitDirective(text: string): { name: string; directive: 'SKIP' | 'TODO' | null } {
  let end = text.length;
  let directive: 'SKIP' | 'TODO' | null = null;
  for (let i = 0; i < text.length; i++) {
    if (text[i] === '\\') {
      i++;
      continue;
    }
    if (text[i] === '#' && (i === 0 || text[i - 1] === ' ')) {
      const d = /^#\s*(SKIP|TODO)\b/i.exec(text.slice(i));
      if (d) {
        directive = d[1]!.toUpperCase() as 'SKIP' | 'TODO';
        end = i;
        break;
      }
    }
  }
  return { name: unescapeTap(text.slice(0, end).replace(/ +$/, '')), directive };
}

const ESCAPES: Record<string, string> = { n: '\n', t: '\t', r: '\r', b: '\b', f: '\f', v: '\v' };

function unescapeTap(text: string): string {
  return text.replace(/\\(.)/g, (_, c: string) => ESCAPES[c] ?? c);
}
