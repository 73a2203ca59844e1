import { mkdirSync, renameSync, rmSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import pLimit, { type LimitFunction } from 'p-limit';
import type { BenchConfig } from './config/load.js';
import type { Json } from './canonical-json.js';
import type { Graph } from './dag.js';
import type { CacheKey, Sha256 } from './digest.js';
import type { Diagnostic } from './diagnostic.js';
import type { EngineEvent, Reporter, RunSummary } from './events.js';
import { InputResolver, type ResolvedInput } from './inputs.js';
import { buildPreimage, keyOf, type KeyPreimage } from './key.js';
import { packageVersion } from './package-root.js';
import { describePreimageDiff, preimageChanges } from './preimage-diff.js';
import { err, errorMessage, ok, type Result } from './result.js';
import { EARLIER_TRIES, type ExecutionContext, type GraphNode, type HostEnv, type StagedFile, type StepFailure } from './step-kind.js';
import { outputsDigest, type ActionRecord, type NodeTry, type OutputManifest } from './store/action-cache.js';
import { tempPath } from './atomic-write.js';
import { NodeLog } from './node-log.js';
import { startTimer } from './hooks.js';
import { CorruptBlobError } from './store/cas.js';
import type { Store } from './store/store.js';
import type { RemoteCache } from './store/remote-cache.js';
import { settledNow, type Cache, type CacheHit, type CacheLookup } from './caching/cache.js';
import { dropRecord, LocalCache, lookup } from './caching/local-cache.js';
import { RemoteTier } from './caching/remote-tier.js';
import { TieredCache } from './caching/tiered-cache.js';
import { ownership, type Shard } from './shard.js';
import { isOwnFailure } from './step-failure.js';

export interface EngineContext {
  config: BenchConfig;
  graph: Graph;
  store: Store;
}

/** A node's key, computed from its inputs and its upstreams' output digests. */
export interface NodeKey {
  key: CacheKey;
  json: string;
  preimage: KeyPreimage;
}

/** Resolves and hashes every node's file inputs up front: a missing input is a config error. */
export function resolveInputs(ctx: EngineContext, nodes: readonly GraphNode[]): Result<Map<string, ResolvedInput[]>, Diagnostic[]> {
  const resolver = new InputResolver(ctx.config.rootDir, ctx.store.statCache);
  const out = new Map<string, ResolvedInput[]>();
  const problems: Diagnostic[] = [];
  for (const n of nodes) {
    const r = resolver.resolve(n);
    if (r.ok) out.set(n.id, r.value);
    else if (problems.length < 20) problems.push(r.error);
  }
  try {
    if (ctx.store.exists()) ctx.store.statCache.save();
  } catch {
    // a store this process cannot write (read-only): the inputs are hashed again next time
  }
  return problems.length ? err(problems) : ok(out);
}

/** The outputs of `upstream` that `node` reads (all, unless the step selects some). */
export function selectedOutputs(node: GraphNode, upstream: GraphNode, record: ActionRecord): Result<OutputManifest, StepFailure> {
  const wanted = node.kind.selectUpstream?.(node, upstream);
  return wanted ? pickOutputs(upstream, record, wanted) : ok(record.outputs);
}

/** The outputs named in `wanted` ("name?" selects an output the upstream may not have). */
function pickOutputs(upstream: GraphNode, record: ActionRecord, wanted: readonly string[]): Result<OutputManifest, StepFailure> {
  const outputs = record.outputs; // read once: a packed record parses its fields at each read
  const out: OutputManifest = {};
  for (const w of wanted) {
    const optional = w.endsWith('?');
    const name = optional ? w.slice(0, -1) : w;
    const e = outputs[name];
    if (!e && optional) continue;
    if (!e)
      return err({
        reason: 'missing-output',
        message: `upstream ${upstream.id} has no output "${name}" (it produced: ${Object.keys(outputs).join(', ') || 'nothing'})`,
        output: name,
        upstream: upstream.id,
      });
    out[name] = e;
  }
  return ok(out);
}

export function computeKey(
  node: GraphNode,
  inputs: readonly ResolvedInput[],
  upstreamRecords: ReadonlyMap<string, ActionRecord>,
  hostEnv: HostEnv,
): Result<NodeKey, StepFailure> {
  const digests = new Map<string, Sha256>();
  for (const u of node.upstream) {
    const rec = upstreamRecords.get(u.id)!;
    // All of an upstream's outputs: its record's digest of them (a packed record's manifest is not even parsed).
    const wanted = node.kind.selectUpstream?.(node, u);
    if (!wanted) {
      digests.set(u.id, rec.outputs_digest);
      continue;
    }
    const sel = pickOutputs(u, rec, wanted);
    if (!sel.ok) return sel;
    digests.set(u.id, outputsDigest(sel.value));
  }
  const preimage = buildPreimage(node, inputs, digests, hostEnv);
  return ok({ ...keyOf(preimage), preimage });
}

/** Why a node with no record for its key must run, in words. */
export function whyMiss(store: Store, node: GraphNode, key: NodeKey): string[] {
  const history = store.nodes.get(node.id);
  const reasons: string[] = store.actions.packProblem ? [store.actions.packProblem] : [];
  if (history?.last_failure?.key === key.key) reasons.push(`failed last time: ${history.last_failure.message.split('\n')[0]}`);
  const latest = history?.latest;
  if (!latest) return [...reasons, 'new node: never built'];
  const prev = store.actions.get(latest.key);
  if (prev.status !== 'hit') return [...reasons, `no record for this key; the last build's record (${latest.key.slice(0, 6)}) is gone`];
  if (latest.key === key.key) return [...reasons, 'record missing'];
  return [...reasons, ...describePreimageDiff(JSON.parse(prev.record.preimage) as KeyPreimage, key.preimage, node.kind)];
}

/**
 * What changed in the node itself (its config, files, matrix) since its last build, for a node
 * whose upstream runs first: its whole key is not known yet, but this part of it is, and it says
 * why the node would run even if the upstream's output comes back the same.
 */
function ownChanges(store: Store, node: GraphNode, files: readonly ResolvedInput[], hostEnv: HostEnv): string[] {
  const latest = store.nodes.get(node.id)?.latest;
  if (!latest) return [];
  const prev = store.actions.get(latest.key);
  if (prev.status !== 'hit') return [];
  let now: KeyPreimage;
  try {
    now = buildPreimage(node, files, new Map(), hostEnv);
  } catch {
    return []; // its key cannot be computed yet either: the upstream line says enough
  }
  return preimageChanges({ ...(JSON.parse(prev.record.preimage) as KeyPreimage), upstream: {} }, now, node.kind);
}

export type PlanEntry =
  | { node: string; status: 'cached'; key: CacheKey }
  /** if_upstream_changes: nothing of its own changed; it runs only if an upstream that runs first gives other bytes. */
  | { node: string; status: 'run'; key?: CacheKey; reasons: string[]; if_upstream_changes?: true };

/** The dry run: which nodes are cached and why each other one will run. Reads the store, changes nothing. */
export function plan(
  ctx: EngineContext,
  inputs: ReadonlyMap<string, ResolvedInput[]>,
  nodes: readonly GraphNode[] = ctx.graph.nodes,
  hostEnv: HostEnv = process.env,
): PlanEntry[] {
  const records = new Map<string, ActionRecord>();
  const pending = new Set<string>();
  const entries: PlanEntry[] = [];
  for (const node of nodes) {
    const waiting = node.upstream.filter((u) => pending.has(u.id));
    if (waiting.length) {
      pending.add(node.id);
      const names =
        waiting
          .slice(0, 3)
          .map((u) => u.id)
          .join(', ') + (waiting.length > 3 ? ` and ${waiting.length - 3} more` : '');
      const own = ownChanges(ctx.store, node, inputs.get(node.id) ?? [], hostEnv);
      // A node built before whose own part is unchanged runs only if the upstream's bytes change.
      const built = ctx.store.nodes.get(node.id)?.latest !== undefined;
      entries.push({
        node: node.id,
        status: 'run',
        reasons: [...own, `upstream ${names} will run first (cached again if its output is unchanged)`],
        ...(built && own.length === 0 ? { if_upstream_changes: true as const } : {}),
      });
      continue;
    }
    const k = computeKey(node, inputs.get(node.id)!, records, hostEnv);
    if (!k.ok) {
      pending.add(node.id);
      entries.push({ node: node.id, status: 'run', reasons: [k.error.message] });
      continue;
    }
    const found = lookup(ctx.store, k.value.key, k.value.json);
    if (found.status === 'hit') {
      records.set(node.id, found.record);
      entries.push({ node: node.id, status: 'cached', key: k.value.key });
    } else {
      pending.add(node.id);
      entries.push({
        node: node.id,
        status: 'run',
        key: k.value.key,
        reasons: found.status === 'corrupt' ? [`${found.reason}: it will be dropped and rebuilt`] : whyMiss(ctx.store, node, k.value),
      });
    }
  }
  return entries;
}

export type NodeState =
  | { status: 'cached'; record: ActionRecord }
  | { status: 'executed'; record: ActionRecord }
  | { status: 'failed'; failure: StepFailure }
  | { status: 'skipped'; because: string };

export interface RunOptions {
  reporter: Reporter;
  /** Overrides the config's global concurrency. */
  jobs?: number;
  signal?: AbortSignal;
  hostEnv?: HostEnv;
  lockStaleMs?: number;
  /** The remote tier: read on a local miss, written after a node succeeds. */
  remote?: RemoteCache;
  /** Stores read on a local miss, before the remote tier, never written (a base branch's store: caching/read-only-stores.ts). */
  readStores?: readonly Store[];
  /** Only the nodes this shard owns execute; the others are used from a cache or left (pipeline/shard.ts). */
  shard?: Shard;
  /** Where a node executes (default: here, under the store's per-key lock). */
  executor?: NodeExecutor;
  /** Facts about an execution to keep in its record (ActionRecord.provenance; never part of the key). */
  provenanceOf?: (node: GraphNode) => Json | undefined;
  /**
   * Asked before a node with no usable record executes (`why`: its key had no record, or the
   * record's outputs were found corrupt): a record kept elsewhere to restore instead, or a
   * refusal to execute, in words; undefined lets it execute.
   */
  recall?: (node: GraphNode, key: CacheKey, why: 'missing' | 'corrupt') => Recall | undefined;
}

export type Recall = { restore: ActionRecord; note: string } | { refuse: string };

/**
 * Executes one node whose key has no record. The local executor runs it in this process;
 * another (a queue of remote workers) hands it elsewhere and returns the record it made.
 * `records` holds the records of the node's upstream nodes (their keys are in `key`).
 */
export interface NodeExecutor {
  execute(node: GraphNode, key: NodeKey, records: ReadonlyMap<string, ActionRecord>, emit: (e: EngineEvent) => void): Promise<NodeState>;
}

function tail(text: string, lines = 20): string {
  const all = text.trimEnd().split('\n');
  return all.slice(-lines).join('\n');
}

/** Builds every stale node: cached ones are reused, failures stop only their downstream. */
// eslint-disable-next-line max-lines-per-function -- 189 lines, to be split into named phases (issue 63)
export async function run(
  ctx: EngineContext,
  inputs: ReadonlyMap<string, ResolvedInput[]>,
  options: RunOptions,
  nodes: readonly GraphNode[] = ctx.graph.nodes,
): Promise<{ summary: RunSummary; states: Map<string, NodeState> }> {
  const { store, config } = ctx;
  const hostEnv = options.hostEnv ?? process.env;
  const timer = startTimer();
  const emit = (e: EngineEvent) => options.reporter.event(e);
  const global = pLimit(options.jobs ?? config.concurrency.global);
  const kindLimits = new Map<string, LimitFunction>();
  const limitFor = (kind: string) => {
    let l = kindLimits.get(kind);
    if (!l) kindLimits.set(kind, (l = pLimit(config.concurrency.kinds[kind] ?? Number.MAX_SAFE_INTEGER)));
    return l;
  };
  const states = new Map<string, NodeState>();
  const records = new Map<string, ActionRecord>();
  const used: CacheKey[] = [];
  const promises = new Map<string, Promise<NodeState>>();

  const stepCounts = new Map<string, number>();
  for (const n of nodes) stepCounts.set(n.step.name, (stepCounts.get(n.step.name) ?? 0) + 1);
  emit({ type: 'start', total: nodes.length, steps: [...stepCounts].map(([name, count]) => ({ name, nodes: count })) });
  store.init();

  // Cached nodes settle synchronously (no promise per node on a no-op run); the others wait for their upstreams.
  const promiseOf = (id: string): Promise<NodeState> => promises.get(id) ?? Promise.resolve(states.get(id)!);
  // Where records are found and kept: the local store, and the remote tier behind it when there is one
  // (whose local hits are published at the end, unless a remote executor's workers write it themselves).
  const cache = cacheFor(store, options.remote, { publishLocalHits: !options.executor }, options.readStores);
  // The hits this run used, by node: a node executing here makes what it reads of them local first.
  const hits = new Map<string, CacheHit>();
  const noteHit = (node: GraphNode, hit: CacheHit) => {
    emit({ type: 'cached', node: node.id, key: hit.record.key, builtElsewhere: hit.tier !== 'local', ...(hit.tier !== 'local' ? { from: hit.tier } : {}) });
    used.push(hit.record.key);
    hits.set(node.id, hit);
  };
  const keyAndLookup = (node: GraphNode): Result<{ key: NodeKey; found: CacheLookup | Promise<CacheLookup> }, StepFailure> => {
    const k = computeKey(node, inputs.get(node.id)!, records, hostEnv);
    if (!k.ok) return k;
    const found = cache.get(k.value.key, k.value.json);
    if (settledNow(found) && found.status === 'hit') noteHit(node, found);
    return ok({ key: k.value, found });
  };
  const settle = async (node: GraphNode): Promise<NodeState> => {
    const ups = node.upstream.length ? await Promise.all(node.upstream.map((u) => promiseOf(u.id))) : [];
    const bad = node.upstream.find((_, i) => ups[i]!.status === 'failed' || ups[i]!.status === 'skipped');
    if (bad) return { status: 'skipped', because: `upstream ${bad.id} did not complete` };
    if (options.signal?.aborted) return { status: 'skipped', because: 'interrupted' };
    const looked = keyAndLookup(node);
    return looked.ok ? afterLookup(node, looked.value.key, looked.value.found) : { status: 'failed', failure: looked.error };
  };
  // What a node reads of its upstreams' outputs is local before it runs (a record read lazily
  // from the remote tier names blobs not fetched yet). A remote executor's workers fetch their own.
  const upstreamLocal = async (node: GraphNode) => {
    if (options.executor) return;
    for (const u of node.upstream) {
      const hit = hits.get(u.id);
      const sel = hit ? selectedOutputs(node, u, hit.record) : undefined;
      if (sel?.ok) await hit!.apply(Object.values(sel.value));
    }
  };
  const afterLookup = async (node: GraphNode, key: NodeKey, lookingUp: CacheLookup | Promise<CacheLookup>): Promise<NodeState> => {
    const found = settledNow(lookingUp) ? lookingUp : await lookingUp;
    if (found.dropped) emit({ type: 'warning', node: node.id, message: `${found.dropped}; dropped the entry, rebuilding` });
    if (found.status === 'hit') {
      if (!settledNow(lookingUp)) noteHit(node, found);
      return { status: 'cached', record: found.record };
    }
    if (options.shard) {
      const own = ownership(node, options.shard);
      if (!own.owned) return { status: 'skipped', because: `not in shard ${options.shard.index}/${options.shard.count}: ${own.because}` };
    }
    await upstreamLocal(node);
    const execute = (n: GraphNode, nk: NodeKey, why: 'missing' | 'corrupt' = 'missing'): Promise<NodeState> => {
      const recalled = options.recall?.(n, nk.key, why);
      if (recalled && 'refuse' in recalled) {
        const failure: StepFailure = { reason: 'refused', message: recalled.refuse };
        emit({ type: 'failed', node: n.id, failure, logTail: '' });
        return Promise.resolve({ status: 'failed', failure });
      }
      if (recalled) {
        store.actions.put(recalled.restore);
        emit({ type: 'warning', node: n.id, message: recalled.note });
        emit({ type: 'cached', node: n.id, key: nk.key, builtElsewhere: false });
        used.push(nk.key);
        return Promise.resolve({ status: 'cached', record: recalled.restore });
      }
      return options.executor
        ? options.executor.execute(n, nk, records, emit).then((s) => (s.status === 'executed' && used.push(s.record.key), withProvenance(store, options, n, s)))
        : limitFor(n.kind.name)(() => global(() => executeLocked(ctx, n, nk, inputs.get(n.id)!, records, options, emit, used, cache)));
    };
    const state = await execute(node, key);
    if (state.status !== 'failed' || state.failure.reason !== 'corrupt-blob') return state;
    // A blob an upstream produced was corrupt (its size and mtime had not changed): the engine
    // dropped it with the records that need it; rebuild those upstreams once, then this node.
    const digest = state.failure.digest;
    // A record taken from the remote tier without its blobs (no stamps) is found by its outputs; one
    // whose trees are not local either may be the producer too, when no upstream is known to be.
    const holds = (u: GraphNode) => producerOf(store, records.get(u.id), digest);
    const known = node.upstream.filter((u) => holds(u) === 'yes');
    const producers = known.length ? known : node.upstream.filter((u) => holds(u) === 'maybe');
    emit({ type: 'warning', node: node.id, message: `${state.failure.message}; rebuilding ${producers.map((u) => u.id).join(', ') || 'it'}` });
    for (const u of producers) {
      const uk = computeKey(u, inputs.get(u.id)!, records, hostEnv);
      if (!uk.ok) return { status: 'failed', failure: uk.error };
      // Its record goes too (one taken from the remote tier would otherwise answer the lookup again,
      // run after run, without the blob): the producer is built here, now.
      dropRecord(store, uk.value.key);
      // Rebuilt here, it reads its own upstreams' outputs: local first, as for any node that runs.
      await upstreamLocal(u);
      const rebuilt = await execute(u, uk.value, 'corrupt');
      if (rebuilt.status !== 'executed' && rebuilt.status !== 'cached')
        return { status: 'failed', failure: { reason: 'store-error', message: `${u.id} could not be rebuilt after its output was found corrupt` } };
      // Built here, it went into every tier like any other result (putting right what the server held wrong).
      if (rebuilt.status === 'executed') hits.delete(u.id);
      else hits.set(u.id, { status: 'hit', record: rebuilt.record, tier: 'local', apply: () => Promise.resolve(true) });
      records.set(u.id, rebuilt.record);
      states.set(u.id, rebuilt);
    }
    const again = computeKey(node, inputs.get(node.id)!, records, hostEnv);
    if (!again.ok) return { status: 'failed', failure: again.error };
    const retried = await execute(node, again.value);
    if (retried.status === 'failed' && retried.failure.reason === 'corrupt-blob')
      emit({ type: 'failed', node: node.id, failure: retried.failure, logTail: '' });
    return retried;
  };

  const settled = (node: GraphNode, s: NodeState): NodeState => {
    states.set(node.id, s);
    if (s.status === 'cached' || s.status === 'executed') records.set(node.id, s.record);
    if (s.status === 'skipped') emit({ type: 'skipped', node: node.id, because: s.because });
    return s;
  };
  const internalFailure = (node: GraphNode, e: unknown): NodeState => {
    const s: NodeState = { status: 'failed', failure: { reason: 'internal', message: errorMessage(e) } };
    states.set(node.id, s);
    emit({ type: 'failed', node: node.id, failure: s.failure, logTail: '' });
    return s;
  };
  for (const node of nodes) {
    let p: Promise<NodeState>;
    if (!options.signal?.aborted && node.upstream.every((u) => states.get(u.id)?.status === 'cached')) {
      let looked: ReturnType<typeof keyAndLookup>;
      try {
        looked = keyAndLookup(node);
      } catch (e) {
        internalFailure(node, e);
        continue;
      }
      if (!looked.ok) {
        settled(node, { status: 'failed', failure: looked.error });
        continue;
      }
      const found = looked.value.found;
      if (settledNow(found) && found.status === 'hit') {
        settled(node, { status: 'cached', record: found.record });
        continue;
      }
      p = afterLookup(node, looked.value.key, looked.value.found);
    } else {
      p = settle(node);
    }
    promises.set(
      node.id,
      p.then(
        (s) => settled(node, s),
        (e: unknown) => internalFailure(node, e),
      ),
    );
  }
  await Promise.all(promises.values());
  await cache.flush?.();
  await settleRemovals();
  if (store.actions.packProblem) emit({ type: 'warning', message: `${store.actions.packProblem}: the records it held are rebuilt` });
  try {
    store.recordAccess(used);
  } catch (e) {
    emit({ type: 'warning', message: `could not record access times for gc: ${errorMessage(e)}` });
  }
  try {
    // The run's last batch of records: committed before its summary says they are built.
    store.actions.close();
  } catch (e) {
    emit({ type: 'warning', message: `could not sync the run's last action records to disk (a power cut now may take them): ${errorMessage(e)}` });
  }
  try {
    store.actions.packLoose();
  } catch (e) {
    emit({ type: 'warning', message: `could not pack the action records (they stay loose, as valid): ${errorMessage(e)}` });
  }
  const summary: RunSummary = { total: nodes.length, cached: 0, executed: 0, failed: 0, interrupted: 0, skipped: 0, elapsed: timer.elapsed() };
  for (const s of states.values())
    summary[
      s.status === 'failed' && s.failure.reason === 'killed'
        ? 'interrupted'
        : s.status === 'cached'
          ? 'cached'
          : s.status === 'executed'
            ? 'executed'
            : s.status
    ]++;
  emit({ type: 'end', summary });
  return { summary, states };
}

function provenanceField(options: Pick<RunOptions, 'provenanceOf'>, node: GraphNode): { provenance?: Json } {
  const p = options.provenanceOf?.(node);
  return p === undefined ? {} : { provenance: p };
}

/** A record a remote worker made, given this run's provenance in the local store (the worker knows none). */
function withProvenance(store: Store, options: Pick<RunOptions, 'provenanceOf'>, node: GraphNode, state: NodeState): NodeState {
  const provenance = provenanceField(options, node);
  if (state.status !== 'executed' || provenance.provenance === undefined || store.actions.get(state.record.key).status !== 'hit') return state;
  const plain = (state.record as ActionRecord & { toJSON?: () => ActionRecord }).toJSON?.() ?? state.record;
  const record: ActionRecord = { ...plain, ...provenance };
  store.actions.put(record);
  return { status: 'executed', record };
}

/** Transient tries of one key kept on record; older ones beyond this are dropped. */
const MAX_TRIES = 50;
/** Tries of a node whose fault asked to be retried at once (ExecutionContext.doNotCache's retryNow), in all. */
const IMMEDIATE_TRIES = 3;

/** A transient try of a node kept on its record (only tries of the same key are kept with it). */
function recordTry(store: Store, nodeId: string, attempt: NodeTry): void {
  store.nodes.update(nodeId, (h) => ({ ...h, tries: [...(h.tries ?? []).filter((t) => t.key === attempt.key), attempt].slice(-MAX_TRIES) }));
}

/** The EARLIER_TRIES output: `01/`, `02/`, ... each an earlier try's outputs (tries whose blobs are gone are left out). */
function earlierTries(store: Store, tries: readonly NodeTry[]): OutputManifest {
  const intact = tries.filter((t) => Object.values(t.outputs).every((e) => isIntact(store, e)));
  if (!intact.length) return {};
  const dir = store.cas.putTree(
    intact.map((t, i) => ({ name: String(i + 1).padStart(2, '0'), ...store.cas.putTree(Object.entries(t.outputs).map(([name, e]) => ({ name, ...e }))) })),
  );
  return { [EARLIER_TRIES]: dir };
}

/** Every blob of an output is in the store (a tree that cannot be read is not). */
function isIntact(store: Store, entry: OutputManifest[string]): boolean {
  try {
    return [...store.cas.closure(entry)].every((d) => store.cas.has(d));
  } catch {
    return false;
  }
}

/** Whether a record's outputs hold a blob: by its stamps, by its outputs' digests, or (trees not local) maybe. */
function producerOf(store: Store, record: ActionRecord | undefined, digest: Sha256): 'yes' | 'no' | 'maybe' {
  if (!record) return 'no';
  if (digest in record.stamps) return 'yes';
  if (Object.keys(record.stamps).length) return 'no';
  let unknown = false;
  for (const entry of Object.values(record.outputs)) {
    if (entry.digest === digest) return 'yes';
    if (entry.type !== 'dir') continue;
    try {
      if (store.cas.closure(entry).has(digest)) return 'yes';
    } catch {
      unknown = true;
    }
  }
  return unknown ? 'maybe' : 'no';
}

/** Executes one node here (what a worker does with a job): under the store's per-key lock, recorded locally. */
export async function executeHere(
  ctx: EngineContext,
  node: GraphNode,
  key: NodeKey,
  inputs: readonly ResolvedInput[],
  records: ReadonlyMap<string, ActionRecord>,
  options: RunOptions,
): Promise<NodeState> {
  const emit = (e: EngineEvent) => options.reporter.event(e);
  const used: CacheKey[] = [];
  return executeLocked(
    ctx,
    node,
    key,
    inputs,
    records,
    options,
    emit,
    used,
    cacheFor(ctx.store, options.remote, { publishLocalHits: false }, options.readStores),
  );
}

/** The local store (with the read-only stores behind it), and the remote tier behind them when there is one. */
export function cacheFor(store: Store, remote: RemoteCache | undefined, options: { publishLocalHits: boolean }, readStores: readonly Store[] = []): Cache {
  const local = new LocalCache(store, readStores);
  return remote ? new TieredCache(local, new RemoteTier(store, remote), options) : local;
}

async function executeLocked(
  ctx: EngineContext,
  node: GraphNode,
  key: NodeKey,
  inputs: readonly ResolvedInput[],
  records: ReadonlyMap<string, ActionRecord>,
  options: RunOptions,
  emit: (e: EngineEvent) => void,
  used: CacheKey[],
  /** Where the result is recorded: the local store, and the remote tier when there is one. */
  cache: Cache,
): Promise<NodeState> {
  const { store } = ctx;
  const lock = await store.locks.acquire(key.key, node.id, {
    onWait: (holder) => emit({ type: 'waiting', node: node.id, holder }),
    ...(options.signal ? { signal: options.signal } : {}),
    ...(options.lockStaleMs ? { staleMs: options.lockStaleMs } : {}),
  });
  const workDir = tempPath(store.tmpDir, 'work');
  const nodeLog = new NodeLog(`${workDir}.log`);
  try {
    // Another run may have built it while we waited for the lock.
    const again = lookup(store, key.key);
    if (again.status === 'hit') {
      emit({ type: 'cached', node: node.id, key: key.key, builtElsewhere: true });
      used.push(key.key);
      return { status: 'cached', record: again.record };
    }
    if (options.signal?.aborted) return { status: 'skipped', because: 'interrupted' };
    emit({ type: 'running', node: node.id });
    mkdirSync(workDir, { recursive: true, mode: 0o700 }); // private to the harness: attempts are handed only their own workspace
    const startedAt = new Date();
    let transient: string | undefined;
    let outcome: { word: string; detail: string } | undefined;
    let result: Result<OutputManifest, StepFailure>;
    for (let tryNo = 1; ; tryNo++) {
      transient = undefined;
      let retryNow = false;
      const tryAt = new Date();
      result = await executeNode(
        ctx,
        node,
        inputs,
        records,
        workDir,
        nodeLog,
        options,
        (reason, o) => {
          transient ??= reason;
          retryNow ||= Boolean(o?.retryNow);
        },
        (word, detail) => (outcome = { word, detail }),
      );
      if (!result.ok || !transient || !retryNow || tryNo >= IMMEDIATE_TRIES || options.signal?.aborted) break;
      // The try is on record (a transient result is kept as one), and the node runs again now, in a clean work directory.
      recordTry(store, node.id, { key: key.key, at: tryAt.toISOString(), reason: transient, outputs: result.value });
      emit({ type: 'warning', node: node.id, message: `${transient}; trying again now (try ${tryNo + 1} of ${IMMEDIATE_TRIES})` });
      rmSync(workDir, { recursive: true, force: true });
      mkdirSync(workDir, { recursive: true, mode: 0o700 });
    }
    const durationMs = Date.now() - startedAt.getTime();
    // Work cut short by an interrupt is not a result: nothing of it is stored.
    if (options.signal?.aborted) return { status: 'failed', failure: { reason: 'killed', message: 'interrupted' } };
    const logBytes = nodeLog.bytes();
    const logText = logBytes.toString('utf8');
    const log: Sha256 | null = logBytes.length ? store.cas.putBytes(logBytes) : null;
    if (!result.ok) {
      // A corrupt upstream blob is not this node's failure (the caller rebuilds the producer and retries), nor an interrupt.
      if (!isOwnFailure(result.error)) return { status: 'failed', failure: result.error };
      // The failure's log stays in the store (gc keeps it while the failure is the node's last): `explain` and `show` read it.
      store.nodes.update(node.id, (h) => ({
        ...h,
        last_failure: { key: key.key, at: startedAt.toISOString(), reason: result.error.reason, message: result.error.message, ...(log ? { log } : {}) },
      }));
      emit({ type: 'failed', node: node.id, failure: result.error, logTail: tail(logText) });
      return { status: 'failed', failure: result.error };
    }
    // Earlier transient results of this key travel with this one, so what was retried stays on record.
    const pending = store.nodes.tries(node.id).filter((t) => t.key === key.key);
    const outputs = pending.length ? { ...result.value, ...earlierTries(store, pending) } : result.value;
    const record = actionRecord(store, node, key, outputs, { log, startedAt, durationMs, ...provenanceField(options, node) });
    // Inputs were hashed before the node ran; if one changed meanwhile, the result is not cached.
    const resolver = new InputResolver(ctx.config.rootDir, store.statCache);
    const changed = inputs.filter((i) => resolver.rehash(i) !== i.digest);
    if (changed.length) {
      emit({
        type: 'warning',
        node: node.id,
        message: `input ${changed.map((c) => c.path).join(', ')} changed while the node ran; its result is used by this run but not cached`,
      });
    } else if (transient) {
      emit({ type: 'warning', node: node.id, message: `${transient}; the result is used by this run but not cached (the next run tries again)` });
      recordTry(store, node.id, { key: key.key, at: startedAt.toISOString(), reason: transient, outputs: result.value });
    } else {
      await cache.set(record);
      store.nodes.recordBuilt(node.id, key.key, startedAt.toISOString());
      used.push(key.key);
    }
    emit({ type: 'done', node: node.id, key: key.key, durationMs, recorded: changed.length === 0 && !transient, ...(outcome ? { outcome } : {}) });
    return { status: 'executed', record };
  } finally {
    // The work directory goes off the critical path: renamed away at once, removed in the background.
    removeLater(workDir);
    nodeLog.remove();
    lock.release();
  }
}

/** The record of `node` built under `key` with these outputs: each blob of theirs stamped as it is in the store now. */
export function actionRecord(
  store: Store,
  node: GraphNode,
  key: NodeKey,
  outputs: OutputManifest,
  run: { log: Sha256 | null; startedAt: Date; durationMs: number; provenance?: Json },
): ActionRecord {
  const stamps: Record<string, string> = {};
  for (const entry of Object.values(outputs)) {
    for (const d of store.cas.closure(entry)) stamps[d] = store.cas.stampForRecord(d)!;
  }
  return {
    schema: 1,
    key: key.key,
    preimage: key.json,
    node: node.id,
    step: node.step.name,
    kind: node.kind.name,
    outputs,
    outputs_digest: outputsDigest(outputs),
    stamps,
    log: run.log,
    started_at: run.startedAt.toISOString(),
    duration_ms: run.durationMs,
    pairbench_version: packageVersion(),
    ...(run.provenance !== undefined ? { provenance: run.provenance } : {}),
  };
}

/**
 * Executes `node` as a run would (the same staging, upstream selection, blob checks and
 * context), but records nothing: no action record, no node history; its outputs' blobs stay
 * unreferenced (gc removes them). For `probe` and `doctor`'s canary, which run one attempt to
 * look at it. Upstreams without a record in `records` are left out (probe skips certify).
 */
export async function executeUnrecorded(
  ctx: EngineContext,
  node: GraphNode,
  inputs: readonly ResolvedInput[],
  records: ReadonlyMap<string, ActionRecord>,
  options: Pick<RunOptions, 'hostEnv' | 'signal'> & { extraFiles?: readonly StagedFile[]; doNotCache?: ExecutionContext['doNotCache'] },
): Promise<{ ok: true; outputs: OutputManifest } | { ok: false; failure: StepFailure; logTail: string }> {
  const workDir = tempPath(ctx.store.tmpDir, 'unrecorded');
  const nodeLog = new NodeLog(`${workDir}.log`);
  mkdirSync(workDir, { recursive: true });
  try {
    // The node as it runs here: without the upstreams the caller left unbuilt (they have no record).
    const here: GraphNode = { ...node, upstream: node.upstream.filter((u) => records.has(u.id)) };
    const r = await executeNode(
      ctx,
      here,
      inputs,
      records,
      workDir,
      nodeLog,
      options,
      options.doNotCache ?? (() => undefined),
      () => undefined,
      options.extraFiles,
    );
    if (r.ok) return { ok: true, outputs: r.value };
    return { ok: false, failure: r.error, logTail: tail(nodeLog.bytes().toString('utf8'), 20) };
  } catch (e) {
    // A step that throws fails this one execution; the command says why (run would record it the same way).
    return { ok: false, failure: { reason: 'internal', message: errorMessage(e) }, logTail: '' };
  } finally {
    rmSync(workDir, { recursive: true, force: true });
    nodeLog.remove();
  }
}

/** Removals of finished work directories still under way (run() waits for them before it returns). */
const pendingRemovals = new Set<Promise<void>>();

function removeLater(dir: string): void {
  const trash = `${dir}.done`;
  try {
    renameSync(dir, trash);
  } catch {
    rmSync(dir, { recursive: true, force: true });
    return;
  }
  const p: Promise<void> = rm(trash, { recursive: true, force: true })
    .catch(() => undefined)
    .finally(() => pendingRemovals.delete(p));
  pendingRemovals.add(p);
}

/** Waits for background removals of work directories. */
export async function settleRemovals(): Promise<void> {
  while (pendingRemovals.size) await Promise.all([...pendingRemovals]);
}

async function executeNode(
  ctx: EngineContext,
  node: GraphNode,
  inputs: readonly ResolvedInput[],
  records: ReadonlyMap<string, ActionRecord>,
  workDir: string,
  nodeLog: NodeLog,
  options: Pick<RunOptions, 'hostEnv' | 'signal'>,
  doNotCache: ExecutionContext['doNotCache'],
  outcome: (word: string, detail: string) => void,
  /** Files staged beside the inputs (executeUnrecorded: doctor's canary script). */
  extraFiles: readonly StagedFile[] = [],
): Promise<Result<OutputManifest, StepFailure>> {
  const { store } = ctx;
  // Store the inputs first: the step then sees exactly the bytes that were hashed into its key.
  const files: StagedFile[] = [...extraFiles];
  for (const i of inputs) {
    let entry;
    try {
      entry = store.cas.putPath(i.abs);
    } catch (e) {
      return err({ reason: 'input-changed', message: `cannot read input ${i.path}: ${errorMessage(e)}`, input: i.path });
    }
    if (entry.digest !== i.digest) {
      return err({ reason: 'input-changed', message: `input ${i.path} changed after it was hashed; run again`, input: i.path });
    }
    files.push({ path: i.path, entry });
  }
  const upstream = [];
  for (const u of node.upstream) {
    const sel = selectedOutputs(node, u, records.get(u.id)!);
    if (!sel.ok) return sel;
    upstream.push({ node: u.id, key: records.get(u.id)!.key, outputs: sel.value });
  }
  // Every blob a step reads is verified; a corrupt one is noticed here whatever the step does
  // with the error, so the engine can drop it and rebuild the node that produced it.
  let corrupt: CorruptBlobError | undefined;
  const watch =
    <A extends unknown[], R>(f: (...a: A) => R) =>
    (...a: A): R => {
      try {
        return f(...a);
      } catch (e) {
        if (e instanceof CorruptBlobError) corrupt ??= e;
        throw e;
      }
    };
  const watchAsync =
    <A extends unknown[], R>(f: (...a: A) => Promise<R>) =>
    (...a: A): Promise<R> =>
      f(...a).catch((e: unknown) => {
        if (e instanceof CorruptBlobError) corrupt ??= e;
        throw e;
      });
  const artifacts = {
    materialize: watch(store.cas.materialize.bind(store.cas)),
    read: watch(store.cas.read.bind(store.cas)),
    putPath: store.cas.putPath.bind(store.cas),
    putBytes: store.cas.putBytes.bind(store.cas),
    putOpenFile: store.cas.putOpenFile.bind(store.cas),
    putTree: store.cas.putTree.bind(store.cas),
    entryAt: watch(store.cas.entryAt.bind(store.cas)),
    readTreeFiles: watchAsync(store.cas.readTreeFiles.bind(store.cas)),
    materializeAsync: watchAsync(store.cas.materializeAsync.bind(store.cas)),
  };
  const corruptFailure = (e: CorruptBlobError): Result<OutputManifest, StepFailure> => {
    const dropped = store.forgetBlob(e.digest);
    const failure: StepFailure = {
      reason: 'corrupt-blob',
      message: `${e.message}; dropped it${dropped.length ? ` and the records of ${dropped.join(', ')}` : ''}`,
      digest: e.digest,
    };
    return err(failure);
  };
  try {
    const result = await node.kind.execute({
      node,
      config: ctx.config,
      workDir,
      files,
      upstream,
      artifacts,
      log: (line) => nodeLog.append(line + '\n'),
      get logFile() {
        return nodeLog.file();
      },
      mirrorOf: (source) => store.mirrorPath(source),
      hostEnv: options.hostEnv ?? process.env,
      signal: options.signal ?? new AbortController().signal,
      doNotCache,
      outcome,
    });
    return corrupt ? corruptFailure(corrupt) : result;
  } catch (e) {
    if (e instanceof CorruptBlobError) return corruptFailure(e);
    throw e;
  }
}
