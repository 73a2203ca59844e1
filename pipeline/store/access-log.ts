/**
 * The store's access log (access/ in the store): which keys each run used, one file per run, for
 * gc's least-recently-used collection (store.ts merges them). A run that used only what one root
 * holds logs that root's name. A run the whole-plan memo replays logs its use here too: this
 * module is the performer of that effect (pipeline/memo/effects.ts), bundled with the memo, so
 * it uses Node's built-ins only.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from '../atomic-write.js';

/** The kind of the memo effect a run's use of the store is. */
export const ACCESS_EFFECT = 'store-access';
/** More logs than this are merged into one by the next full run (store.ts). */
const ACCESS_LOGS_BEFORE_COMPACTION = 32;

/** Whether a log holding `logs` files is due to be merged. */
export function mergeDue(logs: number): boolean {
  return logs > ACCESS_LOGS_BEFORE_COMPACTION;
}

export type AccessEntry = { root: string } | { keys: string[] };

/** What a replay needs to log a use again: the store, its temp directory, and what was used. */
export interface AccessEffectData {
  store: string;
  tmp: string;
  entry: AccessEntry;
}

export function accessDir(storeDir: string): string {
  return join(storeDir, 'access');
}

/**
 * Logs one use at `at`; returns how many logs the directory then holds. Not synced: it is a hint
 * for gc's least-recently-used order (a use a power cut loses makes gc collect earlier what a run
 * rebuilds), and its fsync was 5 of the 42 ms a memo's replay of a 200-node no-op run took on ext4.
 */
export function appendAccess(data: AccessEffectData, at: Date): number {
  const dir = accessDir(data.store);
  writeFileAtomic(join(dir, `${at.getTime()}-${process.pid}.json`), JSON.stringify({ at: at.toISOString(), ...data.entry }) + '\n', {
    tmpDir: data.tmp,
    sync: false,
  });
  return readdirSync(dir).length;
}

/** The memo's performer: logs a replayed run's use now, unless the log is due to be merged (a full run does that). */
export function replayAccess(data: unknown): string | undefined {
  if (!isAccessEffectData(data)) return 'not an access log entry';
  // Merging needs the store's roots: a full run does it. The one this replay would add makes it due.
  const logs = readdirSync(accessDir(data.store)).length;
  if (mergeDue(logs + 1)) return `the store's access log holds ${logs} files and is due to be merged`;
  appendAccess(data, new Date());
  return undefined;
}

function isAccessEffectData(d: unknown): d is AccessEffectData {
  if (typeof d !== 'object' || d === null) return false;
  const { store, tmp, entry } = d as Record<string, unknown>;
  if (typeof store !== 'string' || typeof tmp !== 'string' || typeof entry !== 'object' || entry === null) return false;
  const e = entry as Record<string, unknown>;
  return typeof e['root'] === 'string' || (Array.isArray(e['keys']) && e['keys'].every((k) => typeof k === 'string'));
}
