/**
 * Canonical JSON: object keys sorted by Unicode code
 * point, no insignificant whitespace. The same value always yields the same bytes,
 * whatever order its keys were built in and whatever the locale.
 */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/**
 * A value to be encoded as canonical JSON, typed as loosely as TypeScript forces: it cannot call
 * an interface (no index signature) or an optional property JSON. canonicalJson checks the value
 * as it encodes it: a function, a symbol or a non-finite number fails, naming where it sits; an
 * undefined property is left out, as JSON.stringify leaves it out.
 */
export type JsonEncodable = Json | object;

export function canonicalJson(value: unknown): string {
  return serialize(value);
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

const SURROGATE = /[\ud800-\udfff]/;

/** Sorted key lists by shape (the keys in their own order): pre-images repeat a few shapes thousands of times. */
const sortedByShape = new Map<string, string[]>();

export function sortedKeys(obj: object): string[] {
  const keys = Object.keys(obj);
  if (keys.length < 2) return keys;
  const shape = keys.join('\u0000');
  const known = sortedByShape.get(shape);
  if (known) return known;
  // Without surrogates, code unit order is code point order.
  const sorted = SURROGATE.test(shape) ? keys.sort(compareCodePoints) : keys.sort();
  if (sortedByShape.size < 10_000) sortedByShape.set(shape, sorted);
  return sorted;
}

/** A value canonical JSON cannot encode, and where it sits (found on a second, slow walk: none is built on the hot path). */
function badValue(value: unknown, path: (string | number)[] = []): string | undefined {
  if (value === null || typeof value === 'boolean' || typeof value === 'string') return undefined;
  const where = () => (path.length ? `/${path.join('/')}` : '/');
  if (typeof value === 'number') return Number.isFinite(value) ? undefined : `non-finite number at ${where()}`;
  if (typeof value !== 'object') return `cannot encode ${typeof value} at ${where()}`;
  const entries: [string | number, unknown][] = Array.isArray(value) ? value.map((v, i) => [i, v]) : Object.entries(value).filter(([, v]) => v !== undefined);
  for (const [k, v] of entries) {
    const bad = badValue(v, [...path, k]);
    if (bad) return bad;
  }
  return undefined;
}

class Unencodable extends Error {}

/** What JSON.stringify escapes in a string (quote, backslash, control characters, lone surrogates). */
// eslint-disable-next-line no-control-regex -- the control characters are exactly what JSON escapes
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;

/** Quoted object keys: a pre-image repeats the same few names thousands of times. */
const quotedKeys = new Map<string, string>();

function quoteKey(k: string): string {
  let q = quotedKeys.get(k);
  if (q === undefined) {
    q = JSON.stringify(k);
    if (quotedKeys.size < 10_000) quotedKeys.set(k, q);
  }
  return q;
}

function serialize(value: unknown): string {
  try {
    return encode(value);
  } catch (e) {
    if (e instanceof Unencodable) throw new TypeError(`canonical JSON: ${badValue(value) ?? 'cannot encode a value'}`, { cause: e });
    throw e;
  }
}

function encode(value: unknown): string {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'boolean':
      return value ? 'true' : 'false';
    case 'number':
      if (!Number.isFinite(value)) throw new Unencodable();
      return JSON.stringify(value);
    case 'string':
      return NEEDS_ESCAPE.test(value) ? JSON.stringify(value) : `"${value}"`;
    case 'object': {
      if (Array.isArray(value)) {
        let out = '[';
        for (let i = 0; i < value.length; i++) out += (i ? ',' : '') + encode(value[i]);
        return out + ']';
      }
      let out = '{';
      let first = true;
      for (const k of sortedKeys(value)) {
        const v = (value as Record<string, unknown>)[k];
        if (v === undefined) continue;
        out += (first ? '' : ',') + quoteKey(k) + ':' + encode(v);
        first = false;
      }
      return out + '}';
    }
    default:
      throw new Unencodable();
  }
}
