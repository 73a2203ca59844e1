/**
 * The store's access log (access/ in the store): which keys each run used, one file per run, for
 * gc's least-recently-used collection; merged into one file per time of last use when it holds
 * more than a few dozen. A run that used only what one root holds logs that root's name. A run the
 * whole-plan memo replays logs its use here too, and merges the log when that is due, as a full
 * run does: this module is the performer of that effect (pipeline/memo/effects.ts), bundled with
 * the memo, so it uses Node's built-ins only.
 */
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from '../atomic-write.js';
import { readRoots, rootsDir, type Root } from './roots-dir.js';

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

/**
 * Logs one use now, and merges the log when it is due. `roots` gives the store's roots (a root's
 * entry is merged as the keys the root holds then, as gc reads it).
 */
export function logAccess(data: AccessEffectData, roots: () => Root[]): void {
  if (!mergeDue(appendAccess(data, new Date()))) return;
  const read = readAccess(data.store, roots);
  compactAccessLogs(data.store, data.tmp, read.last, read.names);
}

/** The memo's performer: logs a replayed run's use now, merging the log when due, as the run did. */
export function replayAccess(data: unknown): string | undefined {
  if (!isAccessEffectData(data)) return 'not an access log entry';
  logAccess(data, () => readRoots(rootsDir(data.store)));
  return undefined;
}

/**
 * Last use of each key according to the logs (a root's entry counts for each key the root holds),
 * and the names of the logs read; an unreadable log is removed.
 */
export function readAccess(storeDir: string, roots: () => Root[]): { last: Map<string, number>; names: string[] } {
  const dir = accessDir(storeDir);
  const last = new Map<string, number>();
  if (!existsSync(dir)) return { last, names: [] };
  let byName: Map<string, string[]> | undefined;
  const names = readdirSync(dir).sort();
  for (const name of names) {
    try {
      const entry = JSON.parse(readFileSync(join(dir, name), 'utf8')) as { at: string; keys?: string[]; root?: string };
      const t = Date.parse(entry.at);
      if (entry.root !== undefined) byName ??= new Map(roots().map((r) => [r.name, r.keys]));
      const keys = entry.keys ?? byName?.get(entry.root ?? '') ?? [];
      for (const k of keys) last.set(k, Math.max(t, last.get(k) ?? 0));
    } catch {
      rmSync(join(dir, name), { force: true });
    }
  }
  return { last, names };
}

/**
 * Replaces the logs named `names` (by default every log there now) by one per time of last use in
 * `last`. A log another run adds meanwhile is not in `names`, and stays.
 */
export function compactAccessLogs(storeDir: string, tmpDir: string, last: Map<string, number>, names?: string[]): void {
  const dir = accessDir(storeDir);
  if (!existsSync(dir)) return;
  const old = names ?? readdirSync(dir);
  const byTime = new Map<number, string[]>();
  for (const [k, t] of last) {
    const keys = byTime.get(t);
    if (keys) keys.push(k);
    else byTime.set(t, [k]);
  }
  const written = new Set<string>();
  for (const [t, keys] of byTime) {
    const name = `${t}-compacted-${process.pid}.json`;
    writeFileAtomic(join(dir, name), JSON.stringify({ at: new Date(t).toISOString(), keys }) + '\n', { tmpDir });
    written.add(name);
  }
  for (const name of old) if (!written.has(name)) rmSync(join(dir, name), { force: true });
}

function isAccessEffectData(d: unknown): d is AccessEffectData {
  if (typeof d !== 'object' || d === null) return false;
  const { store, tmp, entry } = d as Record<string, unknown>;
  if (typeof store !== 'string' || typeof tmp !== 'string' || typeof entry !== 'object' || entry === null) return false;
  const e = entry as Record<string, unknown>;
  return typeof e['root'] === 'string' || (Array.isArray(e['keys']) && e['keys'].every((k) => typeof k === 'string'));
}
