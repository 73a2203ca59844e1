import { isAlias, isMap, isScalar, isSeq, LineCounter, parseDocument, visit, type Document, type Node } from 'yaml';
import type { Diagnostic, SourceLocation } from '../diagnostic.js';

export type FieldPath = readonly (string | number)[];

/** A field path as people write it: `steps.build.deps[0]`. */
export function fieldName(path: FieldPath): string {
  return path.map((s, i) => (typeof s === 'number' ? `[${s}]` : i === 0 ? s : `.${s}`)).join('') || '(top level)';
}

/** One parsed YAML file that keeps its source positions, so any field can be pointed at. */
export class YamlSource {
  private readonly lines: string[];

  private constructor(
    readonly displayPath: string,
    readonly text: string,
    readonly doc: Document,
    private readonly lineCounter: LineCounter,
  ) {
    this.lines = text.split(/\r?\n/);
  }

  static parse(displayPath: string, text: string): { source: YamlSource; diagnostics: Diagnostic[] } {
    const lineCounter = new LineCounter();
    const doc = parseDocument(text, { lineCounter, uniqueKeys: true, prettyErrors: false });
    const source = new YamlSource(displayPath, text, doc, lineCounter);
    const located = (pos: [number, number], message: string, hint: string): Diagnostic => {
      const field = source.fieldAt(pos[0]);
      return { ...(field.length ? { field: fieldName(field) } : {}), message, location: source.at(pos[0], Math.max(1, pos[1] - pos[0])), hint };
    };
    const diagnostics = doc.errors.map((e) =>
      located(
        e.pos,
        `invalid YAML: ${e.message.split('\n')[0]}`,
        e.code === 'DUPLICATE_KEY' ? 'each key may appear once in a mapping' : 'fix the YAML syntax at this position',
      ),
    );
    // A tag pairbench does not know (!shell, !!js/function, !!python/...) would be dropped
    // silently and its value kept as plain text: refused instead.
    for (const w of doc.warnings) {
      const tag = /^Unresolved tag: (.*)$/.exec(w.message.split('\n')[0]!)?.[1];
      diagnostics.push(
        located(
          w.pos,
          tag ? `unknown YAML tag ${tag.replace(/^tag:yaml\.org,2002:/, '!!')}` : `invalid YAML: ${w.message.split('\n')[0]}`,
          tag ? 'remove the tag: a config holds plain mappings, lists and scalars' : 'fix the YAML at this position',
        ),
      );
    }
    // Aliases must point at an anchor defined before them; strings must hold no NUL.
    visit(doc, {
      Alias(_key, node) {
        if (isAlias(node) && !node.resolve(doc) && node.range)
          diagnostics.push(
            located(
              [node.range[0], node.range[1]],
              `the alias *${node.source} names no anchor defined before it`,
              `define &${node.source} earlier in the file, or write the value out`,
            ),
          );
      },
      Scalar(_key, node) {
        if (typeof node.value === 'string' && /[\0]/.test(node.value) && node.range)
          diagnostics.push(located([node.range[0], node.range[1]], 'a string holds a NUL character', 'remove it: no command, path or name can carry one'));
      },
    });
    if (diagnostics.length === 0) {
      try {
        source.value = doc.toJS({ maxAliasCount: 1000 });
      } catch (e) {
        diagnostics.push({
          message: `invalid YAML: ${(e as Error).message}`,
          location: source.at(0, 1),
          hint: 'an alias expands too far, or refers to something that is not there',
        });
      }
    }
    return { source, diagnostics };
  }

  /** The document as plain data (set when it parsed without diagnostics). */
  value: unknown = null;

  toJS(): unknown {
    return this.value;
  }

  /** The path of the deepest field whose source span holds `offset` (for syntax errors). */
  fieldAt(offset: number): (string | number)[] {
    const path: (string | number)[] = [];
    let node: unknown = this.doc.contents;
    for (;;) {
      if (isMap(node)) {
        const pair = node.items.find((p) => {
          const start = isNode(p.key) ? p.key.range?.[0] : undefined;
          const end = (isNode(p.value) ? p.value.range?.[2] : undefined) ?? (isNode(p.key) ? p.key.range?.[2] : undefined);
          return start !== undefined && end !== undefined && start <= offset && offset <= end;
        });
        if (!pair) return path;
        path.push(isScalar(pair.key) ? String(pair.key.value) : String(pair.key));
        node = pair.value;
      } else if (isSeq(node)) {
        const i = node.items.findIndex((n) => isNode(n) && n.range && n.range[0] <= offset && offset <= n.range[2]);
        if (i < 0) return path;
        path.push(i);
        node = node.items[i];
      } else {
        return path;
      }
    }
  }

  /** Location of the value at `path`, or of its key when `key` is set; the nearest existing ancestor otherwise. */
  locate(path: FieldPath, key = false): SourceLocation {
    let node: unknown = this.doc.contents;
    let found: Node | null = isNode(node) ? node : null;
    for (let i = 0; i < path.length; i++) {
      const seg = path[i]!;
      const last = i === path.length - 1;
      if (isMap(node)) {
        const pair = node.items.find((p) => (isScalar(p.key) ? p.key.value : p.key) === seg || String(isScalar(p.key) ? p.key.value : p.key) === String(seg));
        if (!pair) break;
        if (last && key && isNode(pair.key)) {
          found = pair.key;
          break;
        }
        node = pair.value;
        if (isNode(node)) found = node;
        else if (isNode(pair.key)) found = pair.key; // `key:` with a null value
      } else if (isSeq(node) && typeof seg === 'number') {
        node = node.items[seg];
        if (!isNode(node)) break;
        found = node;
      } else {
        break;
      }
    }
    const range = found?.range;
    if (!range) return this.at(0, 1);
    const [start, valueEnd] = range;
    return this.at(start, Math.max(1, valueEnd - start));
  }

  at(offset: number, length: number): SourceLocation {
    const { line, col } = this.lineCounter.linePos(offset);
    const lineText = this.lines[line - 1] ?? '';
    return { file: this.displayPath, line, column: col, length: Math.min(length, Math.max(1, lineText.length - col + 1)), lineText };
  }
}

function isNode(x: unknown): x is Node {
  return typeof x === 'object' && x !== null && 'range' in x;
}
