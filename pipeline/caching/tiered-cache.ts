/**
 * The local store in front of the remote tier: a local hit answers at once (and, when the
 * remote is not known to hold it, is uploaded at flush, so every job sharing the remote finds
 * it); a local miss is looked up remotely. A hit's apply fetches from the remote whatever the
 * local store lacks (a record read lazily earlier names blobs it never fetched).
 */
import type { CacheKey } from '../digest.js';
import type { ActionRecord } from '../store/action-cache.js';
import pLimit from 'p-limit';
import type { Cache, CacheHit, CacheLookup } from './cache.js';
import type { LocalCache } from './local-cache.js';
import type { RemoteTier } from './remote-tier.js';

export interface TieredOptions {
  /** Upload the local hits the remote is not known to hold (at flush). Off where others write the remote (a worker queue). */
  publishLocalHits?: boolean;
}

export class TieredCache implements Cache {
  /** Local hits the remote tier is not known to hold: uploaded at flush. */
  private readonly unpublished: ActionRecord[] = [];

  constructor(
    readonly local: LocalCache,
    readonly remote: RemoteTier,
    private readonly options: TieredOptions = {},
  ) {}

  get(key: CacheKey, preimage?: string): CacheLookup | Promise<CacheLookup> {
    const here = this.local.get(key, preimage);
    if (here.status === 'hit') {
      if (this.options.publishLocalHits !== false && this.remote.writable && !this.remote.holds(key)) this.unpublished.push(here.record);
      return this.withRemoteBlobs(here);
    }
    if (!this.remote.active) return here;
    return this.remote.get(key).then((there) => (here.dropped ? { ...there, dropped: here.dropped } : there));
  }

  /** A local hit whose blobs the remote tier supplies where the local store lacks them. */
  private withRemoteBlobs(hit: CacheHit): CacheHit {
    if (!this.remote.active) return hit;
    return { ...hit, apply: (entries = Object.values(hit.record.outputs)) => (this.remote.active ? this.remote.fetch(entries) : hit.apply(entries)) };
  }

  async set(record: ActionRecord): Promise<void> {
    this.local.set(record);
    await this.remote.set(record);
  }

  async flush(): Promise<void> {
    const upload = pLimit(8);
    const pending = this.unpublished.splice(0);
    await Promise.all(pending.map((r) => upload(() => this.remote.set(r))));
  }
}
