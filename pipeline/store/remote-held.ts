import { appendFileSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { ensureDir } from '../atomic-write.js';

/**
 * The action records this store knows a remote cache holds: those it uploaded there, or read
 * from there, in any run. A local cache hit the remote does not hold (a node built before the
 * remote was configured, while it was down, or by `doctor` for its canary) is uploaded by the
 * next read-write run, so every job sharing the remote finds it; a known one costs no request.
 * One key per line, appended (a line is far under PIPE_BUF, so concurrent runs do not interleave).
 */
export class HeldRecords {
  private keys: Set<string> | undefined;

  constructor(private readonly file: string) {}

  private loaded(): Set<string> {
    if (this.keys) return this.keys;
    let text = '';
    try {
      text = readFileSync(this.file, 'utf8');
    } catch {
      // none yet
    }
    this.keys = new Set(text.split('\n').filter((k) => /^[0-9a-f]{64}$/.test(k)));
    return this.keys;
  }

  has(key: string): boolean {
    return this.loaded().has(key);
  }

  add(key: string): void {
    const keys = this.loaded();
    if (keys.has(key)) return;
    keys.add(key);
    ensureDir(dirname(this.file));
    appendFileSync(this.file, `${key}\n`);
  }
}
