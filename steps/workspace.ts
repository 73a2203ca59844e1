import { createHash } from 'node:crypto';
import {
  chmodSync,
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readlinkSync,
  readSync,
  rmSync,
  symlinkSync,
  writeSync,
  type Stats,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { ioBuffer, type Sha256 } from '../pipeline/digest.js';
import { buildTree, type Cas, type TreeItem } from '../pipeline/store/cas.js';
import { artifact, jsonArtifact } from '../pipeline/artifact.js';

/**
 * Reading what an attempt left in its workspace. The workspace is the agent's: it is
 * read only after every process of the attempt is dead (the caller closes the
 * sandbox first), and even then nothing here follows a symlink: every file is
 * opened with O_NOFOLLOW and checked against the entry it was listed as, so a link
 * swapped in cannot make pairbench copy a host file (/etc/shadow) into the outputs.
 */

/** A file or link the snapshot would not keep, and why (the attempt's receipt lists them). */
export interface Refusal {
  path: string;
  reason: string;
}

/** Relative path -> state: regular files by content digest and executable bit, symlinks by their target. */
export interface Snapshot {
  entries: Map<string, string>;
  /** Special files (fifos, sockets, devices), and files over the size limit: never copied. */
  refused: Refusal[];
  /** Files whose setuid/setgid/sticky bits were dropped (they are never carried over). */
  privilegeBitsDropped: string[];
  /** Bytes of the regular files seen (apparent sizes: a sparse file counts as its length). */
  bytes: number;
  /** Apparent size of each regular file listed. */
  sizes: Map<string, number>;
  /** Set when the walk stopped at a budget (nothing past it was hashed): why. */
  overBudget?: string;
}

export interface SnapshotOptions {
  /** Files larger than this are refused (not hashed, not copied). Default: no limit. */
  maxFileBytes?: number;
  /** The walk stops, without hashing more, once the regular files seen pass this many bytes (apparent size)... */
  maxTotalBytes?: number;
  /** ... or this many files. */
  maxFiles?: number;
}

/** Yield to the event loop this often while walking, so timers (lock heartbeats) keep running. */
const YIELD_EVERY = 256;

/**
 * Lists every file under root without following symlinks. Hashes stream in chunks
 * (no 2 GiB limit) and the walk yields to the event loop as it goes.
 */
export async function snapshot(root: string, options: SnapshotOptions = {}): Promise<Snapshot> {
  const out: Snapshot = { entries: new Map(), refused: [], privilegeBitsDropped: [], bytes: 0, sizes: new Map() };
  let seen = 0;
  const walk = async (rel: string): Promise<void> => {
    for (const name of readdirSync(join(root, rel)).sort()) {
      if (out.overBudget) return;
      if (++seen % YIELD_EVERY === 0) await new Promise((r) => setImmediate(r));
      const p = rel ? `${rel}/${name}` : name;
      const st = lstatSync(join(root, p));
      if (st.isDirectory()) await walk(p);
      else if (st.isSymbolicLink()) out.entries.set(p, `link:${readlinkSync(join(root, p))}`);
      else if (st.isFile()) {
        if (options.maxFileBytes !== undefined && st.size > options.maxFileBytes) {
          out.refused.push({ path: p, reason: `file of ${st.size} bytes is over the limit of ${options.maxFileBytes} bytes` });
          continue;
        }
        // Budgets are checked before hashing: a thousand sparse files cost their listing, not their reading.
        if (options.maxTotalBytes !== undefined && out.bytes + st.size > options.maxTotalBytes) {
          out.overBudget = `its files pass ${options.maxTotalBytes} bytes (apparent size) at ${p}`;
          return;
        }
        if (options.maxFiles !== undefined && out.sizes.size + 1 > options.maxFiles) {
          out.overBudget = `its files pass ${options.maxFiles} files at ${p}`;
          return;
        }
        if (st.mode & 0o7000) out.privilegeBitsDropped.push(p);
        out.entries.set(p, `${hashNoFollow(join(root, p), st)}${st.mode & 0o111 ? ':x' : ''}`);
        out.bytes += st.size;
        out.sizes.set(p, st.size);
      } else out.refused.push({ path: p, reason: `${kindOf(st)} is not a regular file, directory or symlink` });
    }
  };
  await walk('');
  return out;
}

function kindOf(st: Stats): string {
  if (st.isFIFO()) return 'a fifo';
  if (st.isSocket()) return 'a socket';
  if (st.isCharacterDevice()) return 'a character device';
  if (st.isBlockDevice()) return 'a block device';
  return 'a special file';
}

/** A path that is no longer what the walk listed there (a process of the attempt outlived it, or the walk raced one). */
const changedMeanwhile = (path: string) => new Error(`${path} changed while the workspace was read (it is no longer the file or link listed)`);

/** Opens a path that must be the very regular file `expected` (no symlink, not swapped since it was listed). */
function openNoFollow(path: string, expected: Stats): number {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  const st = fstatSync(fd);
  if (!st.isFile() || st.ino !== expected.ino || st.dev !== expected.dev) {
    closeSync(fd);
    throw changedMeanwhile(path);
  }
  return fd;
}

function hashNoFollow(path: string, expected: Stats): string {
  const fd = openNoFollow(path, expected);
  try {
    const hash = createHash('sha256');
    const buf = ioBuffer();
    for (;;) {
      const n = readSync(fd, buf, 0, buf.length, null);
      if (n === 0) break;
      hash.update(buf.subarray(0, n));
    }
    return hash.digest('hex');
  } finally {
    closeSync(fd);
  }
}

/** Streams one regular file to `dest` (created fresh), never following a link at `src`. */
function copyNoFollow(src: string, expected: Stats, dest: string): void {
  const from = openNoFollow(src, expected);
  let to: number | undefined;
  try {
    to = openSync(dest, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
    const buf = ioBuffer();
    for (;;) {
      const n = readSync(from, buf, 0, buf.length, null);
      if (n === 0) break;
      for (let off = 0; off < n;) off += writeSync(to, buf, off, n - off);
    }
  } finally {
    closeSync(from);
    if (to !== undefined) closeSync(to);
  }
}

/** What an attempt changed: written files and links (their new state is kept in `changed/`) and deleted paths. */
export interface WorkspaceChanges {
  schema_version: 1;
  written: Record<string, string>;
  deleted: string[];
  /** What the attempt left that was not kept, with the reason (special files, oversized files). */
  refused?: Refusal[];
  /** Files whose setuid/setgid/sticky bits were dropped. */
  privilege_bits_dropped?: string[];
  /** What the attempt left was over its budgets (limits.max_output_mb / max_output_files / max_log_mb): nothing of it was kept. */
  over_budget?: string;
}

/** changes.json: what an attempt changed in its workspace (verify applies it to a fresh tree; audit, judge and export read it). */
export const CHANGES = jsonArtifact<WorkspaceChanges, 'changes.json'>('changes.json', 'the paths the attempt changed in the workspace', (v) => {
  const c = v as Partial<WorkspaceChanges> | null;
  if (!c || typeof c !== 'object' || Array.isArray(c)) return ['/ must be an object'];
  const strings = (x: unknown) => Array.isArray(x) && x.every((e) => typeof e === 'string');
  return [
    ...(c.written && typeof c.written === 'object' && !Array.isArray(c.written) && Object.values(c.written).every((d) => typeof d === 'string')
      ? []
      : ['/written must map each path to a string']),
    ...(strings(c.deleted) ? [] : ['/deleted must be a list of paths']),
    ...(c.refused === undefined || Array.isArray(c.refused) ? [] : ['/refused must be a list']),
    ...(c.privilege_bits_dropped === undefined || strings(c.privilege_bits_dropped) ? [] : ['/privilege_bits_dropped must be a list of paths']),
    ...(c.over_budget === undefined || typeof c.over_budget === 'string' ? [] : ['/over_budget must be a string']),
  ];
});

/** changed: the changed files themselves, beside changes.json. */
export const CHANGED = artifact('changed', 'the changed files themselves');

export function diffSnapshots(before: Snapshot, after: Snapshot): WorkspaceChanges {
  const written: Record<string, string> = {};
  const deleted: string[] = [];
  for (const [p, d] of after.entries) if (before.entries.get(p) !== d) written[p] = d;
  const refused = new Set(after.refused.map((r) => r.path));
  for (const p of before.entries.keys()) if (!after.entries.has(p) && !refused.has(p)) deleted.push(p);
  return {
    schema_version: 1,
    written,
    deleted: deleted.sort(),
    refused: after.refused,
    privilege_bits_dropped: after.privilegeBitsDropped.filter((p) => p in written),
  };
}

/** Refuses a path whose parent directories include a symlink: writing through it could land outside the tree. */
function assertNoSymlinkParent(root: string, rel: string): void {
  const parts = rel.split('/').slice(0, -1);
  let p = root;
  for (const part of parts) {
    p = join(p, part);
    let st;
    try {
      st = lstatSync(p);
    } catch {
      return; // does not exist yet: it will be created as a directory
    }
    if (st.isSymbolicLink())
      throw new Error(
        `refusing to write ${rel}: ${rel
          .split('/')
          .slice(0, parts.indexOf(part) + 1)
          .join('/')} is a symlink`,
      );
  }
}

/**
 * Copies the written files and links into `dest` at their relative paths: links as
 * links, files with their permission bits but never setuid/setgid/sticky.
 */
export function copyWritten(changes: WorkspaceChanges, from: string, dest: string): void {
  mkdirSync(dest, { recursive: true });
  for (const p of Object.keys(changes.written)) {
    assertNoSymlinkParent(from, p);
    assertNoSymlinkParent(dest, p);
    const target = join(dest, p);
    mkdirSync(dirname(target), { recursive: true });
    rmSync(target, { force: true, recursive: true });
    const st = lstatSync(join(from, p));
    if (st.isSymbolicLink()) symlinkSync(readlinkSync(join(from, p)), target);
    else if (st.isFile()) {
      copyNoFollow(join(from, p), st, target);
      chmodSync(target, st.mode & 0o777);
    } else throw new Error(`refusing to copy ${p}: it is no longer a regular file or link`);
  }
}

/**
 * Stores the written files and links straight from the workspace as one tree (what copyWritten
 * would copy, with the same digest, without the copy): links as links, files with their
 * executable bit. Each file is opened without following a link, must be the file the snapshot
 * listed, and must still have the digest `changes` holds for it.
 */
export function storeWritten(
  changes: WorkspaceChanges,
  from: string,
  cas: Pick<Cas, 'putOpenFile' | 'putTree'>,
): { type: 'dir'; digest: Sha256; size: number } {
  const items: TreeItem[] = [];
  for (const [p, state] of Object.entries(changes.written)) {
    assertNoSymlinkParent(from, p);
    const at = join(from, p);
    const st = lstatSync(at);
    if (st.isSymbolicLink()) {
      const target = readlinkSync(at);
      if (`link:${target}` !== state) throw changedMeanwhile(at);
      items.push({ path: p, entry: { type: 'symlink', target } });
      continue;
    }
    if (!st.isFile()) throw new Error(`refusing to store ${p}: it is no longer a regular file or link`);
    const fd = openNoFollow(at, st);
    let stored;
    try {
      stored = cas.putOpenFile(fd);
    } finally {
      closeSync(fd);
    }
    const executable = (st.mode & 0o111) !== 0;
    if (`${stored.digest}${executable ? ':x' : ''}` !== state) throw changedMeanwhile(at);
    items.push({ path: p, entry: { type: 'file', digest: stored.digest, size: stored.size, executable } });
  }
  return buildTree(items, (entries) => cas.putTree(entries));
}

/** Applies changes (written files from `changedDir`, deletions) onto a tree; never writes through a symlink. */
export function applyChanges(changes: WorkspaceChanges, changedDir: string, tree: string): void {
  for (const p of changes.deleted) {
    assertNoSymlinkParent(tree, p);
    rmSync(join(tree, p), { force: true });
  }
  copyWritten(changes, changedDir, tree);
}
