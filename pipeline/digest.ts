import { createHash, hash } from 'node:crypto';
import { closeSync, openSync, readSync } from 'node:fs';
import { canonicalJson } from './canonical-json.js';

/** A SHA-256 of bytes (a blob, a tree object, an output manifest), lower-case hex. */
export type Sha256 = string & { readonly __brand: 'Sha256' };
/** A node's cache key: the SHA-256 of its canonical key pre-image. */
export type CacheKey = string & { readonly __brand: 'CacheKey' };

export function sha256(data: string | Uint8Array): Sha256 {
  // One call, no Hash object: half the cost of createHash for the small pre-images a no-op hashes by the thousand.
  return hash('sha256', data, 'hex') as Sha256;
}

export function digestOfJson(value: unknown): Sha256 {
  return sha256(canonicalJson(value));
}

export function cacheKeyOf(preimageJson: string): CacheKey {
  return sha256(preimageJson) as string as CacheKey;
}

const HEX64 = /^[0-9a-f]{64}$/;
export function isSha256(s: string): s is Sha256 {
  return HEX64.test(s);
}

/** The short form people read in plans and logs. */
export function short(d: string): string {
  return d.slice(0, 6);
}

const CHUNK = 1 << 20;
let scratch: Buffer | undefined;

/**
 * One read buffer for the process's synchronous file loops (hashing, copying): a fresh 1 MiB
 * buffer per file made storing a tree of 8,000 small files spend most of its time collecting garbage.
 * Only for loops that do not yield between filling and using it.
 */
export function ioBuffer(): Buffer {
  return (scratch ??= Buffer.allocUnsafe(CHUNK));
}

/** The SHA-256 of a file's bytes, read in chunks (no size limit, little memory). */
/** `onBytes` hears each chunk's length as it is hashed (the progress of a large file). */
export function sha256File(path: string, onBytes?: (bytes: number) => void): { digest: Sha256; size: number } {
  const fd = openSync(path, 'r');
  try {
    return sha256Fd(fd, onBytes);
  } finally {
    closeSync(fd);
  }
}

export function sha256Fd(fd: number, onBytes?: (bytes: number) => void): { digest: Sha256; size: number } {
  const hash = createHash('sha256');
  const buf = ioBuffer();
  let size = 0;
  for (;;) {
    const n = readSync(fd, buf, 0, CHUNK, null);
    if (n === 0) break;
    hash.update(buf.subarray(0, n));
    size += n;
    onBytes?.(n);
  }
  return { digest: hash.digest('hex') as Sha256, size };
}
