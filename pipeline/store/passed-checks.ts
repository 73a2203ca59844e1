/**
 * Checks that passed, each by the digest of everything its outcome depends on (doctor's agent
 * canary: the agent's bytes, its version, the sandbox and image it ran in, the kernel): a later
 * check with the same digest need not run again. One small file per check under checks/, written
 * atomically; a store saved between CI jobs carries them, so a job that changed none of it does
 * not start an agent to learn what an earlier one learned.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from '../atomic-write.js';
import type { Sha256 } from '../digest.js';

export interface PassedCheck {
  /** When it passed (ISO 8601). */
  at: string;
  /** What it found then, in words. */
  detail: string;
}

export class PassedChecks {
  constructor(
    private readonly dir: string,
    private readonly tmpDir: string,
  ) {}

  private pathOf(key: Sha256): string {
    return join(this.dir, `${key}.json`);
  }

  get(key: Sha256): PassedCheck | undefined {
    const file = this.pathOf(key);
    if (!existsSync(file)) return undefined;
    try {
      const v = JSON.parse(readFileSync(file, 'utf8')) as Partial<PassedCheck>;
      return typeof v.at === 'string' && typeof v.detail === 'string' ? { at: v.at, detail: v.detail } : undefined;
    } catch {
      return undefined; // cut short or garbled: the check runs again
    }
  }

  put(key: Sha256, detail: string): void {
    writeFileAtomic(this.pathOf(key), JSON.stringify({ at: new Date().toISOString(), detail }) + '\n', { tmpDir: this.tmpDir, label: 'check' });
  }
}
