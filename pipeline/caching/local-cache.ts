/** The local store as a cache tier: records verified against their keys, hits only when every blob they name is intact. */
export { lookup, type Lookup } from './lookup.js';
import type { CacheKey, Sha256 } from '../digest.js';
import type { ActionRecord } from '../store/action-cache.js';
import type { Store } from '../store/store.js';
import type { Cache, CacheHit, CacheLookup } from './cache.js';
import { lookup } from './lookup.js';
import { copyFromReadOnly } from './read-only-stores.js';

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
  /** `behind`: read-only stores a miss here is looked up in (their record and blobs are copied here on a hit). */
  constructor(
    readonly store: Store,
    readonly behind: readonly Store[] = [],
  ) {}

  /** A hit here names only blobs that are here (a record fetched without its blobs names none). */
  get(key: CacheKey, preimage?: string): CacheLookup {
    const found = lookup(this.store, key, preimage);
    if (found.status === 'hit') return { status: 'hit', record: found.record, tier: 'local', apply: applied } satisfies CacheHit;
    const dropped = found.status === 'corrupt' ? found.reason : undefined;
    if (found.status === 'corrupt') dropRecord(this.store, key);
    const copied = this.behind.length ? copyFromReadOnly(this.store, this.behind, key, preimage) : undefined;
    if (copied) return { status: 'hit', record: copied, tier: 'read-only', apply: applied, ...(dropped ? { dropped } : {}) } satisfies CacheHit;
    return dropped ? { status: 'miss', dropped } : { status: 'miss' };
  }

  set(record: ActionRecord): void {
    this.store.actions.put(record);
  }
}
