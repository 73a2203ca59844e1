/**
 * `pairbench show NODE [OUTPUT] [--list]`: a node's stored outputs, read from the store
 * the way a user thinks of them -- `result.json`, `tree/src/add.mjs`, `log` -- so no one
 * digs blobs out of `cas/`. The record is the one this config plans for the node; a
 * stale node shows what this config's last run built; a failed node shows its log.
 */
import type { CacheKey, Sha256 } from '../pipeline/digest.js';
import type { EngineContext, PlanEntry } from '../pipeline/engine.js';
import { lookup, type Lookup } from '../pipeline/caching/local-cache.js';
import { EARLIER_TRIES, type GraphNode } from '../pipeline/step-kind.js';
import { describeOutputs } from '../pipeline/artifact.js';
import type { ActionRecord, OutputManifest } from '../pipeline/store/action-cache.js';
import { CorruptBlobError, type OutputEntry, type TreeEntry } from '../pipeline/store/cas.js';

export interface ShowIO {
  stdout: { write(s: string | Uint8Array): unknown };
}

/** What is shown: an output or the log, or the listing of a record or a directory. */
export type ShowResult =
  | { ok: true; kind: 'bytes'; node: string; output: string; digest: string; bytes: Buffer; note: string | null }
  | { ok: true; kind: 'list'; node: string; output: string | null; entries: ListedEntry[]; note: string | null }
  | { ok: false; code: 'not-built' | 'no-such-output'; message: string; hint: string }
  /** The record is here, its bytes are not (it came from the remote cache without them): fetch `outputs`, then show again. */
  | { ok: false; code: 'not-local'; message: string; hint: string; outputs: OutputEntry[] };

export interface ListedEntry {
  name: string;
  type: 'file' | 'dir' | 'symlink' | 'log';
  size: number | null;
  digest: string | null;
  /** What the output is, as its step kind declares it (a listing of a node's outputs). */
  about?: string;
}

/** The record `show` reads: the planned key's, else this config's last build of the node. */
function recordOf(
  ctx: EngineContext,
  node: GraphNode,
  entries: readonly PlanEntry[],
  ownKeys: ReadonlySet<string>,
): { record: ActionRecord; note: string | null } | null {
  const planned = entries.find((e) => e.node === node.id);
  if (planned?.status === 'cached' && planned.key) {
    const found = lookup(ctx.store, planned.key);
    if (found.status === 'hit') return { record: found.record, note: null };
  }
  let best: Lookup | undefined;
  const latest = ctx.store.nodes.get(node.id)?.latest;
  if (latest && ownKeys.has(latest.key)) best = lookup(ctx.store, latest.key);
  if (!best || best.status !== 'hit') {
    for (const key of ownKeys) {
      const found = lookup(ctx.store, key as CacheKey);
      if (found.status === 'hit' && found.record.node === node.id && (!best || best.status !== 'hit' || found.record.started_at > best.record.started_at))
        best = found;
    }
  }
  return best?.status === 'hit'
    ? { record: best.record, note: `${node.id} is stale (see 'pairbench plan'): showing what this config's last run built at ${best.record.started_at}` }
    : null;
}

export function showNode(
  ctx: EngineContext,
  node: GraphNode,
  entries: readonly PlanEntry[],
  ownKeys: ReadonlySet<string>,
  output: string | undefined,
  list: boolean,
): ShowResult {
  const found = recordOf(ctx, node, entries, ownKeys);
  try {
    return showFound(ctx, node, found, output, list);
  } catch (e) {
    if (!(e instanceof CorruptBlobError) || !found) throw e;
    // A record replayed from the remote cache holds no bytes until something reads them.
    return {
      ok: false,
      code: 'not-local',
      message: `${node.id}'s ${output ?? 'outputs'}: ${e.message} in this store`,
      hint: "the record came from the remote cache without its bytes: give --remote-cache URL (or set cache.remote) and show fetches them; 'pairbench fsck --repair' drops a damaged one",
      outputs: Object.values(found.record.outputs),
    };
  }
}

function showFound(ctx: EngineContext, node: GraphNode, found: ReturnType<typeof recordOf>, output: string | undefined, list: boolean): ShowResult {
  const failure = ctx.store.nodes.get(node.id)?.last_failure;
  const failureLog = failure?.log && ctx.store.cas.has(failure.log as Sha256) ? (failure.log as Sha256) : null;
  if (output === 'log') {
    const log = found?.record.log ?? failureLog;
    // A node that failed before it wrote a log (an exception in the step) still has its failure.
    if (!log && failure && !found)
      return {
        ok: true,
        kind: 'bytes',
        node: node.id,
        output: 'log',
        digest: '',
        bytes: Buffer.from(`${failure.message}\n`),
        note: `${node.id} failed (${failure.at}) before it wrote a log: this is its failure`,
      };
    if (!log)
      return {
        ok: false,
        code: 'not-built',
        message: `${node.id} has no log in the store`,
        hint: found ? 'the node wrote nothing to its log' : `run 'pairbench run ${node.id}' first`,
      };
    const note = found?.record.log ? found.note : `the log of ${node.id}'s last failure (${failure!.at}): ${failure!.message.split('\n')[0]}`;
    return { ok: true, kind: 'bytes', node: node.id, output: 'log', digest: log, bytes: ctx.store.cas.read(log), note };
  }
  if (!found) {
    return failureLog
      ? {
          ok: false,
          code: 'not-built',
          message: `${node.id} failed (${failure!.at}): ${failure!.message.split('\n')[0]}`,
          hint: `'pairbench show ${node.id} log' prints its log`,
        }
      : { ok: false, code: 'not-built', message: `${node.id} has not been built by this config`, hint: `run 'pairbench run ${node.id}' first` };
  }
  const { record, note } = found;
  if (output === undefined) return { ok: true, kind: 'list', node: node.id, output: null, entries: listRecord(node, record.outputs, record.log), note };
  const entry = resolve(ctx, record.outputs, output);
  if (!entry) {
    const names = [...Object.keys(record.outputs), ...(record.log ? ['log'] : [])];
    return {
      ok: false,
      code: 'no-such-output',
      message: `${node.id} has no output "${output}"`,
      hint: `its outputs: ${names.join(', ') || 'none'} (a path inside a directory output works too, e.g. ${names[0] ?? 'tree'}/...)`,
    };
  }
  if (entry.type === 'dir') {
    const listing = ctx.store.cas.readTree(entry.digest).entries.map(listTreeEntry);
    return { ok: true, kind: 'list', node: node.id, output, entries: listing, note };
  }
  if (entry.type === 'symlink') return { ok: true, kind: 'bytes', node: node.id, output, digest: '', bytes: Buffer.from(`-> ${entry.target}\n`), note };
  if (list) return { ok: true, kind: 'list', node: node.id, output, entries: [listTreeEntry({ name: output.split('/').pop()!, ...entry })], note };
  return { ok: true, kind: 'bytes', node: node.id, output, digest: entry.digest, bytes: ctx.store.cas.read(entry.digest), note };
}

function listRecord(node: GraphNode, outputs: OutputManifest, log: Sha256 | null): ListedEntry[] {
  const declared: Readonly<Record<string, string>> = {
    ...describeOutputs(node.kind.outputs(node.step)),
    [EARLIER_TRIES]: 'the earlier tries of this node (infrastructure faults, kept when it was retried)',
  };
  const rows: ListedEntry[] = Object.entries(outputs).map(([name, e]) => ({
    name,
    type: e.type,
    size: e.size,
    digest: e.digest,
    ...(declared[name] ? { about: declared[name] } : {}),
  }));
  if (log) rows.push({ name: 'log', type: 'log', size: null, digest: log, about: 'what the node printed while it ran' });
  return rows;
}

function listTreeEntry(e: TreeEntry): ListedEntry {
  return e.type === 'symlink' ? { name: e.name, type: 'symlink', size: null, digest: null } : { name: e.name, type: e.type, size: e.size, digest: e.digest };
}

/** An output by name, or a path inside a directory output (`tree/src/add.mjs`). */
function resolve(ctx: EngineContext, outputs: OutputManifest, path: string): OutputEntry | Extract<TreeEntry, { type: 'symlink' }> | null {
  const parts = path.split('/').filter(Boolean);
  // Output names may themselves hold slashes: take the longest that matches.
  for (let i = parts.length; i > 0; i--) {
    const top = outputs[parts.slice(0, i).join('/')];
    if (!top) continue;
    let entry: OutputEntry | TreeEntry = top;
    for (const name of parts.slice(i)) {
      if (entry.type !== 'dir') return null;
      const next: TreeEntry | undefined = ctx.store.cas.readTree(entry.digest).entries.find((e) => e.name === name);
      if (!next) return null;
      entry = next;
    }
    return entry;
  }
  return null;
}

export function formatListing(r: Extract<ShowResult, { kind: 'list' }>): string {
  const width = Math.max(4, ...r.entries.map((e) => e.name.length));
  const lines = r.entries.map(
    (e) =>
      `${e.name.padEnd(width)}  ${e.type.padEnd(7)}  ${e.size === null ? '' : `${e.size} bytes`}${e.digest ? `  ${e.digest.slice(0, 12)}` : ''}${e.about ? `  (${e.about})` : ''}`,
  );
  return [`${r.node}${r.output ? ` ${r.output}/` : ''}:`, ...lines.map((l) => `  ${l.trimEnd()}`)].join('\n');
}
