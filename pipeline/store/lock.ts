import { closeSync, existsSync, openSync, readFileSync, rmSync, statSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { ensureDir } from '../atomic-write.js';
import { heartbeat } from './heartbeat.js';

interface LockOwner {
  pid: number;
  host: string;
  since: string;
  label: string;
}

export interface LockOptions {
  /** A lock whose holder has not refreshed it for this long is stale (holder on another host, or hung). */
  staleMs?: number;
  /** Called once when we start waiting, with who holds the lock. */
  onWait?: (holder: string) => void;
  pollMs?: number;
  signal?: AbortSignal;
}

const HEARTBEAT_MS = 2_000;
/** PAIRBENCH_LOCK_STALE_MS: how long a lock may go without a heartbeat before another run takes it over. */
const DEFAULT_STALE_MS = Number(process.env['PAIRBENCH_LOCK_STALE_MS']) > 0 ? Number(process.env['PAIRBENCH_LOCK_STALE_MS']) : 15_000;
const HEARTBEAT_EVERY_MS = Math.min(HEARTBEAT_MS, Math.max(50, Math.floor(DEFAULT_STALE_MS / 4)));

/** Whether a process with this pid exists on this host. */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function readOwner(path: string): LockOwner | undefined {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as LockOwner;
  } catch {
    return undefined;
  }
}

/** A held lock; release it exactly once. */
export interface HeldLock {
  release(): void;
}

/**
 * Per-key exclusive locks between processes on one store: O_EXCL creation, a
 * heartbeat while held, and recovery of stale locks (dead holder pid on this host,
 * or no heartbeat for `staleMs`). Breaking a stale lock is itself serialised by a
 * short-lived breaker file so two waiters cannot both break and both win.
 */
export class LockDir {
  constructor(readonly dir: string) {}

  pathOf(name: string): string {
    return join(this.dir, `${name}.lock`);
  }

  tryAcquire(name: string, label: string): HeldLock | undefined {
    ensureDir(this.dir);
    const path = this.pathOf(name);
    let fd: number;
    try {
      fd = openSync(path, 'wx');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'EEXIST') return undefined;
      throw e;
    }
    const owner: LockOwner = { pid: process.pid, host: hostname(), since: new Date().toISOString(), label };
    writeSync(fd, JSON.stringify(owner));
    closeSync(fd);
    const stop = heartbeat(path, HEARTBEAT_EVERY_MS);
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        stop();
        const current = readOwner(path);
        if (current && current.pid === owner.pid && current.since === owner.since) rmSync(path, { force: true });
      },
    };
  }

  /** Describes the holder if the lock is stale, or undefined if it is live (or gone). */
  staleReason(name: string, staleMs = DEFAULT_STALE_MS): string | undefined {
    const path = this.pathOf(name);
    let mtimeMs: number;
    try {
      mtimeMs = statSync(path).mtimeMs;
    } catch {
      return undefined;
    }
    const owner = readOwner(path);
    const age = Date.now() - mtimeMs;
    if (!owner) return age > 1_000 ? 'unreadable lock file' : undefined;
    if (owner.host === hostname() && !isAlive(owner.pid)) return `holder pid ${owner.pid} is gone`;
    if (age > staleMs) return `no heartbeat from pid ${owner.pid} on ${owner.host} for ${Math.round(age / 1000)} s`;
    return undefined;
  }

  /** When the live holder took the lock (ISO time): null when the lock is free, or stale. */
  liveSince(name: string, staleMs = DEFAULT_STALE_MS): string | null {
    if (!this.isHeld(name) || this.staleReason(name, staleMs) !== undefined) return null;
    return readOwner(this.pathOf(name))?.since ?? null;
  }

  /** Whether the lock file exists (live or stale: staleReason tells). */
  isHeld(name: string): boolean {
    return existsSync(this.pathOf(name));
  }

  /** What the holder said it holds the lock for. */
  label(name: string): string {
    return readOwner(this.pathOf(name))?.label ?? 'unknown';
  }

  holder(name: string): string {
    const o = readOwner(this.pathOf(name));
    return o ? `pid ${o.pid} on ${o.host} since ${o.since}` : 'another process';
  }

  private breakStale(name: string, staleMs: number): boolean {
    const breaker = this.tryAcquire(`${name}.breaker`, 'breaking a stale lock');
    if (!breaker) {
      // A breaker left by a killed process is itself stale.
      if (this.staleReason(`${name}.breaker`, staleMs)) rmSync(this.pathOf(`${name}.breaker`), { force: true });
      return false;
    }
    try {
      if (!this.staleReason(name, staleMs)) return false;
      rmSync(this.pathOf(name), { force: true });
      return true;
    } finally {
      breaker.release();
    }
  }

  /** `acquire` for synchronous callers (short critical sections only): blocks the thread while it waits. */
  acquireSync(name: string, label: string, options: { staleMs?: number; timeoutMs?: number } = {}): HeldLock {
    const staleMs = options.staleMs ?? DEFAULT_STALE_MS;
    const until = Date.now() + (options.timeoutMs ?? 120_000);
    const sleeper = new Int32Array(new SharedArrayBuffer(4));
    for (let poll = 5; ; poll = Math.min(poll * 2, 100)) {
      const held = this.tryAcquire(name, label);
      if (held) return held;
      if (this.staleReason(name, staleMs) && this.breakStale(name, staleMs)) continue;
      if (Date.now() > until) throw new Error(`timed out waiting for lock ${name} held by ${this.holder(name)}`);
      Atomics.wait(sleeper, 0, 0, poll);
    }
  }

  async acquire(name: string, label: string, options: LockOptions = {}): Promise<HeldLock> {
    const staleMs = options.staleMs ?? DEFAULT_STALE_MS;
    let waited = false;
    let poll = options.pollMs ?? 25;
    for (;;) {
      const held = this.tryAcquire(name, label);
      if (held) return held;
      if (this.staleReason(name, staleMs) && this.breakStale(name, staleMs)) continue;
      if (!waited) {
        waited = true;
        options.onWait?.(this.holder(name));
      }
      if (options.signal?.aborted) throw options.signal.reason;
      await new Promise((r) => setTimeout(r, poll));
      poll = Math.min(poll * 2, 250);
    }
  }
}
