import { canonicalJson } from './canonical-json.js';
import { short } from './digest.js';
import type { KeyPreimage } from './key.js';
import type { StepKind } from './step-kind.js';

const HEX64 = /^[0-9a-f]{64}$/;

function show(v: unknown): string {
  if (v === undefined) return '(none)';
  if (typeof v === 'string') return HEX64.test(v) ? short(v) : JSON.stringify(v.length > 60 ? v.slice(0, 57) + '...' : v);
  const s = canonicalJson(v);
  return s.length > 60 ? s.slice(0, 57) + '...' : s;
}

/** Two long strings shown around where they differ: `...cp a b" -> ...cat a > b"`. */
function showPair(a: unknown, b: unknown): [string, string] {
  if (typeof a !== 'string' || typeof b !== 'string' || HEX64.test(a) || (a.length <= 60 && b.length <= 60)) return [show(a), show(b)];
  let pre = 0;
  while (pre < a.length && pre < b.length && a[pre] === b[pre]) pre++;
  let suf = 0;
  while (suf < a.length - pre && suf < b.length - pre && a[a.length - 1 - suf] === b[b.length - 1 - suf]) suf++;
  const cut = (x: string) => {
    const start = Math.max(0, pre - 12);
    const end = Math.min(x.length, x.length - suf + 12);
    return (start > 0 ? '...' : '') + JSON.stringify(x.slice(start, end)) + (end < x.length ? '...' : '');
  };
  return [cut(a), cut(b)];
}

function flatten(v: unknown, prefix: string[], out: Map<string, { path: string[]; value: unknown }>): void {
  if (v !== null && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length > 0) {
    for (const [k, x] of Object.entries(v)) flatten(x, [...prefix, k], out);
  } else {
    out.set(JSON.stringify(prefix), { path: prefix, value: v });
  }
}

/** Why a key changed, in words: one line per differing input, e.g. `file data/a.txt digest 3f2a9c -> 9c1d04`. */
export function describePreimageDiff(before: KeyPreimage, after: KeyPreimage, kind?: StepKind): string[] {
  const lines = preimageChanges(before, after, kind);
  return lines.length ? lines : ['key pre-image changed (no field differs: the record predates this format)'];
}

/** The fields that differ, in words; none when the pre-images are alike. */
export function preimageChanges(before: KeyPreimage, after: KeyPreimage, kind?: StepKind): string[] {
  const lines: string[] = [];
  if (before.kind !== after.kind || before.kind_version !== after.kind_version) {
    lines.push(`step kind ${before.kind} v${before.kind_version} -> ${after.kind} v${after.kind_version}`);
  }
  const maps: [keyof KeyPreimage, (k: string) => string][] = [
    ['files', (k) => (k.endsWith('/') ? `directory ${k.slice(0, -1)} digest` : `file ${k} digest`)],
    ['upstream', (k) => `upstream ${k} output`],
    ['matrix', (k) => `matrix ${k}`],
  ];
  for (const [field, label] of maps) {
    const a = before[field] as Record<string, string>;
    const b = after[field] as Record<string, string>;
    for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) {
      if (a[k] === b[k]) continue;
      if (a[k] === undefined)
        lines.push(`new ${field === 'files' ? 'input' : field === 'upstream' ? 'upstream' : 'matrix value'} ${k}${field === 'matrix' ? '=' + b[k] : ''}`);
      else if (b[k] === undefined) lines.push(`${field === 'files' ? 'input' : field === 'upstream' ? 'upstream' : 'matrix value'} ${k} removed`);
      else lines.push(`${label(k)} ${show(a[k])} -> ${show(b[k])}`);
    }
  }
  const ca = new Map<string, { path: string[]; value: unknown }>();
  const cb = new Map<string, { path: string[]; value: unknown }>();
  flatten(before.config, [], ca);
  flatten(after.config, [], cb);
  for (const id of new Set([...ca.keys(), ...cb.keys()])) {
    const a = ca.get(id);
    const b = cb.get(id);
    if (a && b && canonicalJson(a.value) === canonicalJson(b.value)) continue;
    const path = (a ?? b)!.path;
    const name = kind?.describeConfigField?.(path) ?? (path.join('.') || 'config');
    const [was, now] = showPair(a?.value, b?.value);
    lines.push(`${name}: ${was} -> ${now}`);
  }
  return lines;
}
