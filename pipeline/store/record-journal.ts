import { closeSync, fdatasyncSync, mkdirSync, openSync, readFileSync, readdirSync, rmSync, statSync, writeSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { syncDir } from '../atomic-write.js';
import { isAlive } from './lock.js';

/**
 * Group commit of action records. A record is written loose without an fsync, and its line
 * appended to this process's journal; one fdatasync of the journal commits every record
 * appended since the last (a batch). A kill -9 loses nothing either way: what was written is
 * the kernel's. What a power cut can take is the batch not yet committed (its nodes run again)
 * and any loose record whose data had not reached the disk: the next process that opens the
 * store after the reboot restores it from its journal.
 *
 * A batch is committed when it holds MAX_BATCH records, MAX_DELAY_MS after its first record,
 * at every barrier (`commit()`: before a registry entry is appended, at the end of a run) and
 * when the process exits. A journal is `<boot id>.<pid>.<random>.jsonl`, a record per line; it
 * goes once the pack holds its records and its writer is gone (`retire`).
 */
const MAX_BATCH = 64;
const MAX_DELAY_MS = 1_000;
/** A journal from another boot whose writer may still be live (a store shared by hosts) is kept this long. */
const FOREIGN_KEPT_MS = 10 * 60_000;

interface JournalName {
  boot: string;
  pid: number;
}

function parseName(name: string): JournalName | undefined {
  const m = /^([0-9a-z-]+)\.(\d+)\.[0-9a-f]+\.jsonl$/.exec(name);
  return m ? { boot: m[1]!, pid: Number(m[2]) } : undefined;
}

let bootIdCache: string | undefined;

/** This boot's id: a journal written in another boot may have lost what it did not commit. */
function bootId(): string {
  if (bootIdCache) return bootIdCache;
  try {
    bootIdCache = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
  } catch {
    // No boot id (not Linux): every journal whose writer is gone is read again, as after a reboot.
    bootIdCache = 'unknown';
  }
  return bootIdCache;
}

export class RecordJournal {
  private fd: number | undefined;
  private path: string | undefined;
  /** Every journal this object has opened (closed ones too): the pack retires them all. */
  private readonly mine: string[] = [];
  private pending = 0;
  /** Lines in the journals this object opened and has not retired: what the pack has yet to take over. */
  private lines = 0;
  private committedOnce = false;
  private timer: NodeJS.Timeout | undefined;
  /** A commit the deadline made that failed: the next barrier reports it. */
  private failure: unknown;
  private readonly onExit = () => this.commit();

  constructor(private readonly dir: string) {}

  /** Records appended and not yet committed (a barrier's caller can tell there is nothing to wait for). */
  get uncommitted(): number {
    return this.pending;
  }

  /** Lines appended since the last `retire` (the journals' length on disk). */
  get held(): number {
    return this.lines;
  }

  /** Appends a record's line; commits when the batch is full, or arms the batch's deadline. */
  append(line: string): void {
    if (this.fd === undefined) this.open();
    const bytes = Buffer.from(line + '\n');
    for (let off = 0; off < bytes.length;) off += writeSync(this.fd!, bytes, off, bytes.length - off);
    this.lines++;
    if (++this.pending >= MAX_BATCH) this.commit();
    else
      this.timer ??= setTimeout(() => {
        try {
          this.commit();
        } catch (e) {
          this.failure = e;
        }
      }, MAX_DELAY_MS).unref();
  }

  /** Makes every appended record durable: one fdatasync (and the directory's, for a new journal's name). */
  commit(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.failure !== undefined) {
      const e = this.failure;
      this.failure = undefined;
      throw e;
    }
    if (this.fd === undefined || this.pending === 0) return;
    fdatasyncSync(this.fd);
    if (!this.committedOnce) {
      syncDir(this.dir);
      this.committedOnce = true;
    }
    this.pending = 0;
  }

  /** Commits and closes this journal (it stays, for its records); the next record opens another. */
  close(): void {
    this.commit();
    if (this.fd !== undefined) {
      closeSync(this.fd);
      process.off('exit', this.onExit);
    }
    this.fd = this.path = undefined;
    this.committedOnce = false;
  }

  /**
   * After the pack (synced) took every loose record: the journals this object opened are removed
   * (the next record opens a new one), and so is every journal of this boot whose writer is gone.
   */
  retire(): void {
    this.close();
    for (const path of this.mine.splice(0)) rmSync(path, { force: true });
    this.lines = 0;
    for (const { path, name } of this.others()) if (name.boot === bootId() && !isAlive(name.pid)) rmSync(path, { force: true });
  }

  /**
   * The lines of every journal written in another boot, newest journal first and each one's
   * lines last first (a key written twice is restored as it was last written): `restore` puts
   * back what the power cut took. A journal is then removed, unless it is recent enough that
   * its writer may be live on another host.
   */
  recover(restore: (line: string) => void): void {
    const foreign = this.others()
      .filter((j) => j.name.boot !== bootId() || (bootId() === 'unknown' && !isAlive(j.name.pid)))
      .map((j) => ({ ...j, mtimeMs: statSync(j.path, { throwIfNoEntry: false })?.mtimeMs ?? 0 }))
      .sort((a, b) => b.mtimeMs - a.mtimeMs);
    for (const j of foreign) {
      let text: string;
      try {
        text = readFileSync(j.path, 'utf8');
      } catch {
        continue; // removed meanwhile
      }
      // The last line may be cut short (the writer died mid-append): only whole lines are records.
      const lines = text.split('\n').slice(0, -1);
      for (const line of lines.reverse()) restore(line);
      if (Date.now() - j.mtimeMs > FOREIGN_KEPT_MS) rmSync(j.path, { force: true });
    }
  }

  /** Journals other than this object's own, with their parsed names. */
  private others(): { path: string; name: JournalName }[] {
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch {
      return [];
    }
    return names.flatMap((n) => {
      const name = parseName(n);
      const path = join(this.dir, n);
      return name && !this.mine.includes(path) ? [{ path, name }] : [];
    });
  }

  private open(): void {
    mkdirSync(this.dir, { recursive: true });
    this.path = join(this.dir, `${bootId()}.${process.pid}.${randomBytes(4).toString('hex')}.jsonl`);
    this.fd = openSync(this.path, 'a', 0o644);
    this.mine.push(this.path);
    // A run that ends without its barrier (a command's own exit) still commits its last batch.
    process.on('exit', this.onExit);
  }
}
