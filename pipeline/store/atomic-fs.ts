import { closeSync, fsyncSync, mkdirSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';

const madeDirs = new Set<string>();

export function ensureDir(dir: string): void {
  if (madeDirs.has(dir)) return;
  mkdirSync(dir, { recursive: true });
  madeDirs.add(dir);
}

/** A temp path in `tmpDir` that names its owner, so a killed writer's leftovers can be told apart. */
export function tempPath(tmpDir: string, label = 'tmp'): string {
  ensureDir(tmpDir);
  // A random prefix per process, then a counter: unique without a random draw per file.
  tempPrefix ??= randomBytes(4).toString('hex');
  return join(tmpDir, `${label}-${process.pid}-${tempPrefix}${(tempCounter++).toString(36)}`);
}

let tempPrefix: string | undefined;
let tempCounter = 0;

/**
 * Writes `data` to `target` so that readers see the old file or the whole new one,
 * never part of it: write + fsync a temp file on the same file system, then rename.
 */
export function writeFileAtomic(target: string, data: string | Uint8Array, tmpDir: string, mode = 0o644): void {
  const tmp = tempPath(tmpDir);
  const fd = openSync(tmp, 'w', mode);
  try {
    writeSync(fd, typeof data === 'string' ? Buffer.from(data) : data);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    ensureDir(dirname(target));
    renameSync(tmp, target);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw e;
  }
}
