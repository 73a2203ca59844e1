import { mkdtempSync, readFileSync, rmSync, statSync, truncateSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { sha256 } from '../pipeline/digest.js';
import { StatCache } from '../pipeline/store/stat-cache.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'pairbench-statcache-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function timed<T>(f: () => T): { value: T; ms: number } {
  const t = performance.now();
  const value = f();
  return { value, ms: performance.now() - t };
}

it('an input unchanged since the last run is not read again (a 256 MB file: its digest comes from its stat)', async () => {
  const big = join(dir, 'big.bin');
  writeFileSync(big, '');
  truncateSync(big, 256 * 1024 * 1024); // sparse: reads back as zeros
  await sleep(2_100); // out of the racy window
  const first = new StatCache(join(dir, 'stat-cache.json'), dir);
  const hashed = timed(() => first.digestOf(big));
  first.save();
  // The next run (a new process: a new cache object reading the saved file).
  const next = new StatCache(join(dir, 'stat-cache.json'), dir);
  const remembered = timed(() => next.digestOf(big));
  expect(remembered.value).toEqual(hashed.value);
  expect(remembered.ms * 20).toBeLessThan(hashed.ms);
});

it('a file rewritten with the same size and mtime is read again (ctime and inode are in the stat)', async () => {
  const f = join(dir, 'in.txt');
  writeFileSync(f, 'aaaa\n');
  // A whole second, so the same mtime can be written back to the nanosecond (a Date keeps only milliseconds).
  const second = Math.floor(Date.now() / 1000) - 60;
  utimesSync(f, second, second);
  await sleep(2_100); // the ctime, which utimes moves, out of the racy window
  const cache = new StatCache(join(dir, 'stat-cache.json'), dir);
  expect(cache.digestOf(f).digest).toBe(sha256('aaaa\n'));
  cache.save();
  const before = statSync(f, { bigint: true });
  writeFileSync(f, 'bbbb\n');
  utimesSync(f, second, second);
  const after = statSync(f, { bigint: true });
  // Size, mtime (to the nanosecond), inode and device as before: only the ctime says the bytes changed.
  expect([after.size, after.mtimeNs, after.ino, after.dev]).toEqual([before.size, before.mtimeNs, before.ino, before.dev]);
  const again = new StatCache(join(dir, 'stat-cache.json'), dir);
  expect(again.digestOf(f).digest).toBe(sha256('bbbb\n'));
});

it('a file changed within the racy window of being hashed is not remembered', () => {
  const f = join(dir, 'fresh.txt');
  writeFileSync(f, 'new\n');
  const cache = new StatCache(join(dir, 'stat-cache.json'), dir);
  expect(cache.digestOf(f).digest).toBe(sha256('new\n'));
  cache.save();
  // Nothing was learnt: no file written, so the next run hashes it again.
  expect(() => readFileSync(join(dir, 'stat-cache.json'))).toThrow(/ENOENT/);
});
