import type { CacheKey, Sha256 } from '../digest.js';
import type { Store } from './store.js';
import { signersOf } from './chained-log.js';
import { recordKey } from './record-key.js';

/** What `pairbench fsck` found, and (with repair) dropped. */
export interface FsckReport {
  blobs_checked: number;
  bytes_checked: number;
  /** Blobs whose bytes do not hash to their name. */
  corrupt_blobs: Sha256[];
  records_checked: number;
  /** Records that do not verify (unreadable, key or manifest mismatch). */
  corrupt_records: { key: CacheKey; reason: string }[];
  /** Verified records that need a blob that is missing or corrupt. */
  broken_records: { key: CacheKey; node: string; blobs: Sha256[] }[];
  /** The record pack did not match its seal (it is set aside; the records it held rebuild). */
  corrupt_pack: string | null;
  logs_checked: number;
  /** Registry logs whose chain or signatures do not hold (never dropped: restore them from a copy). */
  broken_logs: { name: string; problem: string }[];
  /** Logs signed by a key other than this machine's record key (made elsewhere, or rewritten and re-signed). */
  foreign_signers: { name: string; keys: string[] }[];
  repaired: boolean;
}

/**
 * Checks the whole store: every blob is re-hashed (its size and mtime prove nothing),
 * every action record re-verified, and every blob a record needs is present and
 * intact. With `repair`, what is bad is dropped: the nodes that need it rebuild on
 * the next run.
 */
export function fsck(store: Store, options: { repair: boolean; onProgress?: (blobs: number) => void }): FsckReport {
  const report: FsckReport = {
    blobs_checked: 0,
    bytes_checked: 0,
    corrupt_blobs: [],
    records_checked: 0,
    corrupt_records: [],
    broken_records: [],
    corrupt_pack: null,
    logs_checked: 0,
    broken_logs: [],
    foreign_signers: [],
    repaired: false,
  };
  const bad = new Set<string>();
  const present = new Set<string>();
  for (const b of store.cas.list()) {
    present.add(b.digest);
    report.blobs_checked++;
    report.bytes_checked += b.size;
    if (store.cas.hashOnDisk(b.digest) !== b.digest) {
      bad.add(b.digest);
      report.corrupt_blobs.push(b.digest);
    }
    if (report.blobs_checked % 1000 === 0) options.onProgress?.(report.blobs_checked);
  }
  for (const r of store.actions.list()) {
    report.records_checked++;
    const found = store.actions.get(r.key);
    if (found.status === 'corrupt') report.corrupt_records.push({ key: r.key, reason: found.reason });
    if (found.status !== 'hit') continue;
    const missing = Object.keys(found.record.stamps).filter((d) => bad.has(d) || !present.has(d)) as Sha256[];
    if (missing.length) report.broken_records.push({ key: r.key, node: found.record.node, blobs: missing });
  }
  report.corrupt_pack = store.actions.packProblem ?? null;
  const own = recordKey().id;
  for (const name of store.logs.names()) {
    report.logs_checked++;
    const r = store.logs.read(name);
    if (!r.ok) report.broken_logs.push({ name, problem: r.problem });
    else {
      const foreign = signersOf(r.entries).filter((k) => k !== own);
      if (foreign.length) report.foreign_signers.push({ name, keys: foreign });
    }
  }
  if (options.repair) {
    for (const d of report.corrupt_blobs) store.cas.remove(d);
    for (const r of [...report.corrupt_records, ...report.broken_records]) store.actions.remove(r.key);
    report.repaired = true;
  }
  return report;
}

export function fsckClean(r: FsckReport): boolean {
  return (
    r.corrupt_blobs.length === 0 && r.corrupt_records.length === 0 && r.broken_records.length === 0 && r.corrupt_pack === null && r.broken_logs.length === 0
  );
}
