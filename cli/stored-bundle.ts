import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, rmdirSync, rmSync } from 'node:fs';
import { dirname } from 'node:path';
import { CorruptBlobError, type OutputEntry } from '../pipeline/store/cas.js';
import type { Store } from '../pipeline/store/store.js';

/**
 * Writes a stored bundle to `dest`, all or nothing: into a temp directory beside it,
 * every blob verified as it is copied, then renamed into place. A corrupt blob is
 * dropped with the records that need it (the next run rebuilds them); a missing one drops
 * nothing, since a record replayed from a remote cache holds its bytes only once they are
 * fetched (`missing`: the caller names the remote cache to give). `onBytes` hears
 * each file's size as it is written (the progress of a large bundle).
 */
export function writeStoredBundle(
  store: Store,
  entry: OutputEntry,
  dest: string,
  onBytes?: (bytes: number) => void,
): { ok: true } | { ok: false; error: string; missing: boolean } {
  mkdirSync(dirname(dest), { recursive: true });
  const tmp = `${dest}.partial-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  try {
    store.cas.materialize(entry, tmp, onBytes);
    // Durable once, for the whole bundle (syncfs of its file system), not one fsync per file.
    spawnSync('sync', ['-f', tmp], { stdio: 'ignore' });
    if (existsSync(dest)) rmdirSync(dest); // empty (checked by the caller)
    renameSync(tmp, dest);
    return { ok: true };
  } catch (e) {
    rmSync(tmp, { recursive: true, force: true });
    if (!(e instanceof CorruptBlobError)) throw e;
    if (e.missing)
      return {
        ok: false,
        missing: true,
        error: `this store holds the record of its bundle but not its files (blob ${e.digest.slice(0, 12)}): nothing was written`,
      };
    const dropped = store.forgetBlob(e.digest);
    return {
      ok: false,
      missing: false,
      error: `${e.message}: nothing was written; the blob was dropped${dropped.length ? `, with the records of ${dropped.join(', ')}` : ''}`,
    };
  }
}
