/**
 * The public form of a bundle: what may be published without contaminating the benchmark (for
 * later runs, and for training data). From the team's private bundle it withholds the hidden
 * verifier's files and the reference solution, and every quote of them anywhere else -- a
 * verifier log that printed a test, an evidence tail, an attempt's diff that repeats the
 * solution -- down to any run of MIN_QUOTE bytes. What is withheld is listed in withheld.json
 * with its digest, and the bundle's manifest is the public bundle's own, so verify-bundle checks
 * it as any bundle.
 */
import { lstatSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { sha256 } from '../pipeline/digest.js';
import { diffLines } from '../text/diff-lines.js';
import { decodedVariants } from '../text/decode.js';
import { MANIFEST_FILE, SIGNATURE_FILE, type BundleFile } from './bundle.js';

/** The longest run of a secret's bytes a public bundle may still hold. */
export const MIN_QUOTE = 40;
export const WITHHELD_FILE = 'withheld.json';
const MARK = Buffer.from('[withheld]');

/** The line of a report that says which form a bundle is (the private form's, replaced in the public one). */
export const PRIVATE_NOTICE =
  'Bundle: private: everything is kept, the hidden verifier and the reference solution included (for the team; `pairbench export --public` writes the form to publish).';
export const PUBLIC_NOTICE = `Bundle: public: the hidden verifier, the reference solution and every quote of them (any run of ${MIN_QUOTE} bytes or more) are withheld; their digests are in ${WITHHELD_FILE}.`;

/** Every window of MIN_QUOTE bytes of the secrets, by a rolling hash, confirmed byte for byte. */
class Scrubber {
  private readonly windows = new Map<number, { s: Buffer; at: number }[]>();
  private readonly pow: number;

  constructor(secrets: readonly Buffer[]) {
    let pow = 1;
    for (let i = 0; i < MIN_QUOTE - 1; i++) pow = Math.imul(pow, 257);
    this.pow = pow;
    for (const s of secrets) this.eachWindow(s, (h, at) => this.windows.set(h, [...(this.windows.get(h) ?? []), { s, at }]));
  }

  private eachWindow(buf: Buffer, visit: (hash: number, at: number) => void): void {
    if (buf.length < MIN_QUOTE) return;
    let h = 0;
    for (let i = 0; i < MIN_QUOTE; i++) h = (Math.imul(h, 257) + buf[i]!) | 0;
    visit(h, 0);
    for (let i = MIN_QUOTE; i < buf.length; i++) {
      h = (Math.imul(h - Math.imul(buf[i - MIN_QUOTE]!, this.pow), 257) + buf[i]!) | 0;
      visit(h, i - MIN_QUOTE + 1);
    }
  }

  /** Whether the window of `buf` at `at` (its rolling hash `h`) is a run of a secret, byte for byte. */
  private isSecretAt(buf: Buffer, h: number, at: number): boolean {
    return this.windows.get(h)?.some((c) => c.s.compare(buf, at, at + MIN_QUOTE, c.at, c.at + MIN_QUOTE) === 0) ?? false;
  }

  /** Whether `buf` holds any run of a secret MIN_QUOTE bytes long. */
  finds(buf: Buffer): boolean {
    let found = false;
    this.eachWindow(buf, (h, at) => (found ||= this.isSecretAt(buf, h, at)));
    return found;
  }

  /** `buf` with every run of a secret at least MIN_QUOTE bytes long replaced by a mark, and how many bytes went. */
  scrub(buf: Buffer): { out: Buffer; removed: number } {
    const hit = new Uint8Array(buf.length);
    let any = false;
    this.eachWindow(buf, (h, at) => {
      if (!this.isSecretAt(buf, h, at)) return;
      hit.fill(1, at, at + MIN_QUOTE);
      any = true;
    });
    if (!any) return { out: buf, removed: 0 };
    const parts: Buffer[] = [];
    let removed = 0;
    for (let i = 0; i < buf.length;) {
      if (!hit[i]) {
        let j = i;
        while (j < buf.length && !hit[j]) j++;
        parts.push(buf.subarray(i, j));
        i = j;
        continue;
      }
      // The run, widened to whole UTF-8 characters (never half of one left behind).
      let j = i;
      while (j < buf.length && hit[j]) j++;
      while (j < buf.length && (buf[j]! & 0xc0) === 0x80) j++;
      removed += j - i;
      parts.push(MARK);
      i = j;
    }
    return { out: Buffer.concat(parts), removed };
  }
}

/** Every regular file of a directory, relative, sorted. */
function filesOf(dir: string, rel = ''): string[] {
  const out: string[] = [];
  for (const name of readdirSync(join(dir, rel)).sort()) {
    const p = rel ? `${rel}/${name}` : name;
    const st = lstatSync(join(dir, p));
    if (st.isDirectory()) out.push(...filesOf(dir, p));
    else if (st.isFile()) out.push(p);
  }
  return out;
}

const HIDDEN_FILE = /^tasks\/[^/]+\/verifier\//;
const TASK_SPEC = /^tasks\/[^/]+\/task\.json$/;

/** A secret's forms as other files hold it: as written, JSON-escaped, HTML-escaped. */
function forms(text: string): Buffer[] {
  const json = JSON.stringify(text).slice(1, -1);
  const html = text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');
  return [...new Set([text, json, html])].map((t) => Buffer.from(t));
}

/** A JSON value with every string scrubbed (structure kept); how many bytes went. */
function scrubJson(v: unknown, scrubber: Scrubber): { value: unknown; removed: number } {
  if (typeof v === 'string') {
    const r = scrubber.scrub(Buffer.from(v));
    return { value: r.removed ? r.out.toString('utf8') : v, removed: r.removed };
  }
  if (Array.isArray(v)) {
    let removed = 0;
    const value = v.map((x) => {
      const r = scrubJson(x, scrubber);
      removed += r.removed;
      return r.value;
    });
    return { value, removed };
  }
  if (v && typeof v === 'object') {
    let removed = 0;
    const value = Object.fromEntries(
      Object.entries(v).map(([k, x]) => {
        const r = scrubJson(x, scrubber);
        removed += r.removed;
        return [k, r.value];
      }),
    );
    return { value, removed };
  }
  return { value: v, removed: 0 };
}

/** A text with its line breaks taken out: a copy split into pieces, one per line, joined again. */
const joined = (text: string) => text.replace(/\r?\n/g, '');

/**
 * How a file's text still holds a secret after its verbatim quotes went: decoded (certify's
 * fixed-point decoder: base64, hex, escapes, compression, ...) or split into pieces shorter than
 * MIN_QUOTE across lines. Undefined when none of its decodings does.
 */
function hiddenCopy(text: string, secrets: Scrubber): string | undefined {
  for (const v of decodedVariants(text)) {
    const how = v.chain.join(' -> ');
    if (v.chain.length && secrets.finds(Buffer.from(v.text))) return `decoded (${how})`;
    if (secrets.finds(Buffer.from(joined(v.text))))
      return v.chain.length ? `decoded (${how}), its pieces joined across lines` : 'in pieces across lines, joined';
  }
  return undefined;
}

export interface PublicBundle {
  files: BundleFile[];
  /** Files not published, with their private digest; `reason` when a decoding of one held a secret. */
  withheld: { path: string; sha256: string; bytes: number; reason?: string }[];
  scrubbed: { path: string; sha256: string; bytes: number; withheld_bytes: number }[];
}

/** The public form of the private bundle in `dir`: its files (manifest.json is made when they are written). */
export function publicBundle(dir: string): PublicBundle {
  const paths = filesOf(dir).filter((p) => p !== MANIFEST_FILE && p !== SIGNATURE_FILE && p !== WITHHELD_FILE);
  // The secrets: the hidden verifier's files, and what the reference solution and the hidden test patch add.
  const secretTexts: string[] = [];
  for (const p of paths) {
    if (HIDDEN_FILE.test(p)) secretTexts.push(readFileSync(join(dir, p), 'utf8'));
    if (TASK_SPEC.test(p)) {
      const spec = JSON.parse(readFileSync(join(dir, p), 'utf8')) as { solution?: { patch?: string | null }; verifier?: { patch?: string | null } };
      for (const patch of [spec.solution?.patch, spec.verifier?.patch]) if (patch) secretTexts.push(diffLines(patch).added.join('\n'));
    }
  }
  const scrubber = new Scrubber(secretTexts.flatMap(forms));
  const decodedSecrets = new Scrubber(secretTexts.flatMap((t) => [Buffer.from(t), Buffer.from(joined(t))]));
  const out: PublicBundle = { files: [], withheld: [], scrubbed: [] };
  for (const p of paths) {
    const bytes = readFileSync(join(dir, p));
    const digest = { path: p, sha256: sha256(bytes), bytes: bytes.length };
    if (HIDDEN_FILE.test(p)) {
      out.withheld.push(digest);
      continue;
    }
    let text: Buffer = bytes;
    let removed = 0;
    if (TASK_SPEC.test(p)) {
      // The task's spec without the patches (their digests instead).
      const spec = JSON.parse(bytes.toString('utf8')) as Record<string, Record<string, unknown>>;
      for (const part of ['solution', 'verifier'] as const) {
        const patch = spec[part]?.['patch'];
        if (typeof patch !== 'string') continue;
        spec[part]!['patch'] = `[withheld: sha256 ${sha256(patch)}]`;
        removed += Buffer.byteLength(patch);
      }
      const r = scrubJson(spec, scrubber);
      text = Buffer.from(JSON.stringify(r.value, null, 2) + '\n');
      removed += r.removed;
    } else if (p.endsWith('.json')) {
      const r = scrubJson(JSON.parse(bytes.toString('utf8')), scrubber);
      if (r.removed) text = Buffer.from(JSON.stringify(r.value, null, 2) + '\n');
      removed = r.removed;
    } else if (p.endsWith('.jsonl')) {
      const lines = bytes.toString('utf8').split('\n');
      const kept = lines.map((line) => {
        if (!line) return line;
        try {
          const r = scrubJson(JSON.parse(line), scrubber);
          removed += r.removed;
          return r.removed ? JSON.stringify(r.value) : line;
        } catch {
          const r = scrubber.scrub(Buffer.from(line));
          removed += r.removed;
          return r.out.toString('utf8');
        }
      });
      if (removed) text = Buffer.from(kept.join('\n'));
    } else {
      const source = p === 'report.md' || p === 'report.html' ? Buffer.from(bytes.toString('utf8').replaceAll(PRIVATE_NOTICE, PUBLIC_NOTICE)) : bytes;
      const r = scrubber.scrub(source);
      text = r.out;
      removed = r.removed;
    }
    // What is left is published only if no decoding of it gives a secret back: else the whole file is withheld.
    const copy = hiddenCopy(text.toString('utf8'), decodedSecrets);
    if (copy) {
      out.withheld.push({ ...digest, reason: `a copy of the hidden verifier or the solution, ${copy}` });
      continue;
    }
    if (removed) out.scrubbed.push({ ...digest, withheld_bytes: removed });
    out.files.push({ path: p, bytes: text });
  }
  out.files.push({
    path: WITHHELD_FILE,
    bytes:
      JSON.stringify(
        {
          schema_version: 1,
          visibility: 'public',
          min_quote_bytes: MIN_QUOTE,
          note: 'withheld from this public form of the bundle: the hidden verifier files, the reference solution and the hidden test patch, every run of their bytes elsewhere, and every file any decoding of which (base64, hex, escapes, compression, pieces joined across lines) gives a run of them back; each file is named with the digest and size it has in the private bundle',
          withheld_files: out.withheld,
          scrubbed_files: out.scrubbed,
        },
        null,
        2,
      ) + '\n',
  });
  return out;
}
