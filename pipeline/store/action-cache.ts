import { appendFileSync, closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, readSync, renameSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { canonicalJson, type Json } from '../canonical-json.js';
import { cacheKeyOf, digestOfJson, sha256, type CacheKey, type Sha256 } from '../digest.js';
import { errorMessage } from '../result.js';
import { randomBytes } from 'node:crypto';
import { writeFileAtomic } from '../atomic-write.js';
import type { OutputEntry, Stamp } from './cas.js';
import { isAlive, type LockDir } from './lock.js';
import { RecordJournal } from './record-journal.js';
import { RecordPack, type PackedRecord } from './record-pack.js';

export type OutputManifest = Record<string, OutputEntry>;

/** What a node produced under a key: the proof of a cache hit. */
export interface ActionRecord {
  schema: 1;
  key: CacheKey;
  /** The exact canonical JSON that hashes to `key`. */
  preimage: string;
  node: string;
  step: string;
  kind: string;
  outputs: OutputManifest;
  outputs_digest: Sha256;
  /** Stamp of every blob in the outputs' closure when it was verified. */
  stamps: Record<string, Stamp>;
  /** The command log: evidence, never part of the output digest (it holds timings). */
  log: Sha256 | null;
  started_at: string;
  duration_ms: number;
  pairbench_version: string;
  /**
   * What the program that ran the engine said about this execution (not part of the key): e.g.
   * the store and the preregistered cohort version an attempt was made under, so a registry
   * that was reset is found from the records themselves.
   */
  provenance?: Json;
}

/**
 * A hit from the pack's no-op path carries its stamps as [digest, stamp, ...], decoded from the
 * head of the entry for the lookup's blob check (not kept with the record, which a run holds to
 * its end).
 */
export type RecordLookup = { status: 'hit'; record: ActionRecord; stampPairs?: readonly string[] } | { status: 'miss' } | { status: 'corrupt'; reason: string };

const scratch = Buffer.allocUnsafe(64 * 1024);

/** Reads a file that is usually small with one open/read/close (the no-op hot path reads thousands). */
function readSmallFile(path: string): string | undefined {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch {
    return undefined;
  }
  try {
    const n = readSync(fd, scratch, 0, scratch.length, 0);
    if (n < scratch.length) return scratch.toString('utf8', 0, n);
  } finally {
    closeSync(fd);
  }
  return readFileSync(path, 'utf8');
}

export function outputsDigest(outputs: OutputManifest): Sha256 {
  return digestOfJson(outputs);
}

/**
 * A record read from the pack: its fields are parsed from the pack when they are read, not
 * held, so a no-op over 100,000 nodes keeps 100,000 small objects instead of 100,000 parsed
 * records (and their pre-images). Serializes (and spreads into) the full record.
 */
class PackedActionRecord implements ActionRecord {
  readonly #pack: RecordPack;
  readonly #i: number;
  /** The entry's fields as read by the lookup: used by the first field read, then dropped. */
  #first: string | undefined;
  readonly schema = 1 as const;

  constructor(
    pack: RecordPack,
    i: number,
    readonly key: CacheKey,
    rest?: string,
  ) {
    this.#pack = pack;
    this.#i = i;
    this.#first = rest;
  }

  #text(): string {
    const text = this.#first ?? this.#pack.rest(this.#i);
    this.#first = undefined;
    return text;
  }

  #rest(): Omit<ActionRecord, 'key' | 'preimage'> {
    return JSON.parse(this.#text()) as Omit<ActionRecord, 'key' | 'preimage'>;
  }

  get preimage(): string {
    return this.#pack.body(this.#i).preimage;
  }
  get outputs_digest(): Sha256 {
    return this.#pack.outputsDigest(this.#i) as Sha256;
  }
  get node(): string {
    return this.#rest().node;
  }
  get step(): string {
    return this.#rest().step;
  }
  get kind(): string {
    return this.#rest().kind;
  }
  get outputs(): OutputManifest {
    return this.#rest().outputs;
  }
  get stamps(): Record<string, Stamp> {
    // From the head of the entry when it is in the pack's own form, not the whole record.
    const text = this.#text();
    const pairs = stampPairsAtHead(text);
    if (!pairs) return (JSON.parse(text) as ActionRecord).stamps;
    const out: Record<string, Stamp> = {};
    for (let j = 0; j < pairs.length; j += 2) out[pairs[j]!] = pairs[j + 1]!;
    return out;
  }
  get log(): Sha256 | null {
    return this.#rest().log;
  }
  get started_at(): string {
    return this.#rest().started_at;
  }
  get duration_ms(): number {
    return this.#rest().duration_ms;
  }
  get pairbench_version(): string {
    return this.#rest().pairbench_version;
  }
  get provenance(): Json | undefined {
    return this.#rest().provenance;
  }

  toJSON(): ActionRecord {
    return { ...this.#rest(), key: this.key, preimage: this.preimage, schema: 1 };
  }
}

/**
 * The record's fields as a plain object. A packed record's fields are getters on its class,
 * which a spread or a destructuring skips: `{ ...record }` of one holds its key and schema only.
 */
export function plainRecord(record: ActionRecord): ActionRecord {
  return record instanceof PackedActionRecord ? record.toJSON() : record;
}

const STAMPS_FIRST = '{"stamps":{';

/**
 * A record as the pack holds it: its other fields as JSON with the stamps first (packs written
 * before this order read whole). A stamps object holds hex digests and `size:mtime` strings,
 * never a brace: it ends at the first `}`.
 */
function packedRecord({ key, preimage, stamps, ...others }: ActionRecord): PackedRecord {
  return { key, preimage, rest: JSON.stringify({ stamps, ...others }), outputsDigest: others.outputs_digest };
}

/**
 * The stamps at the head of a packed entry's rest as [digest, stamp, ...] (undefined: not stamps
 * first, or not in the exact form the pack writes: the record is then parsed whole).
 */
function stampPairsAtHead(head: string): string[] | undefined {
  if (!head.startsWith(STAMPS_FIRST)) return undefined;
  const end = head.indexOf('}', STAMPS_FIRST.length);
  return end < 0 ? undefined : stampPairsOf(head.slice(STAMPS_FIRST.length - 1, end + 1));
}

/** The same, from the entry's bytes: only the head up to the stamps' closing brace is decoded. */
function stampPairsAtHeadOf(rest: Buffer): string[] | undefined {
  const end = rest.indexOf(0x7d); // `}`: the prefix holds none, so the first one closes the stamps
  return end < 0 ? undefined : stampPairsAtHead(rest.toString('utf8', 0, end + 1));
}

/** One stamp as the pack writes it: a digest, a size and an mtime in milliseconds, then `,` or the closing `}`. */
const STAMP_ENTRY = /"([0-9a-f]{64})":"([0-9]+:[0-9.e+-]+)"([,}])/y;

/**
 * `{"<digest>":"<size>:<mtime>",...}` as pairs, without JSON.parse: an object keyed by 64-digit
 * digests cost every cached node's lookup ~3 us (each key is interned). undefined if the text
 * is not in exactly that form.
 */
function stampPairsOf(text: string): string[] | undefined {
  const out: string[] = [];
  if (text === '{}') return out;
  STAMP_ENTRY.lastIndex = 1;
  for (;;) {
    const m = STAMP_ENTRY.exec(text);
    if (!m) return undefined;
    out.push(m[1]!, m[2]!);
    if (m[3] === '}') return STAMP_ENTRY.lastIndex === text.length ? out : undefined;
  }
}

/** Loose records in the store before a run packs them (a few runs' worth stays loose). */
const PACK_WHEN_LOOSE = 64;
/**
 * A process that writes records without end (a queue worker; a run of 100k nodes) packs on its way
 * when its journal holds this many lines, or as many as the pack already holds (so the rewrites,
 * each of the whole pack, add up to a few times its size): a journal and the loose records stay
 * bounded by the store's size, not by the process's lifetime.
 */
const PACK_WHEN_JOURNALED = 4096;

/**
 * Action records: node key -> output manifest. A run writes each record as its own small
 * file (published last, atomically); once enough are loose they are packed into one sealed
 * file (record-pack.ts) and the loose files removed, as git packs loose objects. A lookup
 * reads the pack first, then the loose file.
 */
export class ActionCache {
  private packed: RecordPack | null | undefined;
  /** Records this process wrote or read loose: only then is it worth looking for records to pack. */
  private looseTouched = 0;
  /**
   * Records read from the remote tier by this run, held here (get serves them) until packLoose
   * writes them: into the pack with the loose ones, or as loose files when there are too few to
   * pack (or the pack cannot be rewritten). A replay fetches a record per node; a file each (a
   * directory, a temp file, a rename, later an unlink) was most of the difference between
   * replaying a cohort and a local no-op. Lost in a crash, they are fetched again.
   */
  private readonly fetched = new Map<string, ActionRecord>();
  /** Group commit: the durable copy of the records written loose without an fsync (record-journal.ts). */
  private readonly journal: RecordJournal;
  /** Journal lines at which put() packs on the way (raised after a pack that failed: not tried at every record). */
  private packWhenJournaled = PACK_WHEN_JOURNALED;
  private recovered = false;

  constructor(
    private readonly dir: string,
    private readonly tmpDir: string,
    private readonly locks: LockDir,
  ) {
    this.journal = new RecordJournal(join(dir, 'journal'));
  }

  /**
   * Before the first read or write: records a power cut took from their loose files are put back
   * from the journals written in an earlier boot (only a journal's whole, verified lines).
   */
  private recoverOnce(): void {
    if (this.recovered) return;
    this.recovered = true;
    this.journal.recover((line) => {
      let record: ActionRecord;
      try {
        record = JSON.parse(line) as ActionRecord;
        if (typeof record.key !== 'string' || !/^[0-9a-f]{64}$/.test(record.key)) return;
        if (cacheKeyOf(record.preimage) !== record.key || outputsDigest(record.outputs) !== record.outputs_digest) return;
      } catch {
        return; // not a record: nothing to put back
      }
      if (this.pack()?.has(record.key) || this.getLoose(record.key).status === 'hit') return;
      writeFileAtomic(this.pathOf(record.key), line + '\n', { tmpDir: this.tmpDir });
    });
  }

  /** Commits the records written so far (one fsync): a barrier before anything that names them outlives this process. */
  commit(): void {
    this.journal.commit();
  }

  /** The run is over: its records are committed and its journal closed (a later record opens another). */
  close(): void {
    this.journal.close();
  }

  /** Records written and not yet committed. */
  get uncommitted(): number {
    return this.journal.uncommitted;
  }

  pathOf(key: CacheKey): string {
    return join(this.dir, key.slice(0, 2), `${key}.json`);
  }

  get packPath(): string {
    return join(this.dir, 'pack');
  }

  /** The pack as this process last read it (null: none, or one that is not whole and was set aside). */
  private pack(): RecordPack | null {
    if (this.packed !== undefined) return this.packed;
    try {
      this.packed = RecordPack.open(this.packPath) ?? null;
    } catch (e) {
      this.packed = null;
      // The file system failed us (EIO, EMFILE, ...): no pack for this process, the file is left alone.
      if ((e as NodeJS.ErrnoException).code !== undefined) {
        this.packProblem = `the record pack ${this.packPath} could not be read (${errorMessage(e)}); its records are rebuilt`;
        return null;
      }
      // A pack that is not whole is evidence, not truth: set aside; its nodes rebuild.
      this.setAside();
      this.packProblem = `the record pack ${this.packPath} was not whole (${errorMessage(e)}) and was set aside`;
    }
    return this.packed;
  }

  private setAside(): void {
    try {
      renameSync(this.packPath, `${this.packPath}.corrupt-${Date.now()}`);
    } catch {
      // another process set it aside first
    }
  }

  /** Why the pack was set aside, when it was (fsck reports it). */
  packProblem: string | undefined;

  /**
   * Reads and verifies a record: its pre-image must be the one its key names, its outputs
   * must match their digest. A caller that holds the pre-image `key` was computed from passes
   * it: the record's must then be the same bytes, which proves the same without hashing again.
   * A packed record's outputs are covered by the pack's seal, checked when it was opened.
   */
  get(key: CacheKey, preimage?: string): RecordLookup {
    this.recoverOnce();
    const fetched = this.fetched.get(key);
    // Verified when it was fetched (its pre-image hashes to its key): the caller's pre-image must be those bytes.
    if (fetched)
      return preimage !== undefined && fetched.preimage !== preimage
        ? { status: 'corrupt', reason: 'record does not match its key' }
        : { status: 'hit', record: fetched };
    const pack = this.pack();
    const i = pack ? pack.indexOf(key) : -1;
    if (pack && i >= 0) {
      const corrupt = { status: 'corrupt', reason: 'packed record does not match its key' } as const;
      if (preimage === undefined) {
        const entry = pack.body(i);
        return cacheKeyOf(entry.preimage) !== key ? corrupt : { status: 'hit', record: new PackedActionRecord(pack, i, key, entry.rest) };
      }
      // The no-op path: one read of the entry, its pre-image compared as bytes, and of the rest only the stamps decoded (the lookup's blob check reads them).
      const rest = pack.restIfPreimage(i, preimage);
      if (!rest) return corrupt;
      const stampPairs = stampPairsAtHeadOf(rest);
      return { status: 'hit', record: new PackedActionRecord(pack, i, key), ...(stampPairs ? { stampPairs } : {}) };
    }
    return this.getLoose(key, preimage);
  }

  private getLoose(key: CacheKey, preimage?: string): RecordLookup {
    const text = readSmallFile(this.pathOf(key));
    if (text === undefined) return { status: 'miss' };
    this.looseTouched++;
    let record: ActionRecord;
    try {
      record = JSON.parse(text) as ActionRecord;
    } catch (e) {
      return { status: 'corrupt', reason: `unreadable record: ${errorMessage(e)}` };
    }
    if (record.key !== key || (preimage !== undefined ? record.preimage !== preimage : cacheKeyOf(record.preimage) !== key)) {
      return { status: 'corrupt', reason: 'record does not match its key' };
    }
    if (outputsDigest(record.outputs) !== record.outputs_digest) {
      return { status: 'corrupt', reason: 'output manifest does not match its digest' };
    }
    return { status: 'hit', record };
  }

  /** Held until the run packs its records (see fetched). */
  putFetched(record: ActionRecord): void {
    this.fetched.set(record.key, record);
  }

  /**
   * Writes a record loose, never synced on its own: a durable one (the default) is appended to
   * the journal, whose batch commit makes it survive a power cut (not an fsync per record).
   * `durable: false` for a record that can be had again (one read through from the remote
   * tier): a record cut short by a power cut reads as corrupt and is fetched again.
   */
  put(record: ActionRecord, { durable = true } = {}): void {
    this.recoverOnce();
    const line = JSON.stringify(record);
    writeFileAtomic(this.pathOf(record.key), line + '\n', { tmpDir: this.tmpDir, sync: false });
    if (durable) this.journal.append(line);
    this.looseTouched++;
    const held = this.journal.held;
    if (held >= this.packWhenJournaled && held >= (this.pack()?.count ?? 0)) this.packOnTheWay();
  }

  remove(key: CacheKey): void {
    this.removeMany([key]);
  }

  /** Removes records, loose and packed (the pack is rewritten once, under its lock). */
  removeMany(keys: Iterable<CacheKey>): void {
    const list = [...keys];
    for (const k of list) {
      this.fetched.delete(k);
      rmSync(this.pathOf(k), { force: true });
    }
    if (!list.some((k) => this.pack()?.has(k))) return;
    const drop = new Set<string>(list);
    this.rewritePack((current) => [...(current?.entries() ?? [])].filter((e) => !drop.has(e.key)));
  }

  /**
   * Packs the loose records when a run left enough of them (or `force`): every loose record
   * that verifies joins the pack, then its file is removed. Returns how many were packed.
   */
  packLoose(options: { force?: boolean } = {}): number {
    this.recoverOnce();
    if (!options.force && this.looseTouched === 0 && this.fetched.size === 0) return 0;
    const loose = [...this.listLoose()];
    const fetched = [...this.fetched.values()];
    this.fetched.clear();
    // Too few to rewrite the pack for, or a pack that cannot be rewritten: they go loose, as any record does.
    const fetchedLoose = () => fetched.forEach((r) => this.put(r, { durable: false }));
    if (!options.force && loose.length + fetched.length < PACK_WHEN_LOOSE) {
      fetchedLoose();
      return 0;
    }
    if (!loose.length && !fetched.length) return 0;
    const joined: string[] = [];
    try {
      this.rewritePack((current) => {
        const fresh = fetched.map(packedRecord);
        for (const l of loose) {
          const found = this.getLoose(l.key);
          if (found.status !== 'hit') continue; // a corrupt record stays where the next lookup drops it
          fresh.push(packedRecord(found.record));
          joined.push(l.path);
        }
        return [...(current?.entries() ?? []), ...fresh];
      });
    } catch (e) {
      fetchedLoose();
      throw e;
    }
    for (const p of joined) rmSync(p, { force: true });
    this.looseTouched = 0;
    // The pack (synced) holds what the journals were keeping.
    this.journal.retire();
    return joined.length + fetched.length;
  }

  /** A long writer's pack (see PACK_WHEN_JOURNALED). One that fails leaves the records loose, as valid; the next try waits for twice the lines. */
  private packOnTheWay(): void {
    try {
      this.packLoose({ force: true });
      this.packWhenJournaled = PACK_WHEN_JOURNALED;
    } catch {
      this.packWhenJournaled = 2 * this.journal.held;
    }
  }

  private rewritePack(next: (current: RecordPack | undefined) => PackedRecord[]): void {
    const lock = this.locks.acquireSync('action-pack', 'rewriting the record pack');
    try {
      // Under the lock, from the pack on disk now (another process may have rewritten it).
      let current: RecordPack | undefined;
      try {
        current = RecordPack.open(this.packPath);
      } catch (e) {
        // A pack that cannot be read now is not rewritten without its records: the caller sees the error.
        if ((e as NodeJS.ErrnoException).code !== undefined) throw e;
        this.setAside();
        current = undefined;
      }
      writeFileAtomic(this.packPath, RecordPack.build(next(current)), { tmpDir: this.tmpDir });
      this.packed = undefined;
    } finally {
      lock.release();
    }
  }

  /** Every record: loose files, then packed entries (`path` is the pack for those). */
  *list(): Generator<{ key: CacheKey; path: string; size: number; mtimeMs: number }> {
    this.recoverOnce();
    const seen = new Set<string>();
    for (const l of this.listLoose()) {
      seen.add(l.key);
      yield l;
    }
    const pack = this.pack();
    if (!pack) return;
    const mtimeMs = statSync(this.packPath, { throwIfNoEntry: false })?.mtimeMs ?? 0;
    for (let i = 0; i < pack.count; i++) {
      const key = pack.keyAt(i) as CacheKey;
      if (!seen.has(key)) yield { key, path: this.packPath, size: pack.size(i), mtimeMs };
    }
  }

  private *listLoose(): Generator<{ key: CacheKey; path: string; size: number; mtimeMs: number }> {
    if (!existsSync(this.dir)) return;
    for (const shard of readdirSync(this.dir)) {
      if (shard.length !== 2) continue; // the pack, and packs set aside
      for (const name of readdirSync(join(this.dir, shard))) {
        if (!name.endsWith('.json')) continue;
        const path = join(this.dir, shard, name);
        try {
          const st = statSync(path);
          yield { key: name.slice(0, -5) as CacheKey, path, size: st.size, mtimeMs: st.mtimeMs };
        } catch {
          // removed meanwhile
        }
      }
    }
  }
}

/** The latest executed key and the last failure of each node id: what `plan` diffs against. */
export interface NodeHistory {
  node: string;
  latest?: { key: CacheKey; at: string };
  /** `log`: the failed execution's log blob, when it wrote one. */
  last_failure?: { key: CacheKey; at: string; reason: string; message: string; log?: Sha256 };
  /**
   * Results of the current key that were used but not cached (a step called it transient,
   * e.g. an infrastructure fault): kept until the key gets a result that is cached, which
   * then carries them as its `earlier-tries` output. Their blobs are never collected meanwhile.
   */
  tries?: NodeTry[];
}

export interface NodeTry {
  key: CacheKey;
  at: string;
  reason: string;
  outputs: OutputManifest;
}

/** Journals of built nodes merged into one when there are more than this many (those of finished runs). */
const JOURNALS_BEFORE_COMPACTION = 32;

/**
 * Per node id: a small file only while there is something to remember (its last failure,
 * transient tries), and the latest executed key in append-only journals, one per run
 * (`built/`): a successful node costs one appended line, not a file per node.
 */
export class NodeIndex {
  private latestByNode: Map<string, { key: CacheKey; at: string }> | undefined;
  private journal: string | undefined;

  constructor(
    private readonly dir: string,
    private readonly tmpDir: string,
  ) {}

  private pathOf(nodeId: string): string {
    const h = sha256(nodeId);
    return join(this.dir, h.slice(0, 2), `${h}.json`);
  }

  private get journalDir(): string {
    return join(this.dir, 'built');
  }

  private readFile(nodeId: string): NodeHistory | undefined {
    try {
      const h = JSON.parse(readFileSync(this.pathOf(nodeId), 'utf8')) as NodeHistory;
      return h.node === nodeId ? h : undefined;
    } catch {
      return undefined;
    }
  }

  /** The transient tries kept for a node (its file alone: the journals are not read). */
  tries(nodeId: string): NodeTry[] {
    return this.readFile(nodeId)?.tries ?? [];
  }

  get(nodeId: string): NodeHistory | undefined {
    const file = this.readFile(nodeId);
    const built = this.latest().get(nodeId);
    if (!file && !built) return undefined;
    const h: NodeHistory = { ...(file ?? { node: nodeId }) };
    // (A store written before the journals kept `latest` in the node's file: the newer wins.)
    if (built && (!h.latest || built.at >= h.latest.at)) h.latest = built;
    return h;
  }

  /** Read-modify-write of a node's failure and tries (its latest key lives in the journals). */
  update(nodeId: string, change: (h: NodeHistory) => NodeHistory): void {
    const { latest: _journaled, ...next } = change(this.get(nodeId) ?? { node: nodeId });
    if (next.last_failure || next.tries?.length) writeFileAtomic(this.pathOf(nodeId), canonicalJson(next) + '\n', { tmpDir: this.tmpDir });
    else rmSync(this.pathOf(nodeId), { force: true });
  }

  /** A node built `key`: its latest key, and whatever failure or tries it had are cleared. */
  recordBuilt(nodeId: string, key: CacheKey, at: string): void {
    // Clearing the failure and the tries leaves nothing to keep in the node's file.
    rmSync(this.pathOf(nodeId), { force: true });
    if (!this.journal) {
      mkdirSync(this.journalDir, { recursive: true }); // not ensureDir's memo: once per run, and the directory may have been moved since
      this.journal = join(this.journalDir, `${Date.now()}-${process.pid}-${randomBytes(3).toString('hex')}.jsonl`);
    }
    appendFileSync(this.journal, JSON.stringify({ node: nodeId, key, at }) + '\n');
    this.latestByNode?.set(nodeId, { key, at });
  }

  /** Latest built key of every node, from the journals (read once per process). */
  private latest(): Map<string, { key: CacheKey; at: string }> {
    if (this.latestByNode) return this.latestByNode;
    const map = new Map<string, { key: CacheKey; at: string }>();
    const names = existsSync(this.journalDir) ? readdirSync(this.journalDir).sort() : [];
    for (const name of names) {
      let text: string;
      try {
        text = readFileSync(join(this.journalDir, name), 'utf8');
      } catch {
        continue; // compacted meanwhile
      }
      for (const line of text.split('\n')) {
        if (!line) continue;
        try {
          const e = JSON.parse(line) as { node: string; key: CacheKey; at: string };
          const had = map.get(e.node);
          if (!had || e.at >= had.at) map.set(e.node, { key: e.key, at: e.at });
        } catch {
          // a line cut short by a crash: that build is simply not remembered
        }
      }
    }
    this.latestByNode = map;
    const finished = names.filter((n) => {
      const pid = Number(/^\d+-(\d+)-/.exec(n)?.[1]);
      return pid !== process.pid && !isAlive(pid);
    });
    if (finished.length > JOURNALS_BEFORE_COMPACTION) {
      const merged = [...map].map(([node, l]) => JSON.stringify({ node, key: l.key, at: l.at }) + '\n').join('');
      writeFileAtomic(join(this.journalDir, `${Date.now()}-${process.pid}-compacted.jsonl`), merged, { tmpDir: this.tmpDir });
      for (const n of finished) rmSync(join(this.journalDir, n), { force: true });
    }
    return map;
  }

  /** Every node's failure and tries (gc keeps the blobs of their pending tries). */
  *list(): Generator<NodeHistory> {
    if (!existsSync(this.dir)) return;
    for (const shard of readdirSync(this.dir)) {
      if (shard.length !== 2) continue;
      for (const name of readdirSync(join(this.dir, shard))) {
        try {
          yield JSON.parse(readFileSync(join(this.dir, shard, name), 'utf8')) as NodeHistory;
        } catch {
          // removed meanwhile, or unreadable: nothing to keep
        }
      }
    }
  }
}
