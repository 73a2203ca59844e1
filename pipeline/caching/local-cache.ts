/** The local store as a cache tier: records verified against their keys, hits only when every blob they name is intact. */
import type { CacheKey, Sha256 } from '../digest.js';
import type { ActionRecord } from '../store/action-cache.js';
import type { Store } from '../store/store.js';
import type { Cache, CacheHit, CacheLookup } from './cache.js';

export type Lookup = { status: 'hit'; record: ActionRecord } | { status: 'miss' } | { status: 'corrupt'; reason: string };

/** A record is a hit only if it verifies and every blob it names is intact. Reads the store, changes nothing. */
export function lookup(store: Store, key: CacheKey, preimage?: string): Lookup {
  const found = store.actions.get(key, preimage);
  if (found.status !== 'hit') return found;
  const stamps = found.stampPairs ?? Object.entries(found.record.stamps).flat();
  for (let i = 0; i < stamps.length; i += 2) {
    const digest = stamps[i]!;
    if (!store.cas.isIntact(digest as Sha256, stamps[i + 1])) {
      return { status: 'corrupt', reason: `stored output blob ${digest.slice(0, 12)} is missing or does not match its digest` };
    }
  }
  return found;
}

/** Drops a record and those of its blobs that no longer read back as their digest. */
export function dropRecord(store: Store, key: CacheKey): void {
  const found = store.actions.get(key);
  if (found.status === 'hit') {
    for (const d of Object.keys(found.record.stamps)) {
      try {
        store.cas.read(d as Sha256);
      } catch {
        store.cas.remove(d as Sha256);
      }
    }
  }
  store.actions.remove(key);
}

const applied = (): Promise<boolean> => Promise.resolve(true);

export class LocalCache implements Cache {
  constructor(readonly store: Store) {}

  /** A hit here names only blobs that are here (a record fetched without its blobs names none). */
  get(key: CacheKey, preimage?: string): CacheLookup {
    const found = lookup(this.store, key, preimage);
    if (found.status === 'hit') return { status: 'hit', record: found.record, tier: 'local', apply: applied } satisfies CacheHit;
    if (found.status === 'miss') return found;
    dropRecord(this.store, key);
    return { status: 'miss', dropped: found.reason };
  }

  set(record: ActionRecord): void {
    this.store.actions.put(record);
  }
}
