/**
 * Canonical JSON: object keys sorted by Unicode code
 * point, no insignificant whitespace. The same value always yields the same bytes,
 * whatever order its keys were built in and whatever the locale.
 */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export function canonicalJson(value: unknown): string {
  return serialize(value, null);
}

function compareCodePoints(a: string, b: string): number {
  // String comparison with < compares UTF-16 code units, which differs from code
  // point order only for astral characters against U+E000..U+FFFF.
  const ia = a[Symbol.iterator]();
  const ib = b[Symbol.iterator]();
  for (;;) {
    const x = ia.next();
    const y = ib.next();
    if (x.done) return y.done ? 0 : -1;
    if (y.done) return 1;
    const cx = x.value.codePointAt(0)!;
    const cy = y.value.codePointAt(0)!;
    if (cx !== cy) return cx - cy;
  }
}

function isAsciiOnly(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) >= 0xd800) return false;
  return true;
}

export function sortedKeys(obj: object): string[] {
  const keys = Object.keys(obj);
  // Fast path: without surrogates, code unit order is code point order.
  return keys.every(isAsciiOnly) ? keys.sort() : keys.sort(compareCodePoints);
}

/** Where a value sits, built into a path only for an error message (no string per value on the hot path). */
interface At {
  parent: At | null;
  key: string | number;
}

function pathOf(at: At | null): string {
  const parts: (string | number)[] = [];
  for (let a = at; a; a = a.parent) parts.unshift(a.key);
  return parts.length ? `/${parts.join('/')}` : '/';
}

function serialize(value: unknown, at: At | null): string {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'boolean':
      return value ? 'true' : 'false';
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError(`canonical JSON: non-finite number at ${pathOf(at)}`);
      return JSON.stringify(value);
    case 'string':
      return JSON.stringify(value);
    case 'object': {
      if (Array.isArray(value)) {
        let out = '[';
        for (let i = 0; i < value.length; i++) out += (i ? ',' : '') + serialize(value[i], { parent: at, key: i });
        return out + ']';
      }
      let out = '{';
      let first = true;
      for (const k of sortedKeys(value)) {
        const v = (value as Record<string, unknown>)[k];
        if (v === undefined) continue;
        out += (first ? '' : ',') + JSON.stringify(k) + ':' + serialize(v, { parent: at, key: k });
        first = false;
      }
      return out + '}';
    }
    default:
      throw new TypeError(`canonical JSON: cannot encode ${typeof value} at ${pathOf(at)}`);
  }
}
