/**
 * The export bundle: a directory of files plus `manifest.json`, which records the
 * SHA-256 and byte length of every other file in it. `verifyBundle` re-hashes the
 * directory and names every file that differs, is missing or is extra, so a
 * reader can check a published bundle without trusting whoever published it.
 */
import { lstatSync, readdirSync, readFileSync } from 'node:fs';
import { createPrivateKey, createPublicKey, sign as cryptoSign, verify as cryptoVerify, type KeyObject } from 'node:crypto';
import { join } from 'node:path';
import { canonicalJson } from '../pipeline/canonical-json.js';
import { sha256, sha256File, isSha256, type Sha256 } from '../pipeline/digest.js';
import { err, errorMessage, ok, type Result } from '../pipeline/result.js';
import { writeFileAtomic } from '../pipeline/atomic-write.js';

export const MANIFEST_FILE = 'manifest.json';
/** The Ed25519 signature of manifest.json (outside the manifest: it signs it). */
export const SIGNATURE_FILE = 'manifest.sig.json';
export const MANIFEST_SCHEMA_VERSION = 1;

export interface BundleFile {
  /** Relative to the bundle directory, forward slashes, no `.` or `..` segments. */
  path: string;
  bytes: Buffer | string;
}

export interface ManifestEntry {
  sha256: Sha256;
  bytes: number;
}

export interface Manifest {
  schema_version: typeof MANIFEST_SCHEMA_VERSION;
  created_by: 'pairbench';
  /** Keyed by bundle path; serialized sorted by path (canonical JSON). */
  files: Record<string, ManifestEntry>;
}

export interface BundleMismatch {
  /** In the manifest and on disk, but the bytes (digest or length) are not the recorded ones. */
  differs: string[];
  /** In the manifest, not on disk. */
  missing: string[];
  /** On disk, not in the manifest (manifest.json itself excluded). */
  extra: string[];
}

/** Each file a mismatch names, with how it differs, in the order verify-bundle lists them. */
export function mismatchedFiles(m: BundleMismatch): { file: string; how: keyof BundleMismatch }[] {
  return (['differs', 'missing', 'extra'] as const).flatMap((how) => m[how].map((file) => ({ file, how })));
}

const TEMP_PREFIX = '.pairbench-tmp-';

/** Why a bundle path is unacceptable, or undefined when it is fine. */
export function bundlePathProblem(path: string): string | undefined {
  if (path.length === 0) return 'empty path';
  if (path.includes('\\')) return 'backslash in path (use forward slashes)';
  if (path.includes('\0')) return 'NUL in path';
  if (path.startsWith('/') || /^[A-Za-z]:/.test(path)) return 'absolute path';
  for (const seg of path.split('/')) {
    if (seg === '') return 'empty segment (leading, trailing or doubled slash)';
    if (seg === '.' || seg === '..') return `'${seg}' segment`;
    if (seg.startsWith(TEMP_PREFIX)) return `segment starts with the reserved prefix ${TEMP_PREFIX}`;
  }
  if (path === MANIFEST_FILE || path === SIGNATURE_FILE) return `${path} is written by the bundle itself`;
  return undefined;
}

/**
 * Writes every file (each atomically: temp file in the same directory, then
 * rename), then `manifest.json` (canonical JSON, itself not listed). Refuses,
 * before writing anything, a bad or duplicate path, or a directory that already
 * holds files this bundle would not list — a manifest must describe the whole
 * directory.
 */
export function writeBundle(dir: string, files: BundleFile[]): Result<Manifest, string> {
  const seen = new Set<string>();
  for (const f of files) {
    const problem = bundlePathProblem(f.path);
    if (problem !== undefined) return err(`bundle path ${JSON.stringify(f.path)}: ${problem}`);
    if (seen.has(f.path)) return err(`bundle path ${JSON.stringify(f.path)} is listed twice`);
    seen.add(f.path);
  }
  // A file and a directory of the same name cannot both exist.
  for (const p of seen) {
    const segs = p.split('/');
    for (let i = 1; i < segs.length; i++) {
      const prefix = segs.slice(0, i).join('/');
      if (seen.has(prefix)) return err(`bundle path ${JSON.stringify(prefix)} is both a file and a directory of ${JSON.stringify(p)}`);
    }
  }

  try {
    const existing = walk(dir);
    const strays = existing.filter((p) => p !== MANIFEST_FILE && !seen.has(p));
    if (strays.length > 0) {
      return err(`bundle directory ${dir} already holds files this bundle would not list: ${strays.join(', ')}`);
    }

    const entries: Record<string, ManifestEntry> = {};
    for (const f of [...files].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))) {
      const data = typeof f.bytes === 'string' ? Buffer.from(f.bytes, 'utf8') : f.bytes;
      writeAtomic(join(dir, ...f.path.split('/')), data);
      entries[f.path] = { sha256: sha256(data), bytes: data.length };
    }
    const manifest: Manifest = { schema_version: MANIFEST_SCHEMA_VERSION, created_by: 'pairbench', files: entries };
    writeAtomic(join(dir, MANIFEST_FILE), Buffer.from(canonicalJson(manifest) + '\n', 'utf8'));
    return ok(manifest);
  } catch (e) {
    return err(`writing bundle ${dir}: ${errorMessage(e)}`);
  }
}

/**
 * Re-hashes every file against `manifest.json`. A missing manifest is reported as
 * missing `manifest.json`; an unreadable or malformed one (or one naming a path
 * outside the bundle) as `manifest.json` differing, with every file on disk extra.
 */
export function verifyBundle(dir: string, onProgress?: (bytes: number, total: number) => void): Result<{ ok: true; files: number }, BundleMismatch> {
  let onDisk: string[];
  try {
    onDisk = walk(dir);
  } catch {
    onDisk = [];
  }
  const others = onDisk.filter((p) => p !== MANIFEST_FILE && p !== SIGNATURE_FILE);

  let raw: Buffer;
  try {
    raw = readFileSync(join(dir, MANIFEST_FILE));
  } catch {
    return err({ differs: [], missing: [MANIFEST_FILE], extra: others });
  }
  const manifest = parseManifest(raw);
  if (manifest === undefined) return err({ differs: [MANIFEST_FILE], missing: [], extra: others });

  const differs: string[] = [];
  const missing: string[] = [];
  const listed = Object.keys(manifest.files).sort();
  const total = listed.reduce((a, p) => a + manifest.files[p]!.bytes, 0);
  const present = new Set(others);
  for (const path of listed) {
    const want = manifest.files[path]!;
    const abs = join(dir, ...path.split('/'));
    let st;
    try {
      st = lstatSync(abs);
    } catch {
      missing.push(path);
      continue;
    }
    if (!st.isFile()) {
      differs.push(path);
      continue;
    }
    // Streamed: a bundle file of any size is hashed in bounded memory.
    const got = st.size === want.bytes ? sha256File(abs, onProgress && ((n) => onProgress(n, total))) : undefined;
    if (!got || got.size !== want.bytes || got.digest !== want.sha256) differs.push(path);
    if (!got) onProgress?.(want.bytes, total);
  }
  const listedSet = new Set(listed);
  const extra = [...present].filter((p) => !listedSet.has(p)).sort();
  if (differs.length || missing.length || extra.length) return err({ differs, missing, extra });
  return ok({ ok: true, files: listed.length });
}

/**
 * The bundle's root digest: the SHA-256 of manifest.json's bytes. It names every file
 * of the bundle (the manifest holds each file's digest), so a CI job that publishes it
 * where the bundle cannot reach (its job log, a release note) binds the bundle to the
 * run that made it: editing any file and the manifest consistently changes it.
 */
export function rootDigest(dir: string): Result<Sha256, string> {
  try {
    return ok(sha256(readFileSync(join(dir, MANIFEST_FILE))));
  } catch (e) {
    return err(`cannot read ${join(dir, MANIFEST_FILE)}: ${errorMessage(e)}`);
  }
}

interface SignatureFile {
  schema_version: 1;
  algorithm: 'ed25519';
  /** SHA-256 of the public key (SPKI DER), for telling keys apart. */
  key_id: string;
  /** Base64 Ed25519 signature of manifest.json's bytes. */
  signature: string;
}

/** Signs manifest.json with an Ed25519 private key (PEM), writing manifest.sig.json beside it. */
export function signBundle(dir: string, privateKeyPem: string): Result<{ key_id: string }, string> {
  let key: KeyObject;
  try {
    key = createPrivateKey(privateKeyPem);
  } catch (e) {
    return err(`the signing key is not a PEM private key: ${errorMessage(e)}`);
  }
  if (key.asymmetricKeyType !== 'ed25519')
    return err(`the signing key is ${key.asymmetricKeyType ?? 'not asymmetric'}, not Ed25519 (make one with: openssl genpkey -algorithm ed25519 -out key.pem)`);
  const manifest = readFileSync(join(dir, MANIFEST_FILE));
  const keyId = sha256(createPublicKey(key).export({ type: 'spki', format: 'der' }));
  const body: SignatureFile = { schema_version: 1, algorithm: 'ed25519', key_id: keyId, signature: cryptoSign(null, manifest, key).toString('base64') };
  writeAtomic(join(dir, SIGNATURE_FILE), Buffer.from(canonicalJson(body) + '\n'));
  return ok({ key_id: keyId });
}

/** Checks manifest.sig.json against manifest.json with an Ed25519 public key (PEM). */
export function checkSignature(dir: string, publicKeyPem: string): Result<{ key_id: string }, string> {
  let key: KeyObject;
  try {
    key = createPublicKey(publicKeyPem);
  } catch (e) {
    return err(`the key is not a PEM public key: ${errorMessage(e)}`);
  }
  let sig: SignatureFile;
  try {
    sig = JSON.parse(readFileSync(join(dir, SIGNATURE_FILE), 'utf8')) as SignatureFile;
  } catch {
    return err(`the bundle has no readable ${SIGNATURE_FILE}: it was not signed (export --sign KEY)`);
  }
  const keyId = sha256(key.export({ type: 'spki', format: 'der' }));
  if (sig.algorithm !== 'ed25519' || typeof sig.signature !== 'string') return err(`${SIGNATURE_FILE} is not an Ed25519 signature`);
  if (sig.key_id !== keyId) return err(`${SIGNATURE_FILE} was made with key ${String(sig.key_id).slice(0, 16)}, not with this key (${keyId.slice(0, 16)})`);
  const manifest = readFileSync(join(dir, MANIFEST_FILE));
  return cryptoVerify(null, manifest, key, Buffer.from(sig.signature, 'base64'))
    ? ok({ key_id: keyId })
    : err(`the signature does not match manifest.json: the manifest was changed after it was signed`);
}

function parseManifest(raw: Buffer): Manifest | undefined {
  let value: unknown;
  try {
    value = JSON.parse(raw.toString('utf8'));
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const m = value as Record<string, unknown>;
  if (m['schema_version'] !== MANIFEST_SCHEMA_VERSION || m['created_by'] !== 'pairbench') return undefined;
  const files = m['files'];
  if (typeof files !== 'object' || files === null || Array.isArray(files)) return undefined;
  const out: Record<string, ManifestEntry> = {};
  for (const [path, entry] of Object.entries(files as Record<string, unknown>)) {
    if (bundlePathProblem(path) !== undefined) return undefined;
    if (typeof entry !== 'object' || entry === null) return undefined;
    const e = entry as Record<string, unknown>;
    const digest = e['sha256'];
    const bytes = e['bytes'];
    if (typeof digest !== 'string' || !isSha256(digest)) return undefined;
    if (typeof bytes !== 'number' || !Number.isSafeInteger(bytes) || bytes < 0) return undefined;
    out[path] = { sha256: digest, bytes };
  }
  return { schema_version: MANIFEST_SCHEMA_VERSION, created_by: 'pairbench', files: out };
}

/**
 * Every entry under `dir` that is not a directory, as forward-slash relative paths,
 * sorted. Symlinks and other non-regular entries are listed too (never followed),
 * so a verifier reports them rather than reading through them.
 */
function walk(dir: string): string[] {
  const out: string[] = [];
  const visit = (abs: string, rel: string): void => {
    let entries;
    try {
      entries = readdirSync(abs, { withFileTypes: true });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT' && rel === '') return;
      throw e;
    }
    for (const ent of entries) {
      const r = rel === '' ? ent.name : `${rel}/${ent.name}`;
      if (ent.isDirectory()) visit(join(abs, ent.name), r);
      else out.push(r);
    }
  };
  visit(dir, '');
  return out.sort();
}

/** No fsync per file: a bundle is written into a work directory and stored (or written out and synced once) as a whole; the rename still makes each file appear whole. */
function writeAtomic(target: string, data: Buffer): void {
  writeFileAtomic(target, data, { label: TEMP_PREFIX.replace(/-$/, ''), sync: false });
}

// ---------------------------------------------------------------------------
// Redaction

/** A host path and the placeholder that replaces it, e.g. {path: '/home/ci/proj', as: '<project>'}. */
export interface HostPath {
  path: string;
  as: string;
}

export interface RedactOptions {
  /**
   * Host path prefixes to hide. A plain string is replaced by `<home>` when it is
   * the user's home directory (or $HOME) and by `<host-path>` otherwise; give
   * `{path, as}` to choose the placeholder (`<project>`, `<store>`, `<work>`...).
   * Longer paths are replaced first, so a project inside $HOME becomes `<project>`.
   */
  hostPaths: Array<string | HostPath>;
  /** Literal secret values (e.g. the API keys the run was given) to replace wherever they appear. */
  secrets?: string[];
  /** The home directory used to name plain-string paths; defaults to $HOME. */
  home?: string;
}

export const REDACTED = '[redacted]';

const SECRET_FIELD = String.raw`[A-Za-z0-9_.-]*(?:key|keys|token|secret|secrets|password|passwd|credential|credentials|authorization|cookie)`;

/** Credential shapes, applied in order; each replacement keeps the name and hides the value. */
const PATTERNS: Array<[RegExp, string]> = [
  // JSON fields: "api_key": "...", "x-api-key": "...", "authorization": "Bearer ..."
  [new RegExp(String.raw`("${SECRET_FIELD}"\s*:\s*)"(?:[^"\\]|\\.)*"`, 'gi'), `$1"${REDACTED}"`],
  // The same inside a JSON string (escaped quotes), as in a trajectory's tool output.
  [new RegExp(String.raw`(\\"${SECRET_FIELD}\\"\s*:\s*)\\"(?:(?!\\").)*\\"`, 'gi'), `$1\\"${REDACTED}\\"`],
  // HTTP header lines: x-api-key: ..., Authorization: Bearer ...
  [
    /^(\s*(?:[<>]\s*)?(?:x-api-key|api-key|x-goog-api-key|authorization|proxy-authorization|cookie|set-cookie)\s*:[ \t]*)(?!\[redacted\])\S.*$/gim,
    `$1${REDACTED}`,
  ],
  // Environment assignments: ANTHROPIC_API_KEY=..., export OPENAI_API_KEY="..."
  [/\b([A-Za-z0-9_]*(?:API_KEY|_KEY|TOKEN|SECRET|PASSWORD)\s*=\s*)(?!\[redacted\])(?:"[^"\n]*"|'[^'\n]*'|[^\s"',;]+)/g, `$1${REDACTED}`],
  // Query parameters: ?key=..., &api_key=..., &access_token=...
  [/([?&](?:key|api_key|apikey|access_token|token)=)(?!\[redacted\])[^&\s"'#]+/gi, `$1${REDACTED}`],
  // Bearer / Basic tokens anywhere.
  [/\b(Bearer|Basic)\s+(?!\[redacted\])[A-Za-z0-9._~+/=-]{8,}/g, `$1 ${REDACTED}`],
  // Well-known key shapes anywhere: sk-..., sk-ant-..., GitHub, AWS, Google, Slack.
  [/\bsk-[A-Za-z0-9_-]{8,}/g, REDACTED],
  [/\bgh[pousr]_[A-Za-z0-9]{20,}/g, REDACTED],
  [/\bgithub_pat_[A-Za-z0-9_]{20,}/g, REDACTED],
  [/\bAKIA[0-9A-Z]{16}\b/g, REDACTED],
  [/\bAIza[0-9A-Za-z_-]{35}/g, REDACTED],
  [/\bxox[abprs]-[A-Za-z0-9-]{10,}/g, REDACTED],
];

/**
 * Hides host paths and credentials in text bound for a bundle (logs, gateway logs,
 * trajectories). Literal secrets first, then credential shapes, then host paths.
 * Idempotent: redacting twice gives the same text.
 */
export function redact(text: string, options: RedactOptions): string {
  let out = text;
  for (const s of options.secrets ?? []) {
    if (s.length < 4) continue; // a one-letter "secret" would shred the text and hide nothing
    out = out.split(s).join(REDACTED);
  }
  for (const [re, replacement] of PATTERNS) out = out.replace(re, replacement);

  const home = trimSlash(options.home ?? process.env['HOME'] ?? '');
  const paths = options.hostPaths
    .map((p): HostPath => (typeof p === 'string' ? { path: p, as: home !== '' && trimSlash(p) === home ? '<home>' : '<host-path>' } : p))
    .map((p) => ({ path: trimSlash(p.path), as: p.as }))
    .filter((p) => p.path.length > 1) // never "/" or "": that would rewrite every absolute path
    .sort((a, b) => b.path.length - a.path.length);
  for (const p of paths) {
    // A prefix only at a path boundary: /home/ci must not eat /home/ci2.
    const re = new RegExp(escapeRegExp(p.path) + String.raw`(?![A-Za-z0-9_~+-]|\.[A-Za-z0-9_])`, 'g');
    out = out.replace(re, () => p.as);
  }
  return out;
}

function trimSlash(p: string): string {
  return p.length > 1 ? p.replace(/\/+$/, '') : p;
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
