import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
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
import { EARLIER_TRIES, type GraphNode, type HostEnv, type StagedFile, type StepFailure } from './step-kind.js';
import { outputsDigest, type ActionRecord, type NodeTry, type OutputManifest } from './store/action-cache.js';
import { tempPath } from './atomic-write.js';
import { CorruptBlobError } from './store/cas.js';
import type { Store } from './store/store.js';
import type { RemoteCache } from './store/remote-cache.js';
import { ownership, type Shard } from './shard.js';

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

export type Lookup = { status: 'hit'; record: ActionRecord } | { status: 'miss' } | { status: 'corrupt'; reason: string };

/** A record is a hit only if it verifies and every blob it names is intact. */
export function lookup(store: Store, key: CacheKey, preimage?: string): Lookup {
  const found = store.actions.get(key, preimage);
  if (found.status !== 'hit') return found;
  const stamps = found.stampPairs ?? Object.entries(found.record.stamps).flat();
  for (let i = 0; i < stamps.length; i += 2) {
    const digest = stamps[i]!;
    if (!store.cas.isIntact(digest as Sha256, stamps[i + 1])) {
      return { status: 'corrupt', reason: `stored output blob ${digest.slice(0, 12)} is missing or does not match its digest` };
    }
  }
  return found;
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

export type PlanEntry = { node: string; status: 'cached'; key: CacheKey } | { node: string; status: 'run'; key?: CacheKey; reasons: string[] };

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
      entries.push({
        node: node.id,
        status: 'run',
        reasons: [
          ...ownChanges(ctx.store, node, inputs.get(node.id) ?? [], hostEnv),
          `upstream ${names} will run first (cached again if its output is unchanged)`,
        ],
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
  /** Only the nodes this shard owns execute; the others are used from a cache or left (pipeline/shard.ts). */
  shard?: Shard;
  /** Where a node executes (default: here, under the store's per-key lock). */
  executor?: NodeExecutor;
  /** Facts about an execution to keep in its record (ActionRecord.provenance; never part of the key). */
  provenanceOf?: (node: GraphNode) => Json | undefined;
}

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
export async function run(
  ctx: EngineContext,
  inputs: ReadonlyMap<string, ResolvedInput[]>,
  options: RunOptions,
  nodes: readonly GraphNode[] = ctx.graph.nodes,
): Promise<{ summary: RunSummary; states: Map<string, NodeState> }> {
  const { store, config } = ctx;
  const hostEnv = options.hostEnv ?? process.env;
  const started = Date.now();
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
  // The remote tier as nodes executing here use it (a remote executor's workers talk to it themselves).
  const remoteHere = options.remote && !options.executor ? options.remote : undefined;
  // Local hits the remote tier is not known to hold: uploaded once the run is done, so every job sharing it finds them.
  const unpublished: ActionRecord[] = [];
  const keyAndLookup = (node: GraphNode): Result<{ key: NodeKey; found: Lookup }, StepFailure> => {
    const k = computeKey(node, inputs.get(node.id)!, records, hostEnv);
    if (!k.ok) return k;
    const found = lookup(store, k.value.key, k.value.json);
    if (found.status === 'hit') {
      emit({ type: 'cached', node: node.id, key: k.value.key, builtElsewhere: false });
      used.push(k.value.key);
      if (remoteHere?.writable && !remoteHere.knownToHold(store, k.value.key)) unpublished.push(found.record);
    }
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
  const afterLookup = async (node: GraphNode, key: NodeKey, found: Lookup): Promise<NodeState> => {
    if (found.status === 'hit') return { status: 'cached', record: found.record };
    if (found.status === 'corrupt') {
      emit({ type: 'warning', node: node.id, message: `${found.reason}; dropped the entry, rebuilding` });
      dropRecord(store, key.key);
    }
    // Only the record: a node that reads its outputs fetches them below, so a replay of cache hits moves records, not trees.
    const fromRemote = options.remote?.active ? await readThrough(store, options.remote, key.key, 'lazy') : undefined;
    if (fromRemote) {
      emit({ type: 'cached', node: node.id, key: key.key, builtElsewhere: true, remote: true });
      used.push(key.key);
      return { status: 'cached', record: fromRemote };
    }
    if (options.shard) {
      const own = ownership(node, options.shard);
      if (!own.owned) return { status: 'skipped', because: `not in shard ${options.shard.index}/${options.shard.count}: ${own.because}` };
    }
    // What this node reads of its upstreams' outputs is local before it runs (lazily fetched records).
    if (remoteHere?.active) {
      for (const u of node.upstream) {
        const rec = records.get(u.id);
        const sel = rec ? selectedOutputs(node, u, rec) : undefined;
        if (sel?.ok) await ensureLocal(store, remoteHere, Object.values(sel.value));
      }
    }
    const execute = (n: GraphNode, nk: NodeKey) =>
      options.executor
        ? options.executor.execute(n, nk, records, emit).then((s) => (s.status === 'executed' && used.push(s.record.key), withProvenance(store, options, n, s)))
        : limitFor(n.kind.name)(() => global(() => executeLocked(ctx, n, nk, inputs.get(n.id)!, records, options, emit, used)));
    const state = await execute(node, key);
    // A remote executor's worker uploaded its result itself.
    if (state.status === 'executed' && remoteHere) await writeBack(store, remoteHere, state.record);
    if (state.status !== 'failed' || !state.failure.corrupt_blob) return state;
    // A blob an upstream produced was corrupt (its size and mtime had not changed): the engine
    // dropped it with the records that need it; rebuild those upstreams once, then this node.
    const digest = state.failure.corrupt_blob as Sha256;
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
      const rebuilt = await execute(u, uk.value);
      if (rebuilt.status !== 'executed' && rebuilt.status !== 'cached')
        return { status: 'failed', failure: { reason: 'store-error', message: `${u.id} could not be rebuilt after its output was found corrupt` } };
      // Built here: it goes up like any other result (putting right what the server held wrong).
      if (rebuilt.status === 'executed' && remoteHere) await writeBack(store, remoteHere, rebuilt.record);
      records.set(u.id, rebuilt.record);
      states.set(u.id, rebuilt);
    }
    const again = computeKey(node, inputs.get(node.id)!, records, hostEnv);
    if (!again.ok) return { status: 'failed', failure: again.error };
    const retried = await execute(node, again.value);
    if (retried.status === 'failed' && retried.failure.corrupt_blob) emit({ type: 'failed', node: node.id, failure: retried.failure, logTail: '' });
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
      if (looked.value.found.status === 'hit') {
        settled(node, { status: 'cached', record: looked.value.found.record });
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
  if (remoteHere && unpublished.length) {
    const upload = pLimit(8);
    await Promise.all(unpublished.map((r) => upload(() => writeBack(store, remoteHere, r))));
  }
  await settleRemovals();
  if (store.actions.packProblem) emit({ type: 'warning', message: `${store.actions.packProblem}: the records it held are rebuilt` });
  try {
    store.recordAccess(used);
  } catch (e) {
    emit({ type: 'warning', message: `could not record access times for gc: ${errorMessage(e)}` });
  }
  try {
    store.actions.packLoose();
  } catch (e) {
    emit({ type: 'warning', message: `could not pack the action records (they stay loose, as valid): ${errorMessage(e)}` });
  }
  const summary: RunSummary = { total: nodes.length, cached: 0, executed: 0, failed: 0, skipped: 0, durationMs: Date.now() - started };
  for (const s of states.values()) summary[s.status === 'cached' ? 'cached' : s.status === 'executed' ? 'executed' : s.status]++;
  emit({ type: 'end', summary });
  return { summary, states };
}

/**
 * A record from the remote tier, made local. `eager`: every blob of its outputs fetched and
 * verified first (trees, then what they name), the record stored with fresh local stamps.
 * `lazy`: the record alone (no stamps); its blobs come when a node or a command reads them
 * (ensureLocal). Undefined when the remote has none, or (eager) cannot supply all of it.
 */
export async function readThrough(store: Store, remote: RemoteCache, key: CacheKey, blobs: 'eager' | 'lazy' = 'eager'): Promise<ActionRecord | undefined> {
  const got = await remote.getRecord(store, key);
  if (got.status !== 'hit') return undefined;
  if (blobs === 'lazy') {
    const record: ActionRecord = { ...got.record, stamps: {}, log: null };
    // Written when the run packs its records (run() ends with packLoose): one file, not one per record.
    store.actions.putFetched(record);
    return record;
  }
  if (!(await ensureLocal(store, remote, Object.values(got.record.outputs)))) return undefined;
  if (got.record.log) await remote.fetchBlobs(store, [got.record.log]);
  const stamps: Record<string, string> = {};
  for (const entry of Object.values(got.record.outputs)) for (const d of store.cas.closure(entry)) stamps[d] = store.cas.stamp(d)!;
  const record: ActionRecord = { ...got.record, stamps, log: got.record.log && store.cas.has(got.record.log) ? got.record.log : null };
  store.actions.put(record, { durable: false });
  return record;
}

/** Fetches whatever the local store lacks of these outputs from the remote tier (trees first, then what they name). */
export async function ensureLocal(store: Store, remote: RemoteCache, entries: readonly { type: string; digest: Sha256 }[]): Promise<boolean> {
  let level = entries;
  while (level.length) {
    if (
      !(await remote.fetchBlobs(
        store,
        level.map((e) => e.digest),
      ))
    )
      return false;
    level = level.flatMap((e) => (e.type === 'dir' ? store.cas.readTree(e.digest).entries.flatMap((c) => (c.type === 'symlink' ? [] : [c])) : []));
  }
  return true;
}

/** Uploads a node's outputs (its blobs first, then the signed record) when the remote tier takes writes. */
export async function writeBack(store: Store, remote: RemoteCache, record: ActionRecord): Promise<void> {
  if (!remote.active || store.actions.get(record.key).status !== 'hit') return; // transient results are not cached anywhere
  const blobs = new Set<Sha256>(Object.keys(record.stamps) as Sha256[]);
  if (record.log) blobs.add(record.log);
  await remote.putRecord(store, record, blobs);
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

function dropRecord(store: Store, key: CacheKey): void {
  const found = store.actions.get(key);
  if (found.status === 'hit') {
    for (const d of Object.keys(found.record.stamps)) {
      try {
        store.cas.read(d as Sha256);
      } catch {
        store.cas.remove(d as Sha256);
      }
    }
  }
  store.actions.remove(key);
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
  const state = await executeLocked(ctx, node, key, inputs, records, options, emit, used);
  if (state.status === 'executed' && options.remote) await writeBack(ctx.store, options.remote, state.record);
  return state;
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
): Promise<NodeState> {
  const { store } = ctx;
  const lock = await store.locks.acquire(key.key, node.id, {
    onWait: (holder) => emit({ type: 'waiting', node: node.id, holder }),
    ...(options.signal ? { signal: options.signal } : {}),
    ...(options.lockStaleMs ? { staleMs: options.lockStaleMs } : {}),
  });
  const workDir = tempPath(store.tmpDir, 'work');
  const logFile = `${workDir}.log`;
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
    writeFileSync(logFile, '');
    const startedAt = new Date();
    let transient: string | undefined;
    let outcome: { word: string; detail: string } | undefined;
    const result = await executeNode(
      ctx,
      node,
      inputs,
      records,
      workDir,
      logFile,
      options,
      (reason) => (transient ??= reason),
      (word, detail) => (outcome = { word, detail }),
    );
    const durationMs = Date.now() - startedAt.getTime();
    // Work cut short by an interrupt is not a result: nothing of it is stored.
    if (options.signal?.aborted) return { status: 'failed', failure: { reason: 'killed', message: 'interrupted' } };
    let log: Sha256 | null = null;
    let logText = '';
    try {
      const bytes = readFileSync(logFile);
      logText = bytes.toString('utf8');
      log = bytes.length ? store.cas.putBytes(bytes) : null;
    } catch {
      // no log
    }
    if (!result.ok) {
      // A corrupt upstream blob is not this node's failure: the caller rebuilds the producer and retries.
      if (result.error.corrupt_blob) return { status: 'failed', failure: result.error };
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
    const stamps: Record<string, string> = {};
    for (const entry of Object.values(outputs)) {
      for (const d of store.cas.closure(entry)) stamps[d] = store.cas.stamp(d)!;
    }
    const record: ActionRecord = {
      schema: 1,
      key: key.key,
      preimage: key.json,
      node: node.id,
      step: node.step.name,
      kind: node.kind.name,
      outputs,
      outputs_digest: outputsDigest(outputs),
      stamps,
      log,
      started_at: startedAt.toISOString(),
      duration_ms: durationMs,
      pairbench_version: packageVersion(),
      ...provenanceField(options, node),
    };
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
      const attempt: NodeTry = { key: key.key, at: startedAt.toISOString(), reason: transient, outputs: result.value };
      store.nodes.update(node.id, (h) => ({ ...h, tries: [...(h.tries ?? []).filter((t) => t.key === key.key), attempt].slice(-MAX_TRIES) }));
    } else {
      store.actions.put(record);
      store.nodes.recordBuilt(node.id, key.key, startedAt.toISOString());
      used.push(key.key);
    }
    emit({ type: 'done', node: node.id, key: key.key, durationMs, recorded: changed.length === 0 && !transient, ...(outcome ? { outcome } : {}) });
    return { status: 'executed', record };
  } finally {
    // The work directory goes off the critical path: renamed away at once, removed in the background.
    removeLater(workDir);
    rmSync(logFile, { force: true });
    lock.release();
  }
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
  options: Pick<RunOptions, 'hostEnv' | 'signal'> & { extraFiles?: readonly StagedFile[]; doNotCache?: (reason: string) => void },
): Promise<{ ok: true; outputs: OutputManifest } | { ok: false; failure: StepFailure; logTail: string }> {
  const workDir = tempPath(ctx.store.tmpDir, 'unrecorded');
  const logFile = `${workDir}.log`;
  mkdirSync(workDir, { recursive: true });
  writeFileSync(logFile, '');
  try {
    // The node as it runs here: without the upstreams the caller left unbuilt (they have no record).
    const here: GraphNode = { ...node, upstream: node.upstream.filter((u) => records.has(u.id)) };
    const r = await executeNode(
      ctx,
      here,
      inputs,
      records,
      workDir,
      logFile,
      options,
      options.doNotCache ?? (() => undefined),
      () => undefined,
      options.extraFiles,
    );
    if (r.ok) return { ok: true, outputs: r.value };
    let log = '';
    try {
      log = readFileSync(logFile, 'utf8');
    } catch {
      // no log
    }
    return { ok: false, failure: r.error, logTail: tail(log, 20) };
  } catch (e) {
    // A step that throws fails this one execution; the command says why (run would record it the same way).
    return { ok: false, failure: { reason: 'internal', message: errorMessage(e) }, logTail: '' };
  } finally {
    rmSync(workDir, { recursive: true, force: true });
    rmSync(logFile, { force: true });
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
  logFile: string,
  options: Pick<RunOptions, 'hostEnv' | 'signal'>,
  doNotCache: (reason: string) => void,
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
      return err({ reason: 'input-changed', message: `cannot read input ${i.path}: ${errorMessage(e)}` });
    }
    if (entry.digest !== i.digest) {
      return err({ reason: 'input-changed', message: `input ${i.path} changed after it was hashed; run again` });
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
  const artifacts = {
    materialize: watch(store.cas.materialize.bind(store.cas)),
    read: watch(store.cas.read.bind(store.cas)),
    putPath: store.cas.putPath.bind(store.cas),
    entryAt: watch(store.cas.entryAt.bind(store.cas)),
  };
  const corruptFailure = (e: CorruptBlobError): Result<OutputManifest, StepFailure> => {
    const dropped = store.forgetBlob(e.digest);
    return err({
      reason: 'store-error',
      message: `${e.message}; dropped it${dropped.length ? ` and the records of ${dropped.join(', ')}` : ''}`,
      corrupt_blob: e.digest,
    });
  };
  try {
    const result = await node.kind.execute({
      node,
      config: ctx.config,
      workDir,
      files,
      upstream,
      artifacts,
      logFile,
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
