import { brotliDecompressSync, gunzipSync, inflateRawSync, inflateSync } from 'node:zlib';

/**
 * What a surface's text decodes to, to a fixed point: base64, hex, URL percent-escapes, JSON and
 * C string escapes, gzip / zlib / raw deflate / brotli (of decoded bytes), rot13 and reversal,
 * applied again to what each gives until nothing new appears -- bounded in depth and in bytes, so
 * a large or hostile file costs a bounded time. Each decoded text says the chain that made it and
 * maps its offsets back to a line of the file as written.
 */
export interface Decoded {
  text: string;
  /** The decodings that made it, in order (empty for the text as written). */
  chain: string[];
  /** The line of the file as written that an offset in `text` came from. */
  lineOf(offset: number): number;
}

/** How many decodings deep a chain may go. */
export const MAX_DEPTH = 4;
/** Bytes of decoded text one file may produce in all (beyond the file itself). */
export const MAX_DECODED_BYTES = 32 * 1024 * 1024;
/** The largest text a whole-text transform (rot13, reversal, escapes) is applied to. */
const MAX_WHOLE_TEXT = 16 * 1024 * 1024;
const WHOLE_TEXT: ReadonlySet<string> = new Set(['string escapes', 'rot13', 'reversal']);
export const MAX_WHOLE_TEXT_TRANSFORMS = 2;
/** The most an inflated blob may grow to (a zip bomb stops here). */
const MAX_INFLATED = 4 * 1024 * 1024;
/** Words shorter than this are not decoded (too many English words are valid base64). */
const MIN_WORD = 16;
/** A word of letters, `_` and `-` only is decoded from this length (below it, it is an identifier). */
const MIN_LETTERS_ONLY_WORD = 40;
/**
 * Decompressions tried without a magic number (raw deflate, brotli) per file: each costs tens of
 * microseconds, and a file of random base64 has one word per line.
 */
const MAX_BLIND_INFLATES = 2048;
/**
 * Output grows in chunks of this size (to MAX_INFLATED). zlib's default, 16 KiB, allocated for
 * each of the ~10^5 tries a vendored node_modules takes (words average 30 bytes, and almost all
 * fail), was most of a cold scan: 7.5 s on tape's 4,338 files.
 */
const INFLATE_OPTIONS = { maxOutputLength: MAX_INFLATED, chunkSize: 1024 } as const;

const BASE64_WORD = /[A-Za-z0-9+/_-]{16,}={0,2}/g;
const HEX_WORD = /\b(?:[0-9a-fA-F]{2}){12,}\b/g;
/** A whitespace-free run of text (linear to find: no backtracking over a long run). */
const TOKEN = /\S+/g;
const ESCAPE = /\\(?:u\{[0-9a-fA-F]{1,6}\}|u[0-9a-fA-F]{4}|x[0-9a-fA-F]{2}|[0-7]{1,3}|[nrtbfv0'"\\/])/g;

/** Text, not noise: valid UTF-8, printable, not mostly replacement characters. */
function isText(s: string): boolean {
  return s.length >= 8 && !s.includes('\uFFFD') && /^[\p{L}\p{N}\p{P}\p{S}\p{Zs}\p{M}\n\r\t]+$/u.test(s);
}

/** Compressed bytes, inflated (bounded), or undefined; `blind` counts the tries that have no magic number to go by. */
function inflate(bytes: Buffer, blind: { left: number }): { text: string; how: string } | undefined {
  // Raw deflate's first block type 3 does not exist: such bytes are not deflate.
  const rawDeflate = (bytes[0]! & 0x06) !== 0x06;
  const tries: [string, (b: Buffer) => Buffer, 'magic' | 'blind' | false][] = [
    ['gzip', (b) => gunzipSync(b, INFLATE_OPTIONS), bytes[0] === 0x1f && bytes[1] === 0x8b && 'magic'],
    ['zlib', (b) => inflateSync(b, INFLATE_OPTIONS), bytes[0] === 0x78 && bytes.readUInt16BE(0) % 31 === 0 && 'magic'],
    ['deflate', (b) => inflateRawSync(b, INFLATE_OPTIONS), rawDeflate && 'blind'],
    ['brotli', (b) => brotliDecompressSync(b, INFLATE_OPTIONS), 'blind'],
  ];
  // A failed try throws: without a stack to capture, a thousand of them cost microseconds, not seconds.
  const stackTraceLimit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    for (const [how, f, plausible] of tries) {
      if (!plausible) continue;
      if (plausible === 'blind' && blind.left-- <= 0) continue;
      try {
        const text = f(bytes).toString('utf8');
        if (isText(text)) return { text, how };
      } catch {
        // not this compression
      }
    }
    return undefined;
  } finally {
    Error.stackTraceLimit = stackTraceLimit;
  }
}

/** Bytes decoded from a word: as text, or inflated when they are compressed. */
function fromBytes(bytes: Buffer, how: string, blind: { left: number }): { text: string; chain: string[] } | undefined {
  const text = bytes.toString('utf8');
  if (isText(text)) return { text, chain: [how] };
  const inflated = bytes.length >= 8 ? inflate(bytes, blind) : undefined;
  return inflated ? { text: inflated.text, chain: [how, inflated.how] } : undefined;
}

/** ROT13 of ASCII letters (a table over UTF-16 units: a call per character cost seconds on 10 MB). */
const ROT13 = Uint16Array.from({ length: 128 }, (_, c) =>
  c >= 65 && c <= 90 ? ((c - 65 + 13) % 26) + 65 : c >= 97 && c <= 122 ? ((c - 97 + 13) % 26) + 97 : c,
);

function rot13(s: string): string {
  const out = new Uint16Array(s.length);
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    out[i] = c < 128 ? ROT13[c]! : c;
  }
  return Buffer.from(out.buffer, out.byteOffset, out.byteLength).toString('utf16le');
}

/** The string's UTF-16 units in reverse order (a typed array: split('') costs an object per character). */
function reverseUnits(s: string): string {
  const units = new Uint16Array(s.length);
  for (let i = 0, j = s.length - 1; j >= 0; i++, j--) units[i] = s.charCodeAt(j);
  return Buffer.from(units.buffer, units.byteOffset, units.byteLength).toString('utf16le');
}

function unescape(s: string): string {
  return s.replace(ESCAPE, (e) => {
    const c = e[1]!;
    if (c === 'u') return String.fromCodePoint(parseInt(e.startsWith('\\u{') ? e.slice(3, -1) : e.slice(2), 16));
    if (c === 'x') return String.fromCharCode(parseInt(e.slice(2), 16));
    if (/[0-7]/.test(c)) return String.fromCharCode(parseInt(e.slice(1), 8));
    return ({ n: '\n', r: '\r', t: '\t', b: '\b', f: '\f', v: '\v', '0': '\0' } as Record<string, string>)[c] ?? c;
  });
}

/** The offset at which each line of `text` starts. */
export function lineStarts(text: string): number[] {
  const starts = [0];
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) starts.push(i + 1);
  return starts;
}

/** The 1-based line holding `offset`, given the text's lineStarts. */
export function lineAt(starts: readonly number[], offset: number): number {
  let lo = 0;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (starts[mid]! <= offset) lo = mid;
    else hi = mid - 1;
  }
  return lo + 1;
}

/** The text as written, then everything it decodes to, breadth first, each new text once. */
export function decodedVariants(original: string): Decoded[] {
  const starts = lineStarts(original);
  const root: Decoded = { text: original, chain: [], lineOf: (o) => lineAt(starts, o) };
  const out: Decoded[] = [root];
  const seen = new Set<string>([original]);
  let budget = MAX_DECODED_BYTES;
  const blind = { left: MAX_BLIND_INFLATES };
  let level: Decoded[] = [root];
  for (let depth = 0; depth < MAX_DEPTH && level.length && budget > 0; depth++) {
    const next: Decoded[] = [];
    const add = (d: Decoded) => {
      if (seen.has(d.text) || d.text.length > budget) return;
      seen.add(d.text);
      budget -= d.text.length;
      next.push(d);
      out.push(d);
    };
    for (const v of level) {
      const vStarts = lineStarts(v.text);
      const at = (offset: number) => v.lineOf(vStarts[lineAt(vStarts, offset) - 1]!);
      // Words: base64 and hex (their bytes as text, or inflated), each decoded where it stands.
      for (const m of v.text.matchAll(BASE64_WORD)) {
        if (m[0].length < MIN_WORD || /^[0-9a-fA-F]+$/.test(m[0])) continue; // hex, below
        // An identifier (letters and _ only) is not base64 of anything: base64 of 30 bytes or more
        // all but always holds a digit, + or / (a short one may not: those are decoded all the same).
        if (m[0].length < MIN_LETTERS_ONLY_WORD && !/[0-9+/]/.test(m[0])) continue;
        const got = fromBytes(Buffer.from(m[0].replace(/-/g, '+').replace(/_/g, '/'), 'base64'), 'base64', blind);
        const line = at(m.index);
        if (got) add({ text: got.text, chain: [...v.chain, ...got.chain], lineOf: () => line });
      }
      for (const m of v.text.matchAll(HEX_WORD)) {
        const got = fromBytes(Buffer.from(m[0], 'hex'), 'hex', blind);
        const line = at(m.index);
        if (got) add({ text: got.text, chain: [...v.chain, ...got.chain], lineOf: () => line });
      }
      // Runs of URL percent-escapes (a URL-encoded text has no raw spaces: a token at a time).
      for (const m of v.text.includes('%') ? v.text.matchAll(TOKEN) : []) {
        if (!m[0].includes('%') || (m[0].match(/%[0-9A-Fa-f]{2}/g) ?? []).length < 4) continue;
        let text: string;
        try {
          text = decodeURIComponent(m[0]);
        } catch {
          continue;
        }
        const line = at(m.index);
        if (isText(text)) add({ text, chain: [...v.chain, 'URL escapes'], lineOf: () => line });
      }
      if (v.text.length > MAX_WHOLE_TEXT) continue;
      // At most two whole-text transforms in a chain: a third (rot13 of a reversed unescaped
      // text) hides nothing a person writing a file would, and made every ordinary JavaScript
      // file decode into dozens of full-size copies (tape's 4,300 vendored files: 16 s a scan).
      if (v.chain.filter((c) => WHOLE_TEXT.has(c)).length >= MAX_WHOLE_TEXT_TRANSFORMS) continue;
      // The whole text: string escapes decoded, rot13, reversed (each line read backwards, last line first).
      if (ESCAPE.test(v.text)) {
        ESCAPE.lastIndex = 0;
        const text = unescape(v.text);
        const u = lineStarts(text);
        add({ text, chain: [...v.chain, 'string escapes'], lineOf: (o) => Math.min(v.lineOf(0) + lineAt(u, o) - 1, v.lineOf(v.text.length)) });
      }
      ESCAPE.lastIndex = 0;
      if (/[A-Za-z]/.test(v.text)) add({ text: rot13(v.text), chain: [...v.chain, 'rot13'], lineOf: v.lineOf });
      const reversed = reverseUnits(v.text); // by UTF-16 unit: a reversed copy reverses them too
      const total = v.text.length;
      add({ text: reversed, chain: [...v.chain, 'reversal'], lineOf: (o) => v.lineOf(Math.max(0, total - 1 - o)) });
    }
    level = next;
  }
  return out;
}
