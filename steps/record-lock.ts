import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { writeFileAtomic } from '../pipeline/atomic-write.js';
import { signersOf, type ChainEntry } from '../pipeline/store/chained-log.js';

/**
 * A cohort record anchored outside the machine: `pairbench freeze` writes, beside the config,
 * each cohort's version, freeze digest, and its record's head (how many entries, the last
 * one's hash) with the keys that signed it, for the user to commit. A store whose record does
 * not hold that prefix (cut short, rewritten, re-signed, or a fresh store drawing the version
 * again) is refused by `run`; on a pull request the base branch's lock, checked out with the
 * base's config, is the anchor.
 */
export interface RecordLock {
  schema_version: 1;
  about: string;
  cohorts: Record<string, LockedCohort>;
}

export interface LockedCohort {
  version: number;
  freeze_digest: string;
  /** The record's length when the lock was written, and its last entry's hash. */
  entries: number;
  head: string;
  /** The record keys that signed it (record-key.ts ids): the only signers a store's record may have. */
  signers: string[];
}

const ABOUT =
  "pairbench's anchor of each cohort's record (pairbench freeze writes it; commit it with the config): run refuses a store whose record does not begin with what it names";

/** The lock beside a config: bench.config.yaml -> bench.config.yaml.lock. */
export function lockPathOf(configFile: string): string {
  return `${configFile}.lock`;
}

export type LockRead = { ok: true; lock: RecordLock | undefined; path: string } | { ok: false; problem: string };

export function readLock(configFile: string): LockRead {
  const path = lockPathOf(configFile);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { ok: true, lock: undefined, path };
    return { ok: false, problem: `${path} cannot be read: ${(e as Error).message}` };
  }
  try {
    const lock = JSON.parse(text) as RecordLock;
    if (lock.schema_version !== 1 || typeof lock.cohorts !== 'object' || !lock.cohorts) throw new Error('not a pairbench record lock (schema_version 1)');
    for (const [name, c] of Object.entries(lock.cohorts))
      if (!Number.isInteger(c.entries) || typeof c.head !== 'string' || !Array.isArray(c.signers))
        throw new Error(`cohorts.${name} lacks entries, head or signers`);
    return { ok: true, lock, path };
  } catch (e) {
    return { ok: false, problem: `${path}: ${(e as Error).message}; write it again with pairbench freeze` };
  }
}

/** The lock with these cohorts' records as they are now. */
export function lockWith(
  lock: RecordLock | undefined,
  cohorts: { name: string; version: number; freeze_digest: string; entries: readonly ChainEntry[] }[],
  /** The key that signs what is appended from here on: trusted too. */
  writer: string,
): RecordLock {
  const out: RecordLock = { schema_version: 1, about: ABOUT, cohorts: { ...(lock?.cohorts ?? {}) } };
  for (const c of cohorts) {
    const last = c.entries[c.entries.length - 1];
    if (!last) continue;
    out.cohorts[c.name] = {
      version: c.version,
      freeze_digest: c.freeze_digest,
      entries: last.seq,
      head: last.hash,
      signers: [...new Set([...signersOf(c.entries), writer])],
    };
  }
  return out;
}

export function writeLock(configFile: string, lock: RecordLock): string {
  const path = lockPathOf(configFile);
  writeFileAtomic(path, JSON.stringify(lock, null, 2) + '\n');
  return path;
}

/** What is wrong with a store's record of `cohort` against its lock, in words (empty when it holds). */
export function lockDisagreement(path: string, cohort: string, locked: LockedCohort, entries: readonly ChainEntry[] | undefined): string | undefined {
  const where = `the committed lock ${basename(path)} anchors cohort ${cohort} version ${locked.version} at record entry ${locked.entries} (${locked.head.slice(0, 12)})`;
  const fix =
    `  run with the store that holds that record (restore it from the CI cache or a backup);\n` +
    `  or, to start this cohort again, bump its \`version\` and write the lock again (pairbench freeze), so the review shows the new anchor`;
  if (!entries?.length) return `${where}, and this store holds no record of it: a run here would draw version ${locked.version} afresh.\n${fix}`;
  const at = entries[locked.entries - 1];
  if (!at || at.hash !== locked.head)
    return `${where}, and this store's record ${at ? `has ${at.hash.slice(0, 12)} there` : `has only ${entries.length} entries`}: it was cut short or rewritten.\n${fix}`;
  const stranger = signersOf(entries).filter((k) => !locked.signers.includes(k));
  if (stranger.length)
    return `${where}, signed by ${locked.signers.join(', ')}; this store's record is also signed by ${stranger.join(', ')}: written with a key the lock does not name.\n  set PAIRBENCH_RECORD_KEY to the key that wrote the record, or write the lock again (pairbench freeze) if that key is yours`;
  return undefined;
}
