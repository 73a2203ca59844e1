/**
 * Other stores as read-only tiers behind the local one (`run --read-store DIR`): the store of the
 * base branch that actions/cache restored, so a pull request re-runs only what its change touches
 * with no server at all. Content addresses make this safe: a record there is a hit here only if
 * it verifies there (its pre-image hashes to the key, its outputs to their digest, every blob it
 * names is intact), and it is copied here, each blob re-hashed as it is copied, before anything
 * reads it. Nothing is ever written to those stores: this run's own results go to its own store.
 */
import type { CacheKey, Sha256 } from '../digest.js';
import type { ActionRecord } from '../store/action-cache.js';
import { Store } from '../store/store.js';
import { lookup } from './lookup.js';

/** The record for `key` in one of `others` (the first that holds it intact), made local with its blobs; undefined when none can. */
export function copyFromReadOnly(local: Store, others: readonly Store[], key: CacheKey, preimage?: string): ActionRecord | undefined {
  for (const other of others) {
    const found = lookup(other, key, preimage);
    if (found.status !== 'hit') continue;
    const r = found.record;
    const blobs = new Set<Sha256>(Object.values(r.outputs).flatMap((e) => [...other.cas.closure(e)]));
    if (r.log) blobs.add(r.log);
    let intact = true;
    for (const d of blobs) {
      if (local.cas.has(d)) continue;
      // Re-hashed on the way in: the bytes stored here are the bytes checked.
      if (local.cas.putFile(other.cas.pathOf(d)).digest !== d) {
        intact = false;
        break;
      }
    }
    if (!intact) continue;
    const stamps: Record<string, string> = {};
    for (const entry of Object.values(r.outputs)) for (const d of local.cas.closure(entry)) stamps[d] = local.cas.stampForRecord(d)!;
    const copy: ActionRecord = {
      schema: 1,
      key: r.key,
      preimage: r.preimage,
      node: r.node,
      step: r.step,
      kind: r.kind,
      outputs: r.outputs,
      outputs_digest: r.outputs_digest,
      stamps,
      log: r.log,
      started_at: r.started_at,
      duration_ms: r.duration_ms,
      pairbench_version: r.pairbench_version,
      ...(r.provenance !== undefined ? { provenance: r.provenance } : {}),
    };
    // It can be had again from where it came: not journaled.
    local.actions.put(copy, { durable: false });
    return copy;
  }
  return undefined;
}

/** Stores at these directories, to read from; a directory that is not a store is named. */
export function openReadOnlyStores(dirs: readonly string[], exists: (dir: string) => boolean): { stores: Store[]; missing: string[] } {
  const missing = dirs.filter((d) => !exists(d));
  return { stores: dirs.filter(exists).map((d) => new Store(d)), missing };
}
