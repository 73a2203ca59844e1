import { closeSync, fsyncSync, linkSync, mkdirSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { dirname, join, sep } from 'node:path';

/**
 * The one way pairbench writes a file a reader may look at while it is written (store
 * records, blobs, registry documents, a bundle's files): readers see the old file or the
 * whole new one, never part of it.
 */

const madeDirs = new Set<string>();

/**
 * Forgets the directories made under `root`: the next ensureDir makes them again. A store opened
 * anew trusts none it did not make itself (it may have been deleted since, under a long-lived
 * process, or between two commands of one).
 */
export function forgetDirsUnder(root: string): void {
  for (const d of madeDirs) if (d === root || d.startsWith(root + sep)) madeDirs.delete(d);
}

export function ensureDir(dir: string): void {
  if (madeDirs.has(dir)) return;
  mkdirSync(dir, { recursive: true });
  madeDirs.add(dir);
}

/** A temp path in `tmpDir` that names its owner, so a killed writer's leftovers can be told apart. */
export function tempPath(tmpDir: string, label = 'tmp'): string {
  ensureDir(tmpDir);
  // A random prefix per process (against a reused pid's leftovers), then a counter. Not node:crypto:
  // a memo's replay writes through here, and loading crypto was a third of its own time.
  tempPrefix ??= Math.floor(Math.random() * 0x100000000)
    .toString(16)
    .padStart(8, '0');
  return join(tmpDir, `${label}-${process.pid}-${tempPrefix}${(tempCounter++).toString(36)}`);
}

let tempPrefix: string | undefined;
let tempCounter = 0;

export interface AtomicWriteOptions {
  /** Where the temp file is made: on the target's file system (default: the target's directory). */
  tmpDir?: string;
  /** The temp file's name starts with this (default "tmp"): a killed writer's leftovers are recognisable. */
  label?: string;
  mode?: number;
  /**
   * fsync before the rename (default true): the file survives a power cut once this returns.
   * Off where something else is the commit point (a blob's action record; a bundle synced as a whole).
   */
  sync?: boolean;
}

/** Writes `data` to `target` atomically: a temp file on the same file system, written whole, then renamed over it. */
export function writeFileAtomic(target: string, data: string | Uint8Array, options: AtomicWriteOptions = {}): void {
  const tmpDir = options.tmpDir ?? dirname(target);
  const bytes = typeof data === 'string' ? Buffer.from(data) : data;
  const tmp = tempPath(tmpDir, options.label);
  try {
    const fd = again(tmpDir, () => openSync(tmp, 'wx', options.mode ?? 0o644));
    try {
      for (let off = 0; off < bytes.length;) off += writeSync(fd, bytes, off, bytes.length - off);
      if (options.sync !== false) fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    ensureDir(dirname(target));
    again(dirname(target), () => renameSync(tmp, target));
  } catch (e) {
    rmSync(tmp, { force: true });
    throw e;
  }
}

/**
 * Writes `target` whole unless it exists: a temp file, then a hard link, which fails if the
 * name is taken, so two writers at once agree on one file (the first one's). Returns whether
 * this call made it.
 */
export function writeFileOnce(target: string, data: string | Uint8Array, options: Pick<AtomicWriteOptions, 'tmpDir' | 'label' | 'mode'> = {}): boolean {
  const tmpDir = options.tmpDir ?? dirname(target);
  const tmp = tempPath(tmpDir, options.label);
  try {
    const fd = openSync(tmp, 'wx', options.mode ?? 0o644);
    try {
      const bytes = typeof data === 'string' ? Buffer.from(data) : data;
      for (let off = 0; off < bytes.length;) off += writeSync(fd, bytes, off, bytes.length - off);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    linkSync(tmp, target);
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw e;
  } finally {
    rmSync(tmp, { force: true });
  }
}

/** Syncs a directory: the names made in it (a new file's) survive a power cut. */
export function syncDir(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Runs `op`; if it fails because `dir` is gone (removed since ensureDir made it), makes it again and retries once. */
function again<T>(dir: string, op: () => T): T {
  try {
    return op();
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    madeDirs.delete(dir);
    mkdirSync(dir, { recursive: true });
    return op();
  }
}
