/**
 * The second tier behind the local store: a remote cache speaking the Bazel remote-cache
 * HTTP protocol (GET/PUT/HEAD /ac/<key> for action records, /cas/<sha256> for blobs), so
 * bazel-remote, nginx with WebDAV, or any compatible server (backed by S3, GCS) works.
 *
 * Records are signed (HMAC-SHA256 over their canonical JSON, key id in the record); one
 * whose signature fails or whose key is unknown is ignored, never trusted. A server
 * that fails, refuses or disappears turns the remote tier off for the rest of the run
 * with one warning: the local store always holds the complete result.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { createWriteStream, readFileSync, rmSync } from 'node:fs';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import pLimit from 'p-limit';
import { canonicalJson } from '../canonical-json.js';
import { cacheKeyOf, type CacheKey, type Sha256 } from '../digest.js';
import { errorMessage } from '../result.js';
import { outputsDigest, plainRecord, type ActionRecord } from './action-cache.js';
import { tempPath } from '../atomic-write.js';
import type { HeldRecords } from './remote-held.js';
import { HttpClient, type HttpResponse } from './http-client.js';
import { readBody } from '../read-body.js';
import type { Store } from './store.js';

export interface RemoteCacheOptions {
  url: string;
  mode: 'read-write' | 'read-only';
  /** Authorization header value (e.g. "Bearer ..."), from the env var the config names. */
  authorization?: string;
  /** Signing keys: the first signs, all verify. Without one, nothing is uploaded or trusted. */
  keys: { id: string; secret: string }[];
  /** Parallel transfers. */
  parallel?: number;
  /** Per request. */
  timeoutMs?: number;
  warn(message: string): void;
}

/** What travels: the record without its local stamps, with a signature over the rest. */
interface SignedRecord {
  record: Omit<ActionRecord, 'stamps'>;
  signature: { key_id: string; hmac_sha256: string };
}

function isSignedRecord(v: unknown): v is SignedRecord {
  const isObject = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);
  return (
    isObject(v) &&
    isObject(v['record']) &&
    isObject(v['signature']) &&
    typeof v['signature']['key_id'] === 'string' &&
    typeof v['signature']['hmac_sha256'] === 'string'
  );
}

export type RemoteHit = { status: 'hit'; record: ActionRecord } | { status: 'miss' } | { status: 'rejected'; reason: string };

/** "id1:secret1,id2:secret2" -> keys (ids and secrets must be non-empty). */
export function parseKeys(value: string | undefined): { id: string; secret: string }[] {
  if (!value) return [];
  return value
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)
    .map((p) => {
      const i = p.indexOf(':');
      return i > 0 && i < p.length - 1 ? { id: p.slice(0, i), secret: p.slice(i + 1) } : null;
    })
    .filter((k): k is { id: string; secret: string } => k !== null);
}

/**
 * Whether a record whose signature verifies is the one for `key`: its key, the hash of its
 * pre-image and its outputs' digest. A signer can be wrong too (a writer's bug, an old
 * version): a record without one of them is not a match, never a crash of the node.
 */
function matchesKey(r: Omit<ActionRecord, 'stamps'>, key: CacheKey): boolean {
  try {
    return r.key === key && typeof r.preimage === 'string' && cacheKeyOf(r.preimage) === key && outputsDigest(r.outputs) === r.outputs_digest;
  } catch {
    return false;
  }
}

function hmac(secret: string, body: string): string {
  return createHmac('sha256', secret).update(body).digest('hex');
}

/** A signed action record is a few KB: an answer past this is not one (and is not held in memory). */
const MAX_RECORD_BYTES = 16 * 1024 * 1024;

export class RemoteCache {
  private disabled = false;
  private readonly limit;
  private readonly base: string;
  /** Blobs known to be on the server (HEAD answered or uploaded in this run). */
  private readonly present = new Set<string>();
  /** Blobs the server answered with other bytes: uploaded again when this run has the right ones. */
  private readonly wrongOnServer = new Set<string>();
  readonly stats = { records_read: 0, records_written: 0, blobs_read: 0, blobs_written: 0, rejected: 0 };
  private held: HeldRecords | undefined;

  private readonly http: HttpClient;

  constructor(private readonly options: RemoteCacheOptions) {
    this.limit = pLimit(options.parallel ?? 8);
    this.base = options.url.replace(/\/+$/, '');
    this.http = new HttpClient(this.base);
  }

  get active(): boolean {
    return !this.disabled;
  }

  /** Whether this run uploads: read-write, a signing key, and the server still answering. */
  get writable(): boolean {
    return this.options.mode === 'read-write' && this.options.keys.length > 0 && !this.disabled;
  }

  private heldBy(store: Store): HeldRecords {
    return (this.held ??= store.remoteHeld(this.base));
  }

  /** Whether `store` put this record on the server, or read it from there (in any run): then a local hit needs no upload. */
  knownToHold(store: Store, key: CacheKey): boolean {
    return this.heldBy(store).has(key);
  }

  /** Turns the tier off for this run, once, with the reason. */
  private degrade(why: string): void {
    if (this.disabled) return;
    this.disabled = true;
    this.options.warn(
      `remote cache ${this.base} ${why}: continuing with the local store only (nothing is lost; results stay local until a later run uploads them)`,
    );
  }

  private async request(method: 'GET' | 'PUT' | 'HEAD', path: string, body?: Buffer): Promise<HttpResponse | null> {
    if (this.disabled) return null;
    const attempt = () =>
      this.http.request(method, path, {
        headers: {
          ...(this.options.authorization ? { authorization: this.options.authorization } : {}),
          ...(body ? { 'content-type': 'application/octet-stream' } : {}),
        },
        ...(body ? { body } : {}),
        timeoutMs: this.options.timeoutMs ?? 30_000,
      });
    // Two tries: a dropped connection or a 429/5xx may be passing; twice is not.
    for (let i = 0; i < 2; i++) {
      try {
        const res = await attempt();
        if (res.status === 429 || res.status >= 500) {
          res.discard();
          if (i === 1) return (this.degrade(`answered HTTP ${res.status} to ${method} ${path}`), null);
          await new Promise((r) => setTimeout(r, 200));
          continue;
        }
        if (res.status === 401 || res.status === 403) {
          res.discard();
          return (this.degrade(`refused ${method} ${path} (HTTP ${res.status}): check the credentials in cache.auth_env`), null);
        }
        return res;
      } catch (e) {
        if (i === 1) return (this.degrade(`is unreachable (${errorMessage(e)})`), null);
        await new Promise((r) => setTimeout(r, 200));
      }
    }
    return null;
  }

  /** A record the server holds for `key`, verified: signature, key and output digest. */
  async getRecord(store: Store, key: CacheKey): Promise<RemoteHit> {
    const res = await this.request('GET', `/ac/${key}`);
    if (!res) return { status: 'miss' };
    if (!res.ok) return (res.discard(), { status: 'miss' });
    let body: unknown;
    try {
      body = JSON.parse((await readBody(res.body, MAX_RECORD_BYTES)).toString('utf8'));
    } catch (e) {
      return this.reject(key, e instanceof SyntaxError ? 'the record is not JSON' : `the record could not be read (${errorMessage(e)})`);
    }
    // The server is not trusted: the shape is checked before the signature is, the record's fields only once it verifies.
    if (!isSignedRecord(body)) return this.reject(key, 'it is not a signed record ({record: {...}, signature: {key_id, hmac_sha256}})');
    const signed = body;
    const k = this.options.keys.find((x) => x.id === signed.signature.key_id);
    if (!k) return this.reject(key, `signed by an unknown key ${JSON.stringify(signed.signature.key_id)}`);
    const want = hmac(k.secret, canonicalJson(signed.record));
    const got = signed.signature.hmac_sha256;
    if (got.length !== want.length || !timingSafeEqual(Buffer.from(got), Buffer.from(want))) return this.reject(key, 'its signature does not verify');
    const r = signed.record;
    if (!matchesKey(r, key)) return this.reject(key, 'it does not match its key');
    this.stats.records_read++;
    this.heldBy(store).add(key);
    return { status: 'hit', record: { ...r, stamps: {} } };
  }

  private reject(key: CacheKey, reason: string): RemoteHit {
    this.stats.rejected++;
    this.options.warn(`remote record ${key.slice(0, 12)} ignored: ${reason} (never trusted; the node is built here)`);
    return { status: 'rejected', reason };
  }

  /** Fetches every blob of `digests` the local store lacks, verifying each; false if any is missing or wrong. */
  async fetchBlobs(store: Store, digests: Iterable<Sha256>): Promise<boolean> {
    const wanted = [...new Set(digests)].filter((d) => !store.cas.has(d));
    const results = await Promise.all(wanted.map((d) => this.limit(() => this.fetchBlob(store, d))));
    return results.every(Boolean);
  }

  private async fetchBlob(store: Store, digest: Sha256): Promise<boolean> {
    const res = await this.request('GET', `/cas/${digest}`);
    if (!res || !res.ok) {
      res?.discard();
      return false;
    }
    const tmp = tempPath(store.tmpDir, 'remote');
    try {
      // Hashed as it is written: one write, and the bytes stored are the bytes checked.
      const hash = createHash('sha256');
      const hashing = new Transform({ transform: (chunk: Buffer, _enc, next) => (hash.update(chunk), next(null, chunk)) });
      await pipeline(res.body, hashing, createWriteStream(tmp, { mode: 0o600 }));
      const got = hash.digest('hex');
      if (got !== digest) {
        this.options.warn(`remote blob ${digest.slice(0, 12)} has other content (${got.slice(0, 12)}): ignored; what needs it is built here`);
        // A read-write run that builds it again puts the right bytes back (putBlob), whatever HEAD says.
        this.wrongOnServer.add(digest);
        return false;
      }
      store.cas.adopt(tmp, digest);
      this.stats.blobs_read++;
      return true;
    } catch (e) {
      this.options.warn(`remote blob ${digest.slice(0, 12)}: ${errorMessage(e)}`);
      return false;
    } finally {
      rmSync(tmp, { force: true });
    }
  }

  /** Uploads the record's blobs (those the server lacks), then the signed record: a record never names a missing blob. */
  async putRecord(store: Store, record: ActionRecord, blobs: Iterable<Sha256>): Promise<void> {
    if (this.options.mode !== 'read-write' || this.disabled) return;
    const key = this.options.keys[0];
    if (!key) return;
    const uploads = await Promise.all([...new Set(blobs)].map((d) => this.limit(() => this.putBlob(store, d))));
    if (!uploads.every(Boolean) || this.disabled) return;
    const { stamps: _local, ...rest } = plainRecord(record);
    const signed: SignedRecord = { record: rest, signature: { key_id: key.id, hmac_sha256: hmac(key.secret, canonicalJson(rest as never)) } };
    const res = await this.request('PUT', `/ac/${record.key}`, Buffer.from(JSON.stringify(signed)));
    if (res) {
      res.discard();
      if (res.ok) {
        this.stats.records_written++;
        this.heldBy(store).add(record.key);
      }
    }
  }

  private async putBlob(store: Store, digest: Sha256): Promise<boolean> {
    if (this.present.has(digest)) return true;
    const wrong = this.wrongOnServer.has(digest);
    const head = wrong ? null : await this.request('HEAD', `/cas/${digest}`);
    if (!head && !wrong) return false;
    head?.discard();
    if (head?.ok) {
      this.present.add(digest);
      return true;
    }
    const res = await this.request('PUT', `/cas/${digest}`, readFileSync(store.cas.pathOf(digest)));
    if (!res) return false;
    res.discard();
    if (!res.ok) return false;
    this.present.add(digest);
    this.stats.blobs_written++;
    return true;
  }
}
