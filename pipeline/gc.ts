import { readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { CacheKey, Sha256 } from './digest.js';
import type { Store } from './store/store.js';

/** What was used or written this recently is kept by default (gc --keep-newer-than). */
export const GC_GRACE_MS = 3_600_000;

export interface GcOptions {
  maxBytes: number;
  dryRun: boolean;
  /** Keys the current config reaches: never removed. */
  reachable: ReadonlySet<string>;
  /**
   * Records used or written, and blobs written, this recently (ms) are kept whatever the cap: a
   * run that was killed before it rooted its results, or one on another machine sharing the store,
   * finds them on its next run.
   */
  keepNewerThanMs: number;
  now?: number;
}

export interface GcReport {
  dry_run: boolean;
  max_bytes: number;
  bytes_before: number;
  bytes_after: number;
  records_total: number;
  records_reachable: number;
  /** Records and blobs kept because they are newer than the grace period. */
  records_recent: number;
  blobs_recent: number;
  removed_records: { key: string; node: string; last_used: string; bytes: number }[];
  removed_blobs: number;
  removed_blob_bytes: number;
  removed_temp: string[];
  removed_locks: string[];
}

/**
 * Least-recently-used collection down to a size cap. Blobs no record needs go
 * first, then records by last use (their blobs with them when nothing else needs
 * them). What the current config reaches is never removed, nor anything newer than
 * the grace period. Also clears temp files and locks left by killed runs. The caller
 * holds the store alone (StoreUse.exclusive): no run is live beside it.
 */
export function collectGarbage(store: Store, options: GcOptions): GcReport {
  const lastAccess = store.lastAccess();
  const records: { key: CacheKey; node: string; bytes: number; lastUsed: number; blobs: Sha256[] }[] = [];
  const refs = new Map<string, number>();
  for (const r of store.actions.list()) {
    const found = store.actions.get(r.key);
    if (found.status !== 'hit') {
      records.push({ key: r.key, node: '(corrupt record)', bytes: r.size, lastUsed: 0, blobs: [] });
      continue;
    }
    const blobs = Object.keys(found.record.stamps) as Sha256[];
    if (found.record.log) blobs.push(found.record.log);
    for (const b of blobs) refs.set(b, (refs.get(b) ?? 0) + 1);
    records.push({ key: r.key, node: found.record.node, bytes: r.size, lastUsed: Math.max(lastAccess.get(r.key) ?? 0, r.mtimeMs), blobs });
  }
  // Transient tries waiting for their key's next result, and the log of a node's last failure, are evidence: their blobs stay.
  for (const h of store.nodes.list()) {
    if (h.last_failure?.log) refs.set(h.last_failure.log, (refs.get(h.last_failure.log) ?? 0) + 1);
    for (const t of h.tries ?? []) {
      for (const e of Object.values(t.outputs)) {
        try {
          for (const d of store.cas.closure(e)) refs.set(d, (refs.get(d) ?? 0) + 1);
        } catch {
          // a tree already gone: nothing left to keep
        }
      }
    }
  }
  const cutoff = (options.now ?? Date.now()) - options.keepNewerThanMs;
  const blobSizes = new Map<string, number>();
  const recentBlobs = new Set<string>();
  for (const b of store.cas.list()) {
    blobSizes.set(b.digest, b.size);
    if (b.mtimeMs >= cutoff) recentBlobs.add(b.digest);
  }
  const recent = (r: { lastUsed: number }) => r.lastUsed >= cutoff;
  let total = records.reduce((a, r) => a + r.bytes, 0) + [...blobSizes.values()].reduce((a, b) => a + b, 0);
  const report: GcReport = {
    dry_run: options.dryRun,
    max_bytes: options.maxBytes,
    bytes_before: total,
    bytes_after: total,
    records_total: records.length,
    records_reachable: records.filter((r) => options.reachable.has(r.key)).length,
    records_recent: records.filter((r) => !options.reachable.has(r.key) && recent(r)).length,
    blobs_recent: recentBlobs.size,
    removed_records: [],
    removed_blobs: 0,
    removed_blob_bytes: 0,
    removed_temp: [],
    removed_locks: [],
  };
  const removeBlob = (d: string) => {
    const size = blobSizes.get(d);
    if (size === undefined || recentBlobs.has(d)) return;
    blobSizes.delete(d);
    total -= size;
    report.removed_blobs++;
    report.removed_blob_bytes += size;
    if (!options.dryRun) store.cas.remove(d as Sha256);
  };
  // 1. Blobs that no record refers to (stored inputs, logs of failures, leftovers).
  for (const d of [...blobSizes.keys()]) {
    if (total <= options.maxBytes) break;
    if (!refs.has(d)) removeBlob(d);
  }
  // 2. Records the config does not reach, least recently used first.
  const candidates = records.filter((r) => !options.reachable.has(r.key) && !recent(r)).sort((a, b) => a.lastUsed - b.lastUsed);
  for (const r of candidates) {
    if (total <= options.maxBytes) break;
    total -= r.bytes;
    report.removed_records.push({ key: r.key, node: r.node, last_used: new Date(r.lastUsed).toISOString(), bytes: r.bytes });
    if (!options.dryRun) store.actions.remove(r.key);
    for (const b of r.blobs) {
      const n = (refs.get(b) ?? 1) - 1;
      refs.set(b, n);
      if (n === 0) removeBlob(b);
    }
  }
  report.bytes_after = total;

  // 3. Temp files and work directories of runs that are gone; locks of dead holders.
  report.removed_temp.push(...store.reapDeadTemp({ dryRun: Boolean(options.dryRun) }));
  for (const name of safeList(store.locks.dir)) {
    const base = name.replace(/\.lock$/, '');
    if (store.locks.staleReason(base)) {
      report.removed_locks.push(base);
      if (!options.dryRun) rmSync(store.locks.pathOf(base), { force: true });
    }
  }
  if (!options.dryRun) store.compactAccess(lastAccess);
  return report;
}

function safeList(dir: string): string[] {
  try {
    return readdirSync(dir).filter((n) => {
      try {
        statSync(join(dir, n));
        return true;
      } catch {
        return false;
      }
    });
  } catch {
    return [];
  }
}
