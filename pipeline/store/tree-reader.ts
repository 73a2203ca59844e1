import { hash } from 'node:crypto';
import * as fs from 'node:fs';
import { availableParallelism } from 'node:os';
import type { Worker } from 'node:worker_threads';
import type { Sha256 } from '../digest.js';
import { lazyRequire } from '../lazy-require.js';
import { CorruptBlobError } from './corrupt-blob.js';

const workerThreads = lazyRequire<typeof import('node:worker_threads')>('node:worker_threads');

/** A file of a stored tree as readTreeFiles found it. */
export interface TreeFileRead {
  /** Relative, with '/'. */
  path: string;
  digest: Sha256;
  size: number;
  /** Below a directory `filterBelow` matched: its bytes are kept only when they pass `keepIf`. */
  filtered: boolean;
  /** kept: `bytes` holds it; binary: a NUL early on; dropped: filtered out; too-large: over `maxSize`, not read; symlink: not read. */
  state: 'kept' | 'binary' | 'dropped' | 'too-large' | 'symlink';
  bytes?: Buffer;
}

export interface ReadTreeOptions {
  /** A file with a NUL byte in its first `sniff` bytes is binary. */
  sniff: number;
  /** Files larger than this are not read. */
  maxSize: number;
  /** A directory whose path (relative, no trailing '/') this matches holds filtered files, and so does all below it. */
  filterBelow: RegExp;
  /** A filtered file's bytes are kept only when they hold every byte string of one of these groups. */
  keepIf: readonly (readonly Buffer[])[];
  /** Stops the reading (its threads terminated at once): the promise rejects with the signal's reason. */
  signal?: AbortSignal;
}

/** Levels of a tree split before the threads start. */
const SPLIT_LEVELS = 4;
/** A tree this wide after splitting is read on threads (their start-up, ~30 ms, costs less than it saves: a node_modules). */
const THREADED_FROM_DIRS = 32;
/** Directories handed out to threads, at least (the tree is split this fine, a level at a time, before they start). */
const TASKS_PER_THREAD = 16;
/** Groups of directories per thread: fine enough to balance a loaded core, few enough that round trips cost nothing. */
const GROUPS_PER_THREAD = 8;

interface Task {
  digest: string;
  rel: string;
  filtered: boolean;
}

/** What a walk found, compact to cross threads: one string per column, not a string per file. */
interface WalkResult {
  /** Paths, each followed by a NUL (no path holds one). */
  paths: string;
  /** Digests, 64 characters each ('-' x 64 for a symlink). */
  digests: string;
  sizes: Float64Array;
  filtered: Uint8Array;
  codes: Uint8Array;
  /** The kept files' bytes, one after another, in order. */
  data: Uint8Array;
  /** Directories left to walk (a split walk). */
  dirs: Task[];
  /** A tree object or blob not as its digest says. */
  corrupt?: { digest: string; detail: string };
}

interface WalkOptions {
  prefix: string;
  sep: string;
  sniff: number;
  maxSize: number;
  filterBelow: RegExp;
  keepIf: readonly (readonly Buffer[])[];
}

/**
 * Walks directories of a stored tree — all of each, or (`split`) only their files, their
 * subdirectories returned as tasks — reading each tree object, and each file by its recorded size
 * into one buffer (no per-file allocation, no fstat), every one verified against its digest.
 * Self-contained: its source is also the threads'.
 */
function walkStoredDirs(tasks: readonly Task[], o: WalkOptions, split: boolean, io: typeof fs, sha256: typeof hash): WalkResult {
  // Codes: 0 kept, 1 binary, 2 dropped, 5 too large, 6 symlink.
  const paths: string[] = [];
  const digests: string[] = [];
  const sizes: number[] = [];
  const filtered: number[] = [];
  const codes: number[] = [];
  const dirs: Task[] = [];
  const toRead: number[] = [];
  let corrupt: WalkResult['corrupt'];
  const at = (d: string) => `${o.prefix}${d.slice(0, 2)}${o.sep}${d}`;
  const walk = (t: Task, nested: boolean): boolean => {
    let bytes: Buffer;
    try {
      bytes = io.readFileSync(at(t.digest));
    } catch {
      corrupt = { digest: t.digest, detail: 'missing' };
      return false;
    }
    if (sha256('sha256', bytes, 'hex') !== t.digest) {
      corrupt = { digest: t.digest, detail: 'content does not match its digest' };
      return false;
    }
    const entries = (JSON.parse(bytes.toString('utf8')) as { entries: { name: string; type: string; digest: string; size: number }[] }).entries;
    for (const e of entries) {
      const path = t.rel ? `${t.rel}/${e.name}` : e.name;
      if (e.type === 'dir') {
        const sub = { digest: e.digest, rel: path, filtered: t.filtered || o.filterBelow.test(path) };
        if (split && !nested) dirs.push(sub);
        else if (!walk(sub, true)) return false;
        continue;
      }
      const link = e.type === 'symlink';
      paths.push(path);
      digests.push(link ? '-'.repeat(64) : e.digest);
      sizes.push(link ? 0 : e.size);
      filtered.push(t.filtered ? 1 : 0);
      codes.push(link ? 6 : e.size > o.maxSize ? 5 : 0);
      if (!link && e.size <= o.maxSize) toRead.push(codes.length - 1);
    }
    return true;
  };
  const done = (data: Uint8Array): WalkResult => ({
    paths: paths.map((p) => `${p}\0`).join(''),
    digests: digests.join(''),
    sizes: Float64Array.from(sizes),
    filtered: Uint8Array.from(filtered),
    codes: Uint8Array.from(codes),
    data,
    dirs,
    ...(corrupt ? { corrupt } : {}),
  });
  for (const t of tasks) if (!walk(t, false)) return done(new Uint8Array(0));
  const buf = Buffer.from(new ArrayBuffer(toRead.reduce((s, i) => s + sizes[i]!, 0) + 1));
  let off = 0;
  for (const i of toRead) {
    const size = sizes[i]!;
    let fd: number;
    try {
      fd = io.openSync(at(digests[i]!), 'r');
    } catch {
      corrupt = { digest: digests[i]!, detail: 'missing' };
      return done(new Uint8Array(0));
    }
    let got = 0;
    try {
      // One byte past the recorded size: a longer blob is a changed one.
      for (let n = -1; n !== 0 && got <= size; got += n) n = io.readSync(fd, buf, off + got, Math.min(size + 1 - got, buf.length - off - got), null);
    } finally {
      io.closeSync(fd);
    }
    const bytes = buf.subarray(off, off + size);
    if (got !== size || sha256('sha256', bytes, 'hex') !== digests[i]) {
      corrupt = { digest: digests[i]!, detail: 'content does not match its digest' };
      return done(new Uint8Array(0));
    }
    if (bytes.subarray(0, o.sniff).includes(0)) codes[i] = 1;
    else if (filtered[i] && !o.keepIf.some((group) => group.every((s) => bytes.includes(s)))) codes[i] = 2;
    else off += size;
  }
  return done(new Uint8Array(buf.buffer, 0, off));
}

const WORKER_SOURCE = `
const { parentPort } = require('node:worker_threads');
const io = require('node:fs');
const { hash } = require('node:crypto');
const walkStoredDirs = ${walkStoredDirs.toString()};
parentPort.on('message', ({ tasks, o }) => {
  const opts = { ...o, filterBelow: new RegExp(o.filterBelow.source, o.filterBelow.flags), keepIf: o.keepIf.map((g) => g.map((s) => Buffer.from(s))) };
  const r = walkStoredDirs(tasks, opts, false, io, hash);
  parentPort.postMessage(r, [r.data.buffer]);
});
`;

const STATES = ['kept', 'binary', 'dropped', '', '', 'too-large', 'symlink'] as const;

/**
 * Every file of a stored tree (`prefix` + `sep`: the blob directory), each verified against its
 * digest, in one pass: a large tree is split into directories that a few worker threads walk —
 * opening ten thousand small files is most of the cost of scanning a dependency tree, and the
 * threads share it across cores. A missing or changed object rejects with CorruptBlobError; an
 * abort terminates the threads at once and rejects with the signal's reason.
 */
export async function readTreeFiles(prefix: string, sep: string, root: Sha256, opts: ReadTreeOptions): Promise<TreeFileRead[]> {
  opts.signal?.throwIfAborted();
  const o: WalkOptions = { prefix, sep, sniff: opts.sniff, maxSize: opts.maxSize, filterBelow: opts.filterBelow, keepIf: opts.keepIf };
  const results: WalkResult[] = [];
  const n = Math.max(1, Math.min(4, availableParallelism()));
  // Split a level at a time until there are enough directories to share out; a tree that never
  // gets that wide is small, and read here.
  let frontier: Task[] = [{ digest: root, rel: '', filtered: false }];
  for (let level = 0; level < SPLIT_LEVELS && frontier.length && frontier.length < n * TASKS_PER_THREAD; level++) {
    const r = walkStoredDirs(frontier, o, true, fs, hash);
    results.push(r);
    if (r.corrupt) break;
    frontier = r.dirs;
  }
  if (frontier.length >= THREADED_FROM_DIRS) results.push(...(await onThreads(frontier, o, n, opts.signal)));
  else if (frontier.length) results.push(walkStoredDirs(frontier, o, false, fs, hash));
  const out: TreeFileRead[] = [];
  for (const r of results) {
    if (r.corrupt) throw new CorruptBlobError(r.corrupt.digest as Sha256, r.corrupt.detail);
    const data = Buffer.from(r.data.buffer, r.data.byteOffset, r.data.byteLength);
    let off = 0;
    let from = 0;
    for (let i = 0; i < r.codes.length; i++) {
      const end = r.paths.indexOf('\0', from);
      const state = STATES[r.codes[i]!] as TreeFileRead['state'];
      const f: TreeFileRead = {
        path: r.paths.slice(from, end),
        digest: r.digests.slice(i * 64, i * 64 + 64) as Sha256,
        size: r.sizes[i]!,
        filtered: r.filtered[i] === 1,
        state,
      };
      from = end + 1;
      if (state === 'kept') {
        f.bytes = data.subarray(off, off + f.size);
        off += f.size;
      }
      out.push(f);
    }
  }
  // In path order, whichever thread finished first.
  return out.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/** Worker threads kept between reads (a cohort certifies many tasks on one tree): started once, unreferenced while idle. */
const pool: Worker[] = [];

/** Hands the directories to the threads in a few groups each, the next to whichever is free (a loaded core gets fewer). */
function onThreads(tasks: Task[], o: WalkOptions, threads: number, signal: AbortSignal | undefined): Promise<WalkResult[]> {
  const results: WalkResult[] = [];
  // Groups, not single directories: a round trip to a thread costs more than a small directory.
  const per = Math.ceil(tasks.length / (threads * GROUPS_PER_THREAD));
  const groups: Task[][] = [];
  for (let i = 0; i < tasks.length; i += per) groups.push(tasks.slice(i, i + per));
  if (!groups.length) return Promise.resolve(results);
  while (pool.length < Math.min(threads, groups.length)) {
    const w = new (workerThreads().Worker)(WORKER_SOURCE, { eval: true });
    w.unref();
    pool.push(w);
  }
  const workers = pool.slice(0, Math.min(threads, groups.length));
  const sent = {
    ...o,
    filterBelow: { source: o.filterBelow.source, flags: o.filterBelow.flags },
    keepIf: o.keepIf.map((g) => g.map((s) => new Uint8Array(s))),
  };
  return new Promise<WalkResult[]>((resolve, reject) => {
    let next = 0;
    let pending = groups.length;
    let settled = false;
    const detach: (() => void)[] = [];
    const finish = (e?: unknown) => {
      if (settled) return;
      settled = true;
      signal?.removeEventListener('abort', onAbort);
      for (const off of detach) off();
      // Stopped mid-way (an abort, a failure, a corrupt object found while groups were still out):
      // a thread may still be reading, and its late answer would be taken as the next read's. Not kept.
      const midway = e !== undefined || pending > 0;
      for (const w of workers) {
        w.unref();
        if (midway) {
          pool.splice(pool.indexOf(w), 1);
          void w.terminate();
        }
      }
      if (e === undefined) resolve(results);
      else reject(e);
    };
    const onAbort = () => finish(signal!.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    for (const w of workers) {
      w.ref();
      const feed = () => {
        const g = groups[next++];
        if (g) w.postMessage({ tasks: g, o: sent });
      };
      const onMessage = (r: WalkResult) => {
        results.push(r);
        if (r.corrupt || --pending === 0) return finish();
        feed();
      };
      const onError = (e: Error) => finish(e);
      const onExit = (code: number) => finish(new Error(`a tree-reading thread exited with code ${code}`));
      w.on('message', onMessage).on('error', onError).on('exit', onExit);
      detach.push(() => w.off('message', onMessage).off('error', onError).off('exit', onExit));
      // Two groups in flight: a thread never waits for the next.
      feed();
      feed();
    }
  });
}
