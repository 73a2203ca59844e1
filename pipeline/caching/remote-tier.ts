/**
 * The remote cache (store/remote-cache.ts: the Bazel HTTP protocol, signed records) as a cache
 * tier. A record read from it is made local without its blobs (`lazy`: they come when something
 * reads them, through the hit's apply) or with all of them fetched and verified first (`eager`).
 */
import type { CacheKey, Sha256 } from '../digest.js';
import type { ActionRecord } from '../store/action-cache.js';
import type { RemoteCache } from '../store/remote-cache.js';
import type { Store } from '../store/store.js';
import type { Cache, CacheLookup } from './cache.js';

/**
 * A record from the remote tier, made local. `eager`: every blob of its outputs fetched and
 * verified first (trees, then what they name), the record stored with fresh local stamps.
 * `lazy`: the record alone (no stamps); its blobs come when a node or a command reads them
 * (ensureLocal). Undefined when the remote has none, or (eager) cannot supply all of it.
 */
export async function readThrough(store: Store, remote: RemoteCache, key: CacheKey, blobs: 'eager' | 'lazy' = 'eager'): Promise<ActionRecord | undefined> {
  const got = await remote.getRecord(store, key);
  if (got.status !== 'hit') return undefined;
  if (blobs === 'lazy') {
    const record: ActionRecord = { ...got.record, stamps: {}, log: null };
    // Written when the run packs its records (run() ends with packLoose): one file, not one per record.
    store.actions.putFetched(record);
    return record;
  }
  if (!(await ensureLocal(store, remote, Object.values(got.record.outputs)))) return undefined;
  if (got.record.log) await remote.fetchBlobs(store, [got.record.log]);
  const stamps: Record<string, string> = {};
  for (const entry of Object.values(got.record.outputs)) for (const d of store.cas.closure(entry)) stamps[d] = store.cas.stampForRecord(d)!;
  const record: ActionRecord = { ...got.record, stamps, log: got.record.log && store.cas.has(got.record.log) ? got.record.log : null };
  store.actions.put(record, { durable: false });
  return record;
}

/** Fetches whatever the local store lacks of these outputs from the remote tier (trees first, then what they name). */
export async function ensureLocal(store: Store, remote: RemoteCache, entries: readonly { type: string; digest: Sha256 }[]): Promise<boolean> {
  let level = entries;
  while (level.length) {
    if (
      !(await remote.fetchBlobs(
        store,
        level.map((e) => e.digest),
      ))
    )
      return false;
    level = level.flatMap((e) => (e.type === 'dir' ? store.cas.readTree(e.digest).entries.flatMap((c) => (c.type === 'symlink' ? [] : [c])) : []));
  }
  return true;
}

/** The blobs a record's upload carries: its outputs' closure (its stamps) and its log. */
function recordBlobs(record: ActionRecord): Set<Sha256> {
  const blobs = new Set<Sha256>(Object.keys(record.stamps) as Sha256[]);
  if (record.log) blobs.add(record.log);
  return blobs;
}

/** Uploads a record the local store holds (its blobs first, then the signed record) when the remote tier takes writes. */
export async function writeBack(store: Store, remote: RemoteCache, record: ActionRecord): Promise<void> {
  if (!remote.active || store.actions.get(record.key).status !== 'hit') return; // transient results are not cached anywhere
  await remote.putRecord(store, record, recordBlobs(record));
}

export class RemoteTier implements Cache {
  constructor(
    readonly store: Store,
    readonly remote: RemoteCache,
    private readonly blobs: 'eager' | 'lazy' = 'lazy',
  ) {}

  get active(): boolean {
    return this.remote.active;
  }

  /** Whether this run uploads (read-write, a signing key, the server answering). */
  get writable(): boolean {
    return this.remote.writable;
  }

  /** Whether the server is known to hold the record (this store put it there or read it from there). */
  holds(key: CacheKey): boolean {
    return this.remote.knownToHold(this.store, key);
  }

  /** Fetches what the local store lacks of these outputs. */
  fetch(entries: readonly { type: string; digest: Sha256 }[]): Promise<boolean> {
    return ensureLocal(this.store, this.remote, entries);
  }

  async get(key: CacheKey): Promise<CacheLookup> {
    if (!this.remote.active) return { status: 'miss' };
    const record = await readThrough(this.store, this.remote, key, this.blobs);
    if (!record) return { status: 'miss' };
    return {
      status: 'hit',
      record,
      tier: 'remote',
      apply: (entries = Object.values(record.outputs)) => this.fetch(entries),
    };
  }

  /** Uploads the record's blobs the server lacks (from the local store), then the signed record. */
  async set(record: ActionRecord): Promise<void> {
    if (this.remote.active) await this.remote.putRecord(this.store, record, recordBlobs(record));
  }
}
