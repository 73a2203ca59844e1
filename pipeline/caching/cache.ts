/**
 * One interface for every cache tier the engine reads and writes: the local store, the remote
 * cache, and the two in tiers (caching/tiered-cache.ts). A tier's lookup answers `hit` with the
 * record and a way to make its outputs readable here (`apply`), or `miss`; `set` stores a record
 * whose outputs' blobs are in the local store. The engine knows nothing more of where a record
 * lives; the shared test suite (test/cache-contract.ts) holds every implementation to this.
 */
import type { CacheKey } from '../digest.js';
import type { ActionRecord } from '../store/action-cache.js';
import type { OutputEntry } from '../store/cas.js';

export interface CacheHit {
  status: 'hit';
  record: ActionRecord;
  /** Where it was found: this store, a read-only store behind it (copied here), or a remote tier (the last two: built elsewhere). */
  tier: 'local' | 'read-only' | 'remote';
  /**
   * Makes these outputs' blobs (by default all of the record's) readable from the local store,
   * fetching what it lacks; false when the tier cannot supply them intact.
   */
  apply(entries?: readonly OutputEntry[]): Promise<boolean>;
  /** A record for the key that did not verify and was dropped before this one was found. */
  dropped?: string;
}

export interface CacheMiss {
  status: 'miss';
  /** A record for the key that did not verify (a corrupt blob, a mismatched pre-image): dropped, so the node is rebuilt. */
  dropped?: string;
}

export type CacheLookup = CacheHit | CacheMiss;

export interface Cache {
  /**
   * The record for `key`. A caller that holds the pre-image the key was computed from passes
   * it (a local tier compares bytes instead of hashing again). A tier that answers without I/O
   * answers synchronously: a no-op run settles its cached nodes without a promise each.
   */
  get(key: CacheKey, preimage?: string): CacheLookup | Promise<CacheLookup>;
  /** Stores `record` (its outputs' blobs are in the local store) in every tier that takes writes. */
  set(record: ActionRecord): void | Promise<void>;
  /** Finishes what the cache deferred (a tiered cache uploads the local hits its remote lacks). */
  flush?(): Promise<void>;
}

/** Whether a lookup settled without I/O. */
export function settledNow(found: CacheLookup | Promise<CacheLookup>): found is CacheLookup {
  return !(found instanceof Promise);
}
