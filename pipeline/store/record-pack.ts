import { createHash } from 'node:crypto';
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { ioBuffer } from '../digest.js';

/**
 * A sealed pack of action records: what the no-op path reads instead of one file per record.
 *
 *   "PBACPK02"                        magic
 *   u32 count
 *   count x { key (32 bytes), outputs digest (32 bytes), u48 offset, u32 preimage length, u32 rest length }, sorted by key
 *   data: per record its pre-image bytes, then the rest of the record as JSON (without key and pre-image)
 *   sha256 of everything above        the seal
 *
 * The seal is checked once when the pack is opened, so an entry is trusted without re-hashing
 * its outputs; a lookup still compares the pre-image bytes the caller's key was computed from.
 * Entries (pre-image + rest) stay on disk until read: memory holds the key table only.
 */
const MAGIC = Buffer.from('PBACPK02');
const ENTRY = 32 + 32 + 6 + 4 + 4;
// Field offsets within a table entry.
const OUTPUTS = 32;
const OFFSET = 64;
const PRE_LEN = 70;
const REST_LEN = 74;
const HEADER = MAGIC.length + 4;
const SEAL = 32;

export interface PackedRecord {
  key: string;
  preimage: string;
  /** The record's other fields, as JSON. */
  rest: string;
  /** Its outputs' digest (in the key table: a downstream key needs only this). */
  outputsDigest: string;
}

/** Reads `len` bytes at `offset` of the pack; the buffer is valid until the next read. */
type ReadAt = (offset: number, len: number) => Buffer;

export class RecordPack {
  private constructor(
    private readonly table: Buffer,
    private readonly readAt: ReadAt,
    readonly count: number,
  ) {}

  /**
   * Opens a pack file: undefined if there is none; throws if it is not whole (bad magic, size
   * or seal). The seal is checked by streaming the file; then only the key table is held in
   * memory and each entry is read from the file when it is looked up (the file stays open:
   * a pack replaced meanwhile is still read whole, as it was).
   */
  static open(path: string): RecordPack | undefined {
    let fd: number;
    try {
      fd = openSync(path, 'r');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw e;
    }
    try {
      const stat = fstatSync(fd);
      // Only a regular file is a pack. Anything else at its path (a directory, whose size is 4096
      // on ext4 but 40 on tmpfs) is a file system problem, left as it is, never set aside as a
      // pack that is not whole.
      if (!stat.isFile()) {
        const code = stat.isDirectory() ? 'EISDIR' : 'EINVAL';
        throw Object.assign(new Error(`${code}: ${path} is not a regular file`), { code });
      }
      const size = stat.size;
      const head = Buffer.alloc(HEADER);
      if (size < HEADER + SEAL || readSync(fd, head, 0, HEADER, 0) !== HEADER || !head.subarray(0, MAGIC.length).equals(MAGIC))
        throw new Error('not a record pack (bad magic or too short)');
      const count = head.readUInt32LE(MAGIC.length);
      if (HEADER + count * ENTRY + SEAL > size) throw new Error(`record pack is truncated (${count} entries declared)`);
      const hash = createHash('sha256');
      const chunk = ioBuffer();
      for (let at = 0; at < size - SEAL;) {
        const n = readSync(fd, chunk, 0, Math.min(chunk.length, size - SEAL - at), at);
        if (n === 0) throw new Error('record pack is truncated');
        hash.update(chunk.subarray(0, n));
        at += n;
      }
      const seal = Buffer.alloc(SEAL);
      readSync(fd, seal, 0, SEAL, size - SEAL);
      if (!hash.digest().equals(seal)) throw new Error('record pack does not match its seal');
      const table = Buffer.alloc(count * ENTRY);
      readSync(fd, table, 0, table.length, HEADER);
      let scratch = Buffer.alloc(4096);
      const readAt: ReadAt = (offset, len) => {
        if (len > scratch.length) scratch = Buffer.alloc(len);
        readSync(fd, scratch, 0, len, offset);
        return scratch.subarray(0, len);
      };
      return new RecordPack(table, readAt, count);
    } catch (e) {
      closeSync(fd);
      throw e;
    }
  }

  /** A pack held in memory (checked the same way). */
  static fromBytes(buf: Buffer): RecordPack {
    if (buf.length < HEADER + SEAL || !buf.subarray(0, MAGIC.length).equals(MAGIC)) throw new Error('not a record pack (bad magic or too short)');
    const count = buf.readUInt32LE(MAGIC.length);
    if (HEADER + count * ENTRY + SEAL > buf.length) throw new Error(`record pack is truncated (${count} entries declared)`);
    const seal = createHash('sha256')
      .update(buf.subarray(0, buf.length - SEAL))
      .digest();
    if (!seal.equals(buf.subarray(buf.length - SEAL))) throw new Error('record pack does not match its seal');
    return new RecordPack(buf.subarray(HEADER, HEADER + count * ENTRY), (offset, len) => buf.subarray(offset, offset + len), count);
  }

  /** The pack's bytes for these records (sorted by key; a later duplicate replaces an earlier one). */
  static build(records: Iterable<PackedRecord>): Buffer {
    const byKey = new Map<string, PackedRecord>();
    for (const r of records) byKey.set(r.key, r);
    const sorted = [...byKey.values()].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    const bodies = sorted.map((r) => [Buffer.from(r.preimage), Buffer.from(r.rest)] as const);
    const dataStart = HEADER + sorted.length * ENTRY;
    const size = dataStart + bodies.reduce((a, [p, r]) => a + p.length + r.length, 0) + SEAL;
    const buf = Buffer.alloc(size);
    MAGIC.copy(buf, 0);
    buf.writeUInt32LE(sorted.length, MAGIC.length);
    let at = dataStart;
    sorted.forEach((r, i) => {
      const e = HEADER + i * ENTRY;
      const [pre, rest] = bodies[i]!;
      buf.write(r.key, e, 32, 'hex');
      buf.write(r.outputsDigest, e + OUTPUTS, 32, 'hex');
      buf.writeUIntLE(at, e + OFFSET, 6);
      buf.writeUInt32LE(pre.length, e + PRE_LEN);
      buf.writeUInt32LE(rest.length, e + REST_LEN);
      pre.copy(buf, at);
      rest.copy(buf, at + pre.length);
      at += pre.length + rest.length;
    });
    createHash('sha256')
      .update(buf.subarray(0, size - SEAL))
      .digest()
      .copy(buf, size - SEAL);
    return buf;
  }

  private byKey: Map<string, number> | undefined;
  /** The caller's pre-image as bytes, for restIfPreimage (one buffer, grown as needed). */
  private expected = Buffer.alloc(4096);

  /** The entry index of `key`, or -1 (the key table is read into a map on the first lookup: measured faster than a binary search of the table). */
  indexOf(key: string): number {
    if (!this.byKey) {
      this.byKey = new Map();
      for (let i = 0, e = 0; i < this.count; i++, e += ENTRY) this.byKey.set(this.table.toString('hex', e, e + 32), i);
    }
    return this.byKey.get(key) ?? -1;
  }

  has(key: string): boolean {
    return this.indexOf(key) >= 0;
  }

  entry(i: number): PackedRecord {
    return { key: this.keyAt(i), ...this.body(i), outputsDigest: this.outputsDigest(i) };
  }

  /**
   * Entry `i`'s rest as bytes (valid until the next read), read only if its pre-image is exactly
   * `preimage`: compared as bytes in one read, neither side decoded. undefined if it differs.
   */
  restIfPreimage(i: number, preimage: string): Buffer | undefined {
    const { at, preLen, restLen } = this.slot(i);
    if (Buffer.byteLength(preimage) !== preLen) return undefined;
    const body = this.readAt(at, preLen + restLen);
    if (preLen > this.expected.length) this.expected = Buffer.alloc(preLen);
    this.expected.write(preimage, 0, preLen, 'utf8');
    return body.compare(this.expected, 0, preLen, 0, preLen) === 0 ? body.subarray(preLen) : undefined;
  }

  /** Entry `i`'s pre-image and rest, in one read. */
  body(i: number): { preimage: string; rest: string } {
    const { at, preLen, restLen } = this.slot(i);
    const body = this.readAt(at, preLen + restLen);
    return { preimage: body.toString('utf8', 0, preLen), rest: body.toString('utf8', preLen, preLen + restLen) };
  }

  keyAt(i: number): string {
    const e = i * ENTRY;
    return this.table.toString('hex', e, e + 32);
  }

  outputsDigest(i: number): string {
    const e = i * ENTRY + OUTPUTS;
    return this.table.toString('hex', e, e + 32);
  }

  /** Entry `i` without its pre-image (the caller holds the same bytes). */
  rest(i: number): string {
    const { at, preLen, restLen } = this.slot(i);
    return this.readAt(at + preLen, restLen).toString('utf8');
  }

  /** Bytes entry `i` takes in the pack. */
  size(i: number): number {
    const { preLen, restLen } = this.slot(i);
    return ENTRY + preLen + restLen;
  }

  *entries(): Generator<PackedRecord> {
    for (let i = 0; i < this.count; i++) yield this.entry(i);
  }

  private slot(i: number): { at: number; preLen: number; restLen: number } {
    const e = i * ENTRY;
    return { at: this.table.readUIntLE(e + OFFSET, 6), preLen: this.table.readUInt32LE(e + PRE_LEN), restLen: this.table.readUInt32LE(e + REST_LEN) };
  }
}
