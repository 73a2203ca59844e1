import { closeSync, existsSync, fsyncSync, ftruncateSync, mkdirSync, openSync, readdirSync, readFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { canonicalJson, type Json } from '../canonical-json.js';
import { syncDir } from '../atomic-write.js';
import { sha256, type Sha256 } from '../digest.js';
import type { LockDir } from './lock.js';
import { recordKey, signatureHolds } from './record-key.js';

/**
 * An append-only, hash-chained log (one file per name, one JSON line per entry): each entry
 * carries the hash of the one before it and its own hash over everything else it holds, so an
 * entry edited, removed or reordered breaks the chain where it happened. (A log cut short, or
 * replaced whole by a consistent one, still chains: what a log's entries are named by elsewhere
 * — a stored record naming the entry it was made under — is how that is found.)
 */
export interface ChainEntry {
  /** 1, 2, ... in file order. */
  seq: number;
  at: string;
  /** The hash of entry seq - 1 (null for the first). */
  prev: Sha256 | null;
  type: string;
  data: Json;
  /** SHA-256 of the canonical JSON of the entry without this field and `sig`. */
  hash: Sha256;
  /** The record key's Ed25519 signature of `hash`, with its public key (record-key.ts). */
  sig?: { key: string; pub: string; sig: string };
}

export type NewEntry = { type: string; data: Json };

export type ChainRead = { ok: true; entries: ChainEntry[] } | { ok: false; problem: string };

/** The key ids that signed a log's entries, in order of first use. */
export function signersOf(entries: readonly ChainEntry[]): string[] {
  return [...new Set(entries.flatMap((e) => (e.sig ? [e.sig.key] : [])))];
}

function hashOf(e: Omit<ChainEntry, 'hash'>): Sha256 {
  return sha256(canonicalJson({ seq: e.seq, at: e.at, prev: e.prev, type: e.type, data: e.data }));
}

/** Entries from a log's text; a last line cut short by a crash (no newline) is not an entry. */
function parse(path: string, text: string): ChainRead & { wholeBytes: number } {
  const entries: ChainEntry[] = [];
  const lines = text.split('\n');
  const complete = lines.slice(0, -1); // the empty string after the last newline, or a last line cut short
  const wholeBytes = text.endsWith('\n') ? Buffer.byteLength(text) : Buffer.byteLength(text) - Buffer.byteLength(lines[lines.length - 1]!);
  for (const [i, line] of complete.entries()) {
    const where = `${path}:${i + 1}`;
    let e: ChainEntry;
    try {
      e = JSON.parse(line) as ChainEntry;
    } catch {
      return { ok: false, problem: `${where} is not a log entry (not JSON): the log was edited`, wholeBytes };
    }
    const prev = entries[entries.length - 1];
    if (e.seq !== i + 1) return { ok: false, problem: `${where} has seq ${String(e.seq)}, not ${i + 1}: entries were removed or reordered`, wholeBytes };
    if (e.prev !== (prev?.hash ?? null))
      return {
        ok: false,
        problem: `${where} does not chain to the entry before it (its prev is ${String(e.prev)}): an entry was edited or removed`,
        wholeBytes,
      };
    if (e.hash !== hashOf(e)) return { ok: false, problem: `${where} does not match its own hash: it was edited`, wholeBytes };
    // Re-hashing a log is in anyone's reach; signing it needs the record key, which lives outside the store.
    if (!e.sig) return { ok: false, problem: `${where} is not signed: it was written without the record key (the log was rewritten)`, wholeBytes };
    if (!signatureHolds(e.hash, e.sig)) return { ok: false, problem: `${where}'s signature does not hold: it was edited after it was signed`, wholeBytes };
    entries.push(e);
  }
  return { ok: true, entries, wholeBytes };
}

/** A log's text; empty when it does not exist yet. */
function textOf(path: string): string {
  return existsSync(path) ? readFileSync(path, 'utf8') : '';
}

export class ChainedLog {
  /** Appends that wrote, by this process (what a reader of the logs may have missed since it read them). */
  appended = 0;

  constructor(
    private readonly dir: string,
    private readonly locks: LockDir,
    /** Called before an entry is written: what the entry may name is made durable first (the store commits its records). */
    private readonly beforeWrite: () => void = () => {},
  ) {}

  pathOf(name: string): string {
    if (!/^[A-Za-z0-9._-]+$/.test(name)) throw new Error(`log name "${name}" must be letters, digits, . _ or -`);
    return join(this.dir, `${name}.chain.jsonl`);
  }

  /** The names of the logs there are. */
  names(): string[] {
    let files: string[];
    try {
      files = readdirSync(this.dir);
    } catch {
      return [];
    }
    return files
      .filter((f) => f.endsWith('.chain.jsonl'))
      .map((f) => f.slice(0, -'.chain.jsonl'.length))
      .sort();
  }

  exists(name: string): boolean {
    return existsSync(this.pathOf(name));
  }

  /** Every entry, verified link by link; a broken chain is a problem naming the line. */
  read(name: string): ChainRead {
    const path = this.pathOf(name);
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { ok: true, entries: [] };
      throw e;
    }
    const r = parse(path, text);
    return r.ok ? { ok: true, entries: r.entries } : { ok: false, problem: r.problem };
  }

  /**
   * Appends what `make` returns for the entries there now, under the log's lock (concurrent
   * writers lose nothing), synced before it returns. Refuses (returns the problem) when the
   * chain is broken: nothing is appended to a log that no longer proves anything. `make` may be
   * asked twice, first without the lock: it decides from the entries alone, and what it decides
   * besides them, its caller takes from its last call.
   */
  async append(name: string, make: (entries: readonly ChainEntry[]) => NewEntry[], now: () => Date = () => new Date()): Promise<ChainRead> {
    const path = this.pathOf(name);
    // Nothing to add to what is there now (a run that changed nothing): no lock. What a read
    // without it sees is whole entries (a line being appended is not one yet), a prefix of what
    // any later reader sees: answering from it is answering before the append in flight.
    const seen = parse(path, textOf(path));
    if (seen.ok && !make(seen.entries).length) return { ok: true, entries: seen.entries };
    const lock = await this.locks.acquire(`log-${sha256(name).slice(0, 32)}`, `log ${name}`);
    try {
      const text = textOf(path);
      const r = parse(path, text);
      if (!r.ok) return { ok: false, problem: r.problem };
      const fresh = make(r.entries);
      if (!fresh.length) return { ok: true, entries: r.entries }; // nothing to write: no file is made
      const entries = [...r.entries];
      let out = '';
      for (const f of fresh) {
        const prev = entries[entries.length - 1];
        const base = { seq: entries.length + 1, at: now().toISOString(), prev: prev?.hash ?? null, type: f.type, data: f.data };
        const hash = hashOf(base);
        const entry: ChainEntry = { ...base, hash, sig: recordKey().sign(hash) };
        entries.push(entry);
        out += JSON.stringify(entry) + '\n';
      }
      this.beforeWrite();
      mkdirSync(this.dir, { recursive: true }); // not ensureDir's memo: a registry moved away is made again
      const fd = openSync(path, 'a');
      try {
        // A line a crash cut short is dropped before the next entry is written.
        if (r.wholeBytes !== Buffer.byteLength(text)) ftruncateSync(fd, r.wholeBytes);
        writeSync(fd, out);
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
      if (!text) syncDir(this.dir); // a new log's name is durable too
      this.appended++;
      return { ok: true, entries };
    } finally {
      lock.release();
    }
  }
}
