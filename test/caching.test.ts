// The cache contract (test/cache-contract.ts) run against each tier the engine uses: the local
// store, the remote tier on a real server (nginx with WebDAV, on loopback), and the two tiered.
import { chmodSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hasNginx, startNginx, type Nginx } from '../bench/local-servers.js';
import { LocalCache } from '../pipeline/caching/local-cache.js';
import { RemoteTier } from '../pipeline/caching/remote-tier.js';
import { TieredCache } from '../pipeline/caching/tiered-cache.js';
import type { Sha256 } from '../pipeline/digest.js';
import type { ActionRecord } from '../pipeline/store/action-cache.js';
import { parseKeys, RemoteCache } from '../pipeline/store/remote-cache.js';
import type { Store } from '../pipeline/store/store.js';
import { cacheContract, recordOf, removeAll, tempStore } from './cache-contract.js';

const required = process.env['CI'] === 'true';
const dirs: string[] = [];

/** Every file under `dir` with its size and modification time. */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      const st = statSync(p);
      if (st.isDirectory()) walk(p);
      else out[p] = `${st.size} ${st.mtimeMs}`;
    }
  };
  walk(dir);
  return out;
}

/** Overwrites a stored blob (read-only on disk) as an edit of the store would. */
function overwrite(path: string, bytes: Buffer): void {
  chmodSync(path, 0o644);
  writeFileSync(path, bytes);
}

cacheContract('local store', async () => {
  const store = tempStore(dirs);
  const side = { store, cache: new LocalCache(store) };
  return {
    writer: side,
    reader: side,
    tamperBlob: (digest: Sha256, bytes: Buffer) => overwrite(store.cas.pathOf(digest), bytes),
    plant: (record: ActionRecord) => store.actions.put(record),
    close: async () => removeAll(dirs),
  };
});

cacheContract('local store, then a read-only store (a restored base store)', async () => {
  const base = tempStore(dirs);
  const own = tempStore(dirs);
  return {
    writer: { store: base, cache: new LocalCache(base) },
    reader: { store: own, cache: new LocalCache(own, [base]) },
    tamperBlob: (digest: Sha256, bytes: Buffer) => overwrite(base.cas.pathOf(digest), bytes),
    plant: (record: ActionRecord) => base.actions.put(record),
    close: async () => removeAll(dirs),
  };
});

it("a read-only store is read and never written: every file in it is as it was, and the hit is the reader's own afterwards", () => {
  const base = tempStore(dirs);
  const own = tempStore(dirs);
  const record = recordOf(base);
  new LocalCache(base).set(record);
  base.actions.commit();
  const before = snapshot(base.dir);
  const hit = new LocalCache(own, [base]).get(record.key, record.preimage);
  expect(hit).toMatchObject({ status: 'hit', tier: 'read-only' });
  expect(snapshot(base.dir)).toEqual(before);
  // Copied here, blobs and all: the base store could go away now.
  rmSync(base.dir, { recursive: true, force: true });
  expect(new LocalCache(own).get(record.key, record.preimage)).toMatchObject({ status: 'hit', tier: 'local' });
  for (const e of Object.values(record.outputs)) for (const d of own.cas.closure(e)) expect(own.cas.hashOnDisk(d)).toBe(d);
  removeAll(dirs);
});

describe.skipIf(!hasNginx() && !required)('on nginx', () => {
  let nginx: Nginx;
  beforeAll(async () => {
    nginx = await startNginx();
  });
  afterAll(async () => nginx?.stop());

  const client = () => new RemoteCache({ url: nginx.url, mode: 'read-write', keys: parseKeys('ci:4f6a0c2d9e8b7a1f'), warn: () => undefined });
  /** The server's copy of a blob. */
  const onServer = (digest: Sha256, bytes: Buffer) => writeFileSync(join(nginx.data, 'cas', digest), bytes);
  /** A record uploaded as a writer would, signed, whatever key it names: the reader checks it against the key it asked for. */
  const upload = (store: Store) => async (record: ActionRecord) => {
    const blobs = Object.values(record.outputs).flatMap((e) => [...store.cas.closure(e)]);
    await client().putRecord(store, record, blobs);
  };

  cacheContract('remote tier', async () => {
    const a = tempStore(dirs);
    const b = tempStore(dirs);
    return {
      writer: { store: a, cache: new RemoteTier(a, client()) },
      reader: { store: b, cache: new RemoteTier(b, client()) },
      tamperBlob: onServer,
      plant: upload(a),
      close: async () => removeAll(dirs),
    };
  });

  cacheContract('local store, then the remote tier', async () => {
    const a = tempStore(dirs);
    const b = tempStore(dirs);
    const tiered = (s: Store) => new TieredCache(new LocalCache(s), new RemoteTier(s, client()));
    return {
      writer: { store: a, cache: tiered(a) },
      reader: { store: b, cache: tiered(b) },
      tamperBlob: onServer,
      plant: upload(a),
      close: async () => removeAll(dirs),
    };
  });
});
