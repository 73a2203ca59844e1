import { createHash } from 'node:crypto';
import {
  chmodSync,
  closeSync,
  existsSync,
  lstatSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  readSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeSync,
  mkdirSync,
} from 'node:fs';
import { join, sep } from 'node:path';
import { canonicalJson } from '../canonical-json.js';
import { ioBuffer, sha256, sha256File, type Sha256 } from '../digest.js';
import { ensureDir, tempPath, writeFileAtomic } from '../atomic-write.js';
import { readTreeFiles, type ReadTreeOptions, type TreeFileRead } from './tree-reader.js';

/** Files materializeAsync writes between two turns of the event loop (a few milliseconds). */
const FILES_PER_TURN = 32;

/** A stored output: a file blob or a directory stored as a Merkle tree. */
export type OutputEntry = { type: 'file'; digest: Sha256; size: number; executable: boolean } | { type: 'dir'; digest: Sha256; size: number };

export type TreeEntry =
  | { name: string; type: 'file'; digest: Sha256; size: number; executable: boolean }
  | { name: string; type: 'dir'; digest: Sha256; size: number }
  | { name: string; type: 'symlink'; target: string };

export interface Tree {
  entries: TreeEntry[];
}

/** Evidence that a blob was checked: its size and mtime; a changed stamp means re-hash before trusting it. */
export type Stamp = string;

import { CorruptBlobError } from './corrupt-blob.js';
export { CorruptBlobError };

/** Content-addressed blobs: files and tree objects, by SHA-256, written once and read-only. */
export class Cas {
  /** The blob directory with its separator: a path per blob by concatenation (path.join showed in the no-op profile). */
  private readonly prefix: string;

  constructor(
    private readonly dir: string,
    private readonly tmpDir: string,
  ) {
    this.prefix = join(dir, sep);
  }

  pathOf(digest: Sha256): string {
    return `${this.prefix}${digest.slice(0, 2)}${sep}${digest}`;
  }

  has(digest: Sha256): boolean {
    return existsSync(this.pathOf(digest));
  }

  stamp(digest: Sha256): Stamp | undefined {
    const st = statSync(this.pathOf(digest), { throwIfNoEntry: false });
    return st ? `${st.size}:${st.mtimeMs}` : undefined;
  }

  /**
   * The stamp a record made now holds for a blob: the one the stat that found or stored it here
   * took (a tree of 8,000 files was stat'ed twice, once to find each blob and once to stamp it),
   * else a stat now. Never used to check a blob (isIntact stats it).
   */
  stampForRecord(digest: Sha256): Stamp | undefined {
    return this.seen.get(digest) ?? this.stamp(digest);
  }

  /** Stamps of blobs this process found or stored (bounded: a long-lived worker forgets them). */
  private readonly seen = new Map<string, Stamp>();

  private remember(digest: Sha256, st: { size: number; mtimeMs: number }): void {
    if (this.seen.size >= 200_000) this.seen.clear();
    this.seen.set(digest, `${st.size}:${st.mtimeMs}`);
  }

  /** Cheap check: the blob is there with the stamp it had when verified; otherwise re-hash it. */
  isIntact(digest: Sha256, stamp: Stamp | undefined): boolean {
    // Many records share blobs: check each one once per process.
    if (this.checked.has(digest)) return true;
    const now = this.stamp(digest);
    if (now === undefined) return false;
    const intact = (stamp !== undefined && now === stamp) || this.hashOnDisk(digest) === digest;
    if (intact) this.checked.add(digest);
    return intact;
  }

  private readonly checked = new Set<string>();

  /** The digest of the blob's bytes on disk (streamed), or undefined when it cannot be read. */
  hashOnDisk(digest: Sha256): Sha256 | undefined {
    try {
      return sha256File(this.pathOf(digest)).digest;
    } catch {
      return undefined;
    }
  }

  /** Reads a blob and re-verifies its digest. */
  read(digest: Sha256): Buffer {
    let bytes: Buffer;
    try {
      bytes = readFileSync(this.pathOf(digest));
    } catch {
      throw new CorruptBlobError(digest, 'missing');
    }
    if (sha256(bytes) !== digest) throw new CorruptBlobError(digest, 'content does not match its digest');
    return bytes;
  }

  /** Every file of a stored tree, each verified, in one pass (tree-reader.ts: on threads when the tree is large). */
  readTreeFiles(root: Sha256, o: ReadTreeOptions): Promise<TreeFileRead[]> {
    return readTreeFiles(this.prefix, sep, root, o);
  }

  remove(digest: Sha256): void {
    this.checked.delete(digest);
    this.seen.delete(digest);
    this.madeTrees.delete(digest);
    rmSync(this.pathOf(digest), { force: true });
  }

  /** Stores bytes (a blob of the right size already there is kept: reads verify it). */
  putBytes(bytes: Uint8Array): Sha256 {
    const digest = sha256(bytes);
    if (this.hasWithSize(digest, bytes.length)) return digest;
    this.writeBlob(digest, bytes);
    return digest;
  }

  /**
   * Stores a file by copying it first, so the digest is of exactly the bytes stored
   * (hashed as they are copied: one pass, any size).
   */
  putFile(path: string): { digest: Sha256; size: number } {
    const fd = openSync(path, 'r');
    try {
      return this.putOpenFile(fd);
    } finally {
      closeSync(fd);
    }
  }

  /**
   * Stores the whole file open at `fd` (read from its start, whatever its offset), as putFile does
   * (the caller opened it: a workspace file is opened without following a link, and checked).
   */
  putOpenFile(fd: number): { digest: Sha256; size: number } {
    // A file that fits the I/O buffer is read once: hashed, and written only when the store lacks it.
    const small = readWhole(fd);
    if (small) {
      const digest = sha256(small);
      if (!this.hasWithSize(digest, small.length)) this.writeBlob(digest, small);
      return { digest, size: small.length };
    }
    const tmp = tempPath(this.tmpDir, 'blob');
    const { digest, size } = copyHashing(fd, tmp);
    if (this.hasWithSize(digest, size)) {
      rmSync(tmp, { force: true });
    } else {
      chmodSync(tmp, 0o444);
      this.publish(tmp, digest);
    }
    return { digest, size };
  }

  /**
   * A blob is kept when one of the right size is there: its bytes are verified whenever it is
   * read (materialize, read), so a corrupt one is found and dropped then, not re-hashed on every store.
   */
  private hasWithSize(digest: Sha256, size: number): boolean {
    const st = statSync(this.pathOf(digest), { throwIfNoEntry: false });
    if (st?.size !== size) return false;
    this.remember(digest, st);
    return true;
  }

  /**
   * Takes a temp file (in this store's tmp dir) whose digest the caller computed while
   * writing it (a download): stored without a second copy. The caller has checked the digest.
   */
  adopt(tmp: string, digest: Sha256): void {
    if (this.has(digest)) {
      rmSync(tmp, { force: true });
      return;
    }
    chmodSync(tmp, 0o444);
    this.publish(tmp, digest);
  }

  /**
   * Not synced: only the action record is (the commit point). A blob a crash cut short does
   * not match the stamp its record holds, is re-hashed, and its node is rebuilt.
   */
  private writeBlob(digest: Sha256, bytes: Uint8Array): void {
    writeFileAtomic(this.pathOf(digest), bytes, { tmpDir: this.tmpDir, label: 'blob', mode: 0o444, sync: false });
  }

  private publish(tmp: string, digest: Sha256): void {
    ensureDir(join(this.dir, digest.slice(0, 2)));
    renameSync(tmp, this.pathOf(digest));
  }

  /** Stores a file or directory (recursively, as a Merkle tree). */
  putPath(path: string): OutputEntry {
    const st = lstatSync(path);
    if (st.isDirectory()) {
      const { digest, size } = this.putDir(path);
      return { type: 'dir', digest, size };
    }
    const { digest, size } = this.putFile(path);
    return { type: 'file', digest, size, executable: (st.mode & 0o111) !== 0 };
  }

  private putDir(dir: string): { digest: Sha256; size: number } {
    return walkTree(
      dir,
      (p) => this.putFile(p),
      (bytes) => this.putBytes(bytes),
    );
  }

  /** Stores a directory made of entries already in the store (e.g. other outputs), as a Merkle tree. */
  putTree(entries: readonly TreeEntry[]): { type: 'dir'; digest: Sha256; size: number } {
    const { bytes, size, sorted } = treeBlob(entries);
    const digest = this.putBytes(bytes);
    if (this.madeTrees.size >= 100_000) this.madeTrees.clear();
    this.madeTrees.set(digest, sorted);
    return { type: 'dir', digest, size };
  }

  /**
   * Trees this process stored, by digest: their closure (a record's stamps) is walked without
   * reading them back (200 directories read, verified and parsed were ~4% of materializing 8,000 files).
   */
  private readonly madeTrees = new Map<string, readonly TreeEntry[]>();

  /** The digest putTree would give these entries, without storing anything. */
  static hashTree(entries: readonly TreeEntry[]): { type: 'dir'; digest: Sha256; size: number } {
    const { bytes, size } = treeBlob(entries);
    return { type: 'dir', digest: sha256(bytes), size };
  }

  readTree(digest: Sha256): Tree {
    return JSON.parse(this.read(digest).toString('utf8')) as Tree;
  }

  /** The entry at a relative path below a directory entry (a file or a directory; links and absent paths: undefined). */
  entryAt(dir: { type: 'file' | 'dir'; digest: Sha256 }, path: string): OutputEntry | undefined {
    let at: OutputEntry | undefined = dir.type === 'dir' ? { type: 'dir', digest: dir.digest, size: 0 } : undefined;
    for (const name of path.split('/').filter(Boolean)) {
      if (at?.type !== 'dir') return undefined;
      const e: TreeEntry | undefined = this.readTree(at.digest).entries.find((x) => x.name === name);
      if (!e || e.type === 'symlink') return undefined;
      at = e.type === 'file' ? { type: 'file', digest: e.digest, size: e.size, executable: e.executable } : { type: 'dir', digest: e.digest, size: e.size };
    }
    return at;
  }

  /** Every blob an output needs: the entry's own blob and, for a tree, all below it. */
  closure(entry: { type: 'file' | 'dir'; digest: Sha256 }, into: Set<Sha256> = new Set()): Set<Sha256> {
    into.add(entry.digest);
    if (entry.type === 'dir') {
      for (const e of this.madeTrees.get(entry.digest) ?? this.readTree(entry.digest).entries) {
        if (e.type !== 'symlink') this.closure(e, into);
      }
    }
    return into;
  }

  /** Writes an output entry at `dest`, verifying every blob it reads (streamed: any size). */
  materialize(entry: { type: 'file' | 'dir'; digest: Sha256; executable?: boolean }, dest: string, onBytes?: (bytes: number) => void): void {
    if (entry.type === 'file') {
      let copied: { digest: Sha256; size: number };
      try {
        copied = copyHashing(this.pathOf(entry.digest), dest, entry.executable ? 0o755 : 0o644, 'w', onBytes);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'ENOENT' && !existsSync(this.pathOf(entry.digest))) throw new CorruptBlobError(entry.digest, 'missing');
        throw e;
      }
      if (copied.digest !== entry.digest) {
        rmSync(dest, { force: true });
        throw new CorruptBlobError(entry.digest, 'content does not match its digest');
      }
      return;
    }
    mkdirSync(dest, { recursive: true });
    for (const e of this.readTree(entry.digest).entries) {
      const p = join(dest, e.name);
      if (e.type === 'symlink') symlinkSync(e.target, p);
      else this.materialize(e, p, onBytes);
    }
  }

  /**
   * materialize, yielding to the event loop every few files and stopping (rejecting with the
   * signal's reason) once `signal` is aborted: ten thousand installed files take seconds to write,
   * and an interrupt must not wait for them.
   */
  async materializeAsync(entry: { type: 'file' | 'dir'; digest: Sha256; executable?: boolean }, dest: string, signal?: AbortSignal): Promise<void> {
    let written = 0;
    const write = async (e: typeof entry, p: string): Promise<void> => {
      if (e.type === 'file') {
        this.materialize(e, p);
        if (++written % FILES_PER_TURN === 0) {
          await new Promise((r) => setImmediate(r));
          signal?.throwIfAborted();
        }
        return;
      }
      mkdirSync(p, { recursive: true });
      for (const c of this.readTree(e.digest).entries) {
        if (c.type === 'symlink') symlinkSync(c.target, join(p, c.name));
        else await write(c, join(p, c.name));
      }
    };
    signal?.throwIfAborted();
    await write(entry, dest);
  }

  /** Digest of a file or directory without storing it (inputs are hashed before a node runs). */
  static hashPath(path: string, fileDigest: (path: string) => { digest: Sha256; size: number } = sha256File): { type: 'file' | 'dir'; digest: Sha256 } {
    if (!statSync(path).isDirectory()) return { type: 'file', digest: fileDigest(path).digest };
    return { type: 'dir', digest: walkTree(path, fileDigest, (bytes) => sha256(bytes)).digest };
  }

  /** All blob digests present, with sizes and when each was written (for gc). */
  *list(): Generator<{ digest: Sha256; size: number; path: string; mtimeMs: number }> {
    if (!existsSync(this.dir)) return;
    for (const shard of readdirSync(this.dir)) {
      for (const name of readdirSync(join(this.dir, shard))) {
        const path = join(this.dir, shard, name);
        try {
          const st = statSync(path);
          yield { digest: name as Sha256, size: st.size, path, mtimeMs: st.mtimeMs };
        } catch {
          // removed meanwhile
        }
      }
    }
  }
}

/** Copies `src` (a path, or an open file read from its start) to a new file `dest`, hashing the bytes as they pass. */
function copyHashing(src: string | number, dest: string, mode = 0o600, flags = 'wx', onBytes?: (bytes: number) => void): { digest: Sha256; size: number } {
  const from = typeof src === 'number' ? src : openSync(src, 'r');
  let to: number | undefined;
  try {
    to = openSync(dest, flags, mode);
    const hash = createHash('sha256');
    const buf = ioBuffer();
    let size = 0;
    for (;;) {
      const n = readSync(from, buf, 0, buf.length, size);
      if (n === 0) break;
      hash.update(buf.subarray(0, n));
      for (let off = 0; off < n;) off += writeSync(to, buf, off, n - off);
      size += n;
      onBytes?.(n);
    }
    return { digest: hash.digest('hex') as Sha256, size };
  } finally {
    if (from !== src) closeSync(from);
    if (to !== undefined) closeSync(to);
  }
}

/** The whole open file, read from its start into the shared I/O buffer, when it fits (a view valid until the next use of the buffer); otherwise undefined. */
function readWhole(fd: number): Buffer | undefined {
  const buf = ioBuffer();
  let n = 0;
  for (;;) {
    const got = readSync(fd, buf, n, buf.length - n, n);
    if (got === 0) return buf.subarray(0, n);
    n += got;
    if (n === buf.length) return undefined;
  }
}

/** A path of the tree and what is there: a stored file, a symlink, or an empty directory. */
export interface TreeItem {
  path: string;
  entry: { type: 'file'; digest: Sha256; size: number; executable: boolean } | { type: 'symlink'; target: string } | 'empty-dir';
}

/** The Merkle tree of `items` (paths with '/'), its directories made by `dir` (stored, or only hashed). */
export function buildTree(
  items: readonly TreeItem[],
  dir: (entries: TreeEntry[]) => { digest: Sha256; size: number },
): { type: 'dir'; digest: Sha256; size: number } {
  interface Node {
    dirs: Map<string, Node>;
    leaves: TreeEntry[];
  }
  const root: Node = { dirs: new Map(), leaves: [] };
  const nodeAt = (parts: string[]): Node => {
    let n = root;
    for (const p of parts) {
      let next = n.dirs.get(p);
      if (!next) n.dirs.set(p, (next = { dirs: new Map(), leaves: [] }));
      n = next;
    }
    return n;
  };
  for (const { path, entry } of items) {
    const parts = path.split('/');
    const name = parts.pop()!;
    if (entry === 'empty-dir') nodeAt([...parts, name]);
    else nodeAt(parts).leaves.push({ name, ...entry });
  }
  const make = (n: Node): { digest: Sha256; size: number } =>
    dir([...n.leaves, ...[...n.dirs].map(([name, sub]): TreeEntry => ({ name, type: 'dir', ...make(sub) }))]);
  return { type: 'dir', ...make(root) };
}

/** A directory's blob: its entries sorted by name, as canonical JSON; its size is its files' bytes. */
function treeBlob(entries: readonly TreeEntry[]): { bytes: Buffer; size: number; sorted: TreeEntry[] } {
  const sorted = [...entries].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const size = sorted.reduce((n, e) => n + (e.type === 'symlink' ? 0 : e.size), 0);
  return { bytes: Buffer.from(canonicalJson({ entries: sorted })), size, sorted };
}

/** Builds the Merkle tree of a directory; `onFile` and `onTree` decide whether blobs are stored or only hashed. */
function walkTree(
  dir: string,
  onFile: (path: string) => { digest: Sha256; size: number },
  onTree: (bytes: Buffer) => Sha256,
): { digest: Sha256; size: number } {
  const entries: TreeEntry[] = [];
  let size = 0;
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    const st = lstatSync(p);
    if (st.isSymbolicLink()) {
      entries.push({ name, type: 'symlink', target: readlinkSync(p) });
    } else if (st.isDirectory()) {
      const sub = walkTree(p, onFile, onTree);
      entries.push({ name, type: 'dir', digest: sub.digest, size: sub.size });
      size += sub.size;
    } else if (st.isFile()) {
      const f = onFile(p);
      entries.push({ name, type: 'file', digest: f.digest, size: f.size, executable: (st.mode & 0o111) !== 0 });
      size += f.size;
    }
  }
  return { digest: onTree(treeBlob(entries).bytes), size };
}
