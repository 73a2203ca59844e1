import { closeSync, existsSync, openSync, readdirSync, readFileSync, readSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { canonicalJson } from '../canonical-json.js';
import { cacheKeyOf, digestOfJson, sha256, type CacheKey, type Sha256 } from '../digest.js';
import { errorMessage } from '../result.js';
import { writeFileAtomic } from './atomic-fs.js';
import type { OutputEntry, Stamp } from './cas.js';

export type OutputManifest = Record<string, OutputEntry>;

/** What a node produced under a key: the proof of a cache hit. */
export interface ActionRecord {
  schema: 1;
  key: CacheKey;
  /** The exact canonical JSON that hashes to `key`. */
  preimage: string;
  node: string;
  step: string;
  kind: string;
  outputs: OutputManifest;
  outputs_digest: Sha256;
  /** Stamp of every blob in the outputs' closure when it was verified. */
  stamps: Record<string, Stamp>;
  /** The command log: evidence, never part of the output digest (it holds timings). */
  log: Sha256 | null;
  started_at: string;
  duration_ms: number;
  pairbench_version: string;
}

export type RecordLookup =
  | { status: 'hit'; record: ActionRecord }
  | { status: 'miss' }
  | { status: 'corrupt'; reason: string };

const scratch = Buffer.allocUnsafe(64 * 1024);

/** Reads a file that is usually small with one open/read/close (the no-op hot path reads thousands). */
function readSmallFile(path: string): string | undefined {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch {
    return undefined;
  }
  try {
    const n = readSync(fd, scratch, 0, scratch.length, 0);
    if (n < scratch.length) return scratch.toString('utf8', 0, n);
  } finally {
    closeSync(fd);
  }
  return readFileSync(path, 'utf8');
}

export function outputsDigest(outputs: OutputManifest): Sha256 {
  return digestOfJson(outputs);
}

/** Action records: node key -> output manifest, one small file per key, published last. */
export class ActionCache {
  constructor(
    private readonly dir: string,
    private readonly tmpDir: string,
  ) {}

  pathOf(key: CacheKey): string {
    return join(this.dir, key.slice(0, 2), `${key}.json`);
  }

  /**
   * Reads and re-verifies a record: its pre-image must hash to its key, its outputs to their
   * digest. A caller that holds the pre-image `key` was computed from passes it: the record's
   * must then be the same bytes, which proves the same without hashing again.
   */
  get(key: CacheKey, preimage?: string): RecordLookup {
    const text = readSmallFile(this.pathOf(key));
    if (text === undefined) return { status: 'miss' };
    let record: ActionRecord;
    try {
      record = JSON.parse(text) as ActionRecord;
    } catch (e) {
      return { status: 'corrupt', reason: `unreadable record: ${errorMessage(e)}` };
    }
    if (record.key !== key || (preimage !== undefined ? record.preimage !== preimage : cacheKeyOf(record.preimage) !== key)) {
      return { status: 'corrupt', reason: 'record does not match its key' };
    }
    if (outputsDigest(record.outputs) !== record.outputs_digest) {
      return { status: 'corrupt', reason: 'output manifest does not match its digest' };
    }
    return { status: 'hit', record };
  }

  put(record: ActionRecord): void {
    writeFileAtomic(this.pathOf(record.key), JSON.stringify(record) + '\n', this.tmpDir);
  }

  remove(key: CacheKey): void {
    rmSync(this.pathOf(key), { force: true });
  }

  *list(): Generator<{ key: CacheKey; path: string; size: number; mtimeMs: number }> {
    if (!existsSync(this.dir)) return;
    for (const shard of readdirSync(this.dir)) {
      for (const name of readdirSync(join(this.dir, shard))) {
        if (!name.endsWith('.json')) continue;
        const path = join(this.dir, shard, name);
        try {
          const st = statSync(path);
          yield { key: name.slice(0, -5) as CacheKey, path, size: st.size, mtimeMs: st.mtimeMs };
        } catch {
          // removed meanwhile
        }
      }
    }
  }
}

/** The latest executed key and the last failure of each node id: what `plan` diffs against. */
export interface NodeHistory {
  node: string;
  latest?: { key: CacheKey; at: string };
  /** `log`: the failed execution's log blob, when it wrote one. */
  last_failure?: { key: CacheKey; at: string; reason: string; message: string; log?: Sha256 };
  /**
   * Results of the current key that were used but not cached (a step called it transient,
   * e.g. an infrastructure fault): kept until the key gets a result that is cached, which
   * then carries them as its `earlier-tries` output. Their blobs are never collected meanwhile.
   */
  tries?: NodeTry[];
}

export interface NodeTry {
  key: CacheKey;
  at: string;
  reason: string;
  outputs: OutputManifest;
}


export class NodeIndex {
  constructor(
    private readonly dir: string,
    private readonly tmpDir: string,
  ) {}

  private pathOf(nodeId: string): string {
    const h = sha256(nodeId);
    return join(this.dir, h.slice(0, 2), `${h}.json`);
  }

  get(nodeId: string): NodeHistory | undefined {
    try {
      const h = JSON.parse(readFileSync(this.pathOf(nodeId), 'utf8')) as NodeHistory;
      return h.node === nodeId ? h : undefined;
    } catch {
      return undefined;
    }
  }

  update(nodeId: string, change: (h: NodeHistory) => NodeHistory): void {
    const next = change(this.get(nodeId) ?? { node: nodeId });
    writeFileAtomic(this.pathOf(nodeId), canonicalJson(next) + '\n', this.tmpDir);
  }

  /** Every node's history (gc keeps the blobs of their pending tries). */
  *list(): Generator<NodeHistory> {
    if (!existsSync(this.dir)) return;
    for (const shard of readdirSync(this.dir)) {
      for (const name of readdirSync(join(this.dir, shard))) {
        try {
          yield JSON.parse(readFileSync(join(this.dir, shard, name), 'utf8')) as NodeHistory;
        } catch {
          // removed meanwhile, or unreadable: nothing to keep
        }
      }
    }
  }
}
