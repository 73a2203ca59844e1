import { PassedChecks } from './passed-checks.js';
import { existsSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { sha256, type CacheKey, type Sha256 } from '../digest.js';
import { ActionCache, NodeIndex } from './action-cache.js';
import { ensureDir, forgetDirsUnder, writeFileAtomic, writeFileOnce } from '../atomic-write.js';
import { Cas } from './cas.js';
import { isAlive, LockDir } from './lock.js';
import { StoreUse } from './store-use.js';
import { StatCache } from './stat-cache.js';
import { HeldRecords } from './remote-held.js';
import { ChainedLog } from './chained-log.js';
import { ACCESS_EFFECT, compactAccessLogs, logAccess, readAccess, type AccessEffectData } from './access-log.js';
import { readRoots, rootsDir, type Root } from './roots-dir.js';
import { repeatedEffect } from '../hooks.js';
import { randomBytes } from 'node:crypto';

export const STORE_LAYOUT_VERSION = 1;

/** Every x is in `sorted` (a root's keys, kept sorted): binary search, no set of 100,000 keys built. */
function isSubset(xs: readonly string[], sorted: readonly string[]): boolean {
  return xs.every((x) => {
    let lo = 0;
    let hi = sorted.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const m = sorted[mid]!;
      if (m === x) return true;
      if (m < x) lo = mid + 1;
      else hi = mid - 1;
    }
    return false;
  });
}

/** Sorted, without duplicates, in place. */
function sortedUnique(keys: Iterable<string>): string[] {
  const out = Array.from(keys).sort();
  let w = 0;
  for (let i = 0; i < out.length; i++) if (w === 0 || out[i] !== out[w - 1]) out[w++] = out[i]!;
  out.length = w;
  return out;
}

/**
 * The store directory:
 *   cas/     blobs by SHA-256 (files and tree objects), read-only
 *   ac/      action records: node key -> output manifest (loose files, then one sealed pack)
 *   nodes/   per node id: last failure and transient tries; built/: journals of each node's latest key
 *   locks/   per-key locks between concurrent runs
 *   access/  which keys each run used (for least-recently-used gc)
 *   roots/   named sets of keys that gc keeps (each config's last full run, each cohort's attempts)
 *   registry/ hash-chained append-only logs (the cohorts' preregistration records), and older JSON documents
 *   STORE    the layout version; STORE.id the store's own random id (records made here name it)
 *   checks/  checks that passed, by the digest of what they depend on (passed-checks.ts)
 *   stat-cache.json  input file digests by stat, so unchanged inputs are not read again
 *   tmp/     temp files and work directories (named by owner pid)
 */
export class Store {
  readonly cas: Cas;
  readonly actions: ActionCache;
  readonly nodes: NodeIndex;
  readonly locks: LockDir;
  /** Runs and other users of the store, against gc (store-use.ts). */
  readonly use: StoreUse;
  readonly statCache: StatCache;
  readonly tmpDir: string;
  /** Append-only hash-chained logs (registry/*.chain.jsonl). */
  readonly logs: ChainedLog;
  /** Checks that passed, by the digest of what they depend on (checks/: doctor's agent canary). */
  readonly checks: PassedChecks;

  constructor(readonly dir: string) {
    forgetDirsUnder(dir);
    this.tmpDir = join(dir, 'tmp');
    this.cas = new Cas(join(dir, 'cas'), this.tmpDir);
    this.locks = new LockDir(join(dir, 'locks'));
    this.use = new StoreUse(this.locks);
    this.actions = new ActionCache(join(dir, 'ac'), this.tmpDir, this.locks);
    this.nodes = new NodeIndex(join(dir, 'nodes'), this.tmpDir);
    this.statCache = new StatCache(join(dir, 'stat-cache.json'), this.tmpDir);
    // An entry may name an attempt's record: the records written so far are committed first.
    this.logs = new ChainedLog(join(dir, 'registry'), this.locks, () => this.actions.commit());
    this.checks = new PassedChecks(join(dir, 'checks'), this.tmpDir);
  }

  private storeId: string | undefined;

  /**
   * This store's own id (random, made once): what a record made here names, so a record copied
   * from another store (a remote cache) is told apart from one this store made. Created with a
   * hard link, which fails if the file exists: two first runs at once agree on one id.
   */
  id(): string {
    if (this.storeId) return this.storeId;
    const file = join(this.dir, 'STORE.id');
    if (!existsSync(file)) writeFileOnce(file, randomBytes(16).toString('hex') + '\n', { tmpDir: this.tmpDir, label: 'store-id' });
    return (this.storeId = readFileSync(file, 'utf8').trim());
  }

  /** Where a bare mirror of the git repository at `source` is kept (materialize and context fill it; doctor reads it). */
  mirrorPath(source: string): string {
    return join(this.dir, 'mirrors', `${sha256(source).slice(0, 16)}.git`);
  }

  /** The records this store knows the remote cache at `url` holds (see remote-held.ts). */
  remoteHeld(url: string): HeldRecords {
    return new HeldRecords(join(this.dir, 'remote', `${sha256(url).slice(0, 16)}.keys`));
  }

  /**
   * Drops a blob found corrupt, and every action record that needs it (their nodes
   * rebuild). Returns the node ids of the dropped records.
   */
  forgetBlob(digest: Sha256): string[] {
    this.cas.remove(digest);
    const dropped: string[] = [];
    const keys: CacheKey[] = [];
    for (const r of this.actions.list()) {
      const found = this.actions.get(r.key);
      if (found.status === 'hit' && digest in found.record.stamps) {
        keys.push(r.key);
        dropped.push(found.record.node);
      }
    }
    this.actions.removeMany(keys);
    return dropped.sort();
  }

  /** Keeps `keys` from gc under `name` (replacing what that root held), with a note of what it is. */
  setRoot(name: string, keys: Iterable<string>, about: Record<string, string> = {}): void {
    const file = join(rootsDir(this.dir), `${sha256(name).slice(0, 32)}.json`);
    const sorted = sortedUnique(keys);
    // A no-op run reaches what its last run reached: the root is not rewritten (it holds every key).
    const current = this.roots().find((r) => r.name === name);
    if (
      current &&
      current.keys.length === sorted.length &&
      current.keys.every((k, i) => k === sorted[i]) &&
      Object.entries(about).every(([k, v]) => current.about[k] === v)
    )
      return;
    writeFileAtomic(file, JSON.stringify({ name, ...about, at: new Date().toISOString(), keys: sorted }) + '\n', { tmpDir: this.tmpDir });
    this.rootsRead = undefined;
  }

  /** Every root: its name, what it says it is, and its keys. */
  roots(): Root[] {
    const dir = rootsDir(this.dir);
    const mtimeMs = statSync(dir, { throwIfNoEntry: false })?.mtimeMs;
    if (mtimeMs === undefined) return [];
    // A run reads them more than once (its access log, then its config's root): parsed once while the directory is unchanged.
    if (this.rootsRead?.mtimeMs === mtimeMs) return this.rootsRead.roots;
    const roots = readRoots(dir);
    this.rootsRead = { mtimeMs, roots };
    return roots;
  }

  private rootsRead: { mtimeMs: number; roots: Root[] } | undefined;

  /** The JSON document `name` of the registry, if any. */
  readDocument<T>(name: string): T | undefined {
    const p = this.documentPath(name);
    return existsSync(p) ? (JSON.parse(readFileSync(p, 'utf8')) as T) : undefined;
  }

  /** Read-modify-write of a registry document under a lock, so concurrent runs lose no update. */
  async updateDocument<T>(name: string, change: (current: T | undefined) => T): Promise<T> {
    const lock = await this.locks.acquire(`registry-${sha256(name).slice(0, 32)}`, `registry ${name}`);
    try {
      const next = change(this.readDocument<T>(name));
      writeFileAtomic(this.documentPath(name), JSON.stringify(next, null, 2) + '\n', { tmpDir: this.tmpDir });
      return next;
    } finally {
      lock.release();
    }
  }

  private documentPath(name: string): string {
    if (!/^[A-Za-z0-9._-]+$/.test(name)) throw new Error(`registry document name "${name}" must be letters, digits, . _ or -`);
    return join(this.dir, 'registry', `${name}.json`);
  }

  exists(): boolean {
    return existsSync(this.dir);
  }

  init(): void {
    ensureDir(this.dir);
    const marker = join(this.dir, 'STORE');
    if (!existsSync(marker)) writeFileAtomic(marker, JSON.stringify({ pairbench_store: STORE_LAYOUT_VERSION }) + '\n', { tmpDir: this.tmpDir });
  }

  /**
   * Removes temp files and work directories whose owner process is gone (a worker killed
   * mid-job leaves its work directory behind): `<label>-<pid>-<random>` names the owner.
   */
  reapDeadTemp(options: { dryRun?: boolean } = {}): string[] {
    if (!existsSync(this.tmpDir)) return [];
    const reaped: string[] = [];
    for (const name of readdirSync(this.tmpDir)) {
      const pid = Number(/-(\d+)-/.exec(name)?.[1]);
      if (!pid || pid === process.pid || isAlive(pid)) continue;
      if (!options.dryRun) rmSync(join(this.tmpDir, name), { recursive: true, force: true });
      reaped.push(name);
    }
    return reaped;
  }

  /**
   * Records that a run used these keys (one file per run, access-log.ts; merged now and then). A
   * replay of the run by the whole-plan memo records its use again (a declared effect).
   */
  recordAccess(keys: Iterable<CacheKey>): void {
    const list = [...keys];
    if (!list.length) return;
    // A run that used only what a root holds (a no-op of a config) is recorded as a use of that root, not of each key.
    const root = this.roots().find((r) => r.keys.length >= list.length && isSubset(list, r.keys));
    const data: AccessEffectData = { store: this.dir, tmp: this.tmpDir, entry: root ? { root: root.name } : { keys: list } };
    repeatedEffect({ kind: ACCESS_EFFECT, data }, () => logAccess(data, () => this.roots()));
  }

  /** Last use of each key according to the access logs. */
  lastAccess(): Map<string, number> {
    return readAccess(this.dir, () => this.roots()).last;
  }

  /** Replaces all access logs with one per time of last use (keeps gc's reading cheap as runs accumulate). */
  compactAccess(last: Map<string, number>): void {
    compactAccessLogs(this.dir, this.tmpDir, last);
  }
}
