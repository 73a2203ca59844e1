import { randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import type { HeldLock, LockDir } from './lock.js';
import { unrepeatedEffect } from '../hooks.js';

/** The lock gc holds while it collects. */
const GC = 'store-gc';
/** Each command that uses the store holds a lock of its own under this prefix (never contended). */
const USER_PREFIX = 'store-user-';
const POLL_MS = 200;
const LIVE_MARK = 'a mark that the command is live on the store';

/**
 * Who may use the store at once: any number of runs (and the other commands that read and write
 * records), or one gc. A user marks itself live, then checks for gc; gc takes its lock, then waits
 * for the marks to go: whichever order the two race in, gc never collects beside a live run. Marks
 * and gc's lock are heartbeat locks: a killed holder's lock goes stale and stops counting.
 */
export class StoreUse {
  constructor(private readonly locks: LockDir) {}

  /**
   * Marks a command live on the store until release(); while gc holds the store it waits (onWait
   * says so, once). The mark is an effect a replay of the command by the whole-plan memo need not
   * repeat: a replay reads no record or blob, only checks that none it depends on changed.
   */
  async enter(label: string, onWait?: (holder: string) => void, signal?: AbortSignal): Promise<HeldLock> {
    const mark = await unrepeatedEffect(LIVE_MARK, () => this.waitAndMark(label, onWait, signal));
    return { release: () => unrepeatedEffect(LIVE_MARK, () => mark.release()) };
  }

  private async waitAndMark(label: string, onWait?: (holder: string) => void, signal?: AbortSignal): Promise<HeldLock> {
    let told = false;
    for (;;) {
      const mark = this.locks.tryAcquire(`${USER_PREFIX}${process.pid}-${randomBytes(6).toString('hex')}`, label);
      if (!mark) continue;
      if (!this.gcHolds()) return mark;
      // Not live while waiting: gc waits for live marks, so holding one here would deadlock the two.
      mark.release();
      if (!told) {
        told = true;
        onWait?.(this.locks.holder(GC));
      }
      if (signal?.aborted) throw signal.reason;
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
  }

  /**
   * Takes the store for gc once no command is live on it. With `wait` false, a live store is
   * answered at once with who is using it; otherwise onWait says who it waits for, once.
   */
  async exclusive(label: string, options: { wait: boolean; onWait?: (users: string[]) => void }): Promise<{ held: HeldLock } | { busy: string[] }> {
    const held = await this.locks.acquire(GC, label, { onWait: (holder) => options.onWait?.([`another gc (${holder})`]) });
    let told = false;
    for (;;) {
      const users = this.users();
      if (users.length === 0) return { held };
      if (!options.wait) {
        held.release();
        return { busy: users };
      }
      if (!told) {
        told = true;
        options.onWait?.(users);
      }
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
  }

  /** The commands live on the store, described (a stale mark, of a killed process, is not one). */
  users(): string[] {
    let names: string[];
    try {
      names = readdirSync(this.locks.dir);
    } catch {
      return [];
    }
    return names
      .filter((n) => n.startsWith(USER_PREFIX) && n.endsWith('.lock'))
      .map((n) => n.slice(0, -'.lock'.length))
      .filter((name) => this.locks.staleReason(name) === undefined && this.locks.isHeld(name))
      .map((name) => `${this.locks.label(name)} (${this.locks.holder(name)})`);
  }

  private gcHolds(): boolean {
    return this.locks.isHeld(GC) && this.locks.staleReason(GC) === undefined;
  }
}
