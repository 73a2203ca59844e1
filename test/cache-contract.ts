/**
 * What every cache tier must do (pipeline/caching/cache.ts), as one suite each implementation
 * runs (test/caching.test.ts: the local store, the remote tier on nginx, the two tiered): a
 * record set is a hit for a reader with the same outputs, whose apply() makes every blob
 * readable in the reader's store; what the cache did not write, or a blob changed under it,
 * is never served as intact.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Cache, CacheLookup } from '../pipeline/caching/cache.js';
import { canonicalJson } from '../pipeline/canonical-json.js';
import { cacheKeyOf, type Sha256 } from '../pipeline/digest.js';
import { outputsDigest, type ActionRecord, type OutputManifest } from '../pipeline/store/action-cache.js';
import { Store } from '../pipeline/store/store.js';

export interface CacheUnderTest {
  /** Where records are set, and where they are read: the same object for a cache that is one store. */
  writer: { store: Store; cache: Cache };
  reader: { store: Store; cache: Cache };
  /** Overwrites a blob's bytes where the reader's lookups find it (the store's file, the server's copy). */
  tamperBlob(digest: Sha256, bytes: Buffer): void;
  /** Puts `record` where the reader's lookups find it, bypassing the cache (an edited store, a forged upload). */
  plant(record: ActionRecord): void | Promise<void>;
  close(): Promise<void>;
}

/** A fresh store in a temp directory, removed at the end of the test. */
export function tempStore(dirs: string[]): Store {
  const dir = mkdtempSync(join(tmpdir(), 'pairbench-cache-'));
  dirs.push(dir);
  const store = new Store(join(dir, '.pairbench'));
  store.init();
  return store;
}

export function removeAll(dirs: string[]): void {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
}

let serial = 0;

/** A record as the engine makes one: a file and a directory of two files, stored in `store`, with their stamps. */
export const recordOf = (store: Store): ActionRecord => recordIn(store);

function recordIn(store: Store, label = `node-${++serial}`): ActionRecord {
  const file = store.cas.putBytes(Buffer.from(`result of ${label}\n`));
  const a = store.cas.putBytes(Buffer.from(`a of ${label}\n`));
  const b = store.cas.putBytes(Buffer.from(`b of ${label}\n`.repeat(100)));
  const tree = store.cas.putTree([
    { name: 'a.txt', type: 'file', digest: a, size: store.cas.read(a).length, executable: false },
    { name: 'b.txt', type: 'file', digest: b, size: store.cas.read(b).length, executable: false },
  ]);
  const outputs: OutputManifest = { 'result.json': { type: 'file', digest: file, size: store.cas.read(file).length, executable: false }, tree };
  const preimage = canonicalJson({ node: label, contract: true, at: Date.now() });
  const stamps: Record<string, string> = {};
  for (const e of Object.values(outputs)) for (const d of store.cas.closure(e)) stamps[d] = store.cas.stamp(d)!;
  return {
    schema: 1,
    key: cacheKeyOf(preimage),
    preimage,
    node: label,
    step: 'contract',
    kind: 'command',
    outputs,
    outputs_digest: outputsDigest(outputs),
    stamps,
    log: null,
    started_at: new Date().toISOString(),
    duration_ms: 1,
    pairbench_version: '0.0.0-test',
  };
}

const settle = async (found: CacheLookup | Promise<CacheLookup>): Promise<CacheLookup> => found;

/** Every blob of the record's outputs, from the store that made it. */
function blobsOf(store: Store, record: ActionRecord): Map<Sha256, Buffer> {
  const out = new Map<Sha256, Buffer>();
  for (const e of Object.values(record.outputs)) for (const d of store.cas.closure(e)) out.set(d, store.cas.read(d));
  return out;
}

export function cacheContract(name: string, make: () => Promise<CacheUnderTest>): void {
  describe(`cache contract: ${name}`, () => {
    let c: CacheUnderTest;
    beforeEach(async () => {
      c = await make();
    });
    afterEach(async () => c.close());

    it('a key never set is a miss', async () => {
      const never = recordIn(c.writer.store);
      expect(await settle(c.reader.cache.get(never.key, never.preimage))).toMatchObject({ status: 'miss' });
    });

    it("a record set is a hit for the reader, with the same outputs; apply() makes every blob readable in the reader's store", async () => {
      const record = recordIn(c.writer.store);
      const blobs = blobsOf(c.writer.store, record);
      await c.writer.cache.set(record);
      const got = await settle(c.reader.cache.get(record.key, record.preimage));
      expect(got.status).toBe('hit');
      if (got.status !== 'hit') return;
      expect(got.record).toMatchObject({ key: record.key, preimage: record.preimage, outputs: record.outputs, outputs_digest: record.outputs_digest });
      expect(await got.apply()).toBe(true);
      for (const [d, bytes] of blobs) expect(c.reader.store.cas.read(d).equals(bytes), d).toBe(true);
      // Set again: still one record, still a hit.
      await c.writer.cache.set(record);
      expect(await settle(c.reader.cache.get(record.key, record.preimage))).toMatchObject({ status: 'hit' });
    });

    it('apply() of some outputs makes those readable (a node reads only what it selects)', async () => {
      const record = recordIn(c.writer.store);
      await c.writer.cache.set(record);
      const got = await settle(c.reader.cache.get(record.key, record.preimage));
      if (got.status !== 'hit') throw new Error(`expected a hit, got ${got.status}`);
      const only = record.outputs['result.json']!;
      expect(await got.apply([only])).toBe(true);
      expect(c.reader.store.cas.read(only.digest).toString()).toMatch(/^result of /);
    });

    it('a blob changed under the cache is never served as intact: a miss, or a hit whose apply() fails and stores nothing wrong', async () => {
      const record = recordIn(c.writer.store);
      await c.writer.cache.set(record);
      const target = record.outputs['result.json']!.digest;
      c.tamperBlob(target, Buffer.from('forged result\n'));
      const got = await settle(c.reader.cache.get(record.key, record.preimage));
      const applied = got.status === 'hit' ? await got.apply() : false;
      expect(applied, `${got.status}: a tampered blob was applied`).toBe(false);
      if (c.reader.store.cas.has(target)) expect(c.reader.store.cas.hashOnDisk(target)).toBe(target);
    });

    it('a record the cache did not write for that key is not a hit', async () => {
      const real = recordIn(c.writer.store);
      const other = recordIn(c.writer.store);
      // Another node's record (pre-image, outputs) filed under this key.
      await c.plant({ ...other, key: real.key });
      const got = await settle(c.reader.cache.get(real.key, real.preimage));
      expect(got.status).toBe('miss');
    });
  });
}
