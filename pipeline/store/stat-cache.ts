import { readFileSync, statSync, type BigIntStats } from 'node:fs';
import { sha256File, type Sha256 } from '../digest.js';
import { writeFileAtomic } from '../atomic-write.js';
import { stampedQuery } from '../hooks.js';

/** A file changed this recently may change again within the same timestamp tick, unseen: not remembered. */
const RACY_MS = 2_000;
const MAX_ENTRIES = 200_000;

function stampOf(st: BigIntStats): string {
  return `${st.size}:${st.mtimeNs}:${st.ctimeNs}:${st.ino}:${st.dev}`;
}

/**
 * Digests of input files by their stat (size, mtime, ctime, inode, device), kept across
 * runs: an input that did not change is not read again. Like git's index, a file modified
 * within the racy window of being hashed is not remembered, and a file that changed while
 * it was read is not either.
 */
export class StatCache {
  private entries: Map<string, string> | undefined;
  private changed = false;

  constructor(
    private readonly file: string,
    private readonly tmpDir: string,
  ) {}

  private load(): Map<string, string> {
    if (this.entries) return this.entries;
    try {
      this.entries = new Map(Object.entries(JSON.parse(readFileSync(this.file, 'utf8')) as Record<string, string>));
    } catch {
      this.entries = new Map(); // none yet, or unreadable: every input is hashed
    }
    return this.entries;
  }

  /** The digest of the file at `path` (absolute), read only when its stat is not the one remembered. */
  digestOf(path: string): { digest: Sha256; size: number } {
    const before = statSync(path, { bigint: true });
    const stamp = stampOf(before);
    const entries = this.load();
    const known = entries.get(path);
    if (known !== undefined && known.length === stamp.length + 65 && known.startsWith(stamp) && known[stamp.length] === '=') {
      return { digest: known.slice(stamp.length + 1) as Sha256, size: Number(before.size) };
    }
    const hashed = sha256File(path);
    const after = statSync(path, { bigint: true });
    const newest = Number((after.mtimeNs > after.ctimeNs ? after.mtimeNs : after.ctimeNs) / 1_000_000n);
    // The clock decides what is remembered, never what is answered: declared so to a memo of the plan.
    const now = stampedQuery("the stat cache's racy window", [], () => Date.now());
    if (stampOf(after) === stamp && now - newest > RACY_MS && entries.size < MAX_ENTRIES) {
      entries.set(path, `${stamp}=${hashed.digest}`);
      this.changed = true;
    }
    return hashed;
  }

  /** Writes what was learnt (nothing when nothing was). */
  save(): void {
    if (!this.changed || !this.entries) return;
    writeFileAtomic(this.file, JSON.stringify(Object.fromEntries(this.entries)) + '\n', { tmpDir: this.tmpDir });
    this.changed = false;
  }
}
