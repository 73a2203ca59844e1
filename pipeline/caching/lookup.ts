/** A record of a store, as a hit only if it verifies and every blob it names is intact. */
import type { CacheKey, Sha256 } from '../digest.js';
import type { ActionRecord } from '../store/action-cache.js';
import type { Store } from '../store/store.js';

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
