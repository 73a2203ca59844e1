import { canonicalJson } from '../pipeline/canonical-json.js';
import { computeKey, whyMiss, type EngineContext, type PlanEntry } from '../pipeline/engine.js';
import { lookup } from '../pipeline/caching/local-cache.js';
import type { ResolvedInput } from '../pipeline/inputs.js';
import type { KeyPreimage } from '../pipeline/key.js';
import type { GraphNode, HostEnv } from '../pipeline/step-kind.js';
import type { ActionRecord } from '../pipeline/store/action-cache.js';
import type { Sha256 } from '../pipeline/digest.js';

/** What `explain NODE` shows: the node's key inputs, its record, its last failure, and why it would run. */
export function explainNode(
  ctx: EngineContext,
  node: GraphNode,
  entries: PlanEntry[],
  inputs: ReadonlyMap<string, ResolvedInput[]>,
  hostEnv: HostEnv,
): { text: string; json: Record<string, unknown> } {
  const entry = entries.find((e) => e.node === node.id)!;
  const history = ctx.store.nodes.get(node.id);
  // Upstream records as the plan found them, to compute this node's key when they are all cached.
  const records = new Map<string, ActionRecord>();
  for (const e of entries) {
    if (e.status !== 'cached') continue;
    const found = lookup(ctx.store, e.key);
    if (found.status === 'hit') records.set(e.node, found.record);
  }
  const computable = node.upstream.every((u) => records.has(u.id));
  const key = computable ? computeKey(node, inputs.get(node.id)!, records, hostEnv) : undefined;
  const preimage: KeyPreimage | undefined = key?.ok ? key.value.preimage : undefined;
  const record = entry.status === 'cached' ? records.get(node.id) : undefined;

  const json: Record<string, unknown> = {
    node: node.id,
    step: node.step.name,
    kind: `${node.kind.name} v${node.kind.version}`,
    matrix: node.matrix,
    upstream: node.upstream.map((u) => u.id),
    status: entry.status,
    key: key?.ok ? key.value.key : null,
    preimage: preimage ?? null,
    reasons: entry.status === 'run' ? entry.reasons : [],
    record: record
      ? {
          started_at: record.started_at,
          duration_ms: record.duration_ms,
          outputs: record.outputs,
          outputs_digest: record.outputs_digest,
          log: record.log,
          pairbench_version: record.pairbench_version,
        }
      : null,
    last_failure: history?.last_failure ?? null,
    latest_build: history?.latest ?? null,
  };

  const lines = [`node     ${node.id}`, `step     ${node.step.name} (${node.kind.name} v${node.kind.version})`];
  if (Object.keys(node.matrix).length)
    lines.push(
      `matrix   ${Object.entries(node.matrix)
        .map(([k, v]) => `${k}=${v}`)
        .join(' ')}`,
    );
  lines.push(`status   ${entry.status === 'cached' ? 'cached' : 'to run'}`);
  if (entry.status === 'run') for (const r of entry.reasons) lines.push(`         ${r}`);
  if (key?.ok) {
    lines.push(`key      ${key.value.key}`, 'key inputs (the canonical JSON hashed into the key):');
    lines.push(
      ...JSON.stringify(JSON.parse(canonicalJson(preimage)), null, 2)
        .split('\n')
        .map((l) => `  ${l}`),
    );
  } else if (!computable) {
    lines.push('key      not known yet: an upstream node must run first');
  }
  if (record) {
    lines.push(`built    ${record.started_at} in ${(record.duration_ms / 1000).toFixed(2)} s by pairbench ${record.pairbench_version}`);
    lines.push(`outputs  ${record.outputs_digest.slice(0, 12)}`);
    for (const [p, e] of Object.entries(record.outputs)) lines.push(`  ${p}  ${e.type} ${e.digest.slice(0, 12)} ${e.size} bytes`);
    if (record.log) lines.push(`log      blob ${record.log.slice(0, 12)}`);
  }
  if (history?.last_failure) {
    lines.push(`last failure ${history.last_failure.at}: ${history.last_failure.message}`);
    const tail = failureLogTail(ctx, history.last_failure.log);
    if (tail) lines.push(`its log (last ${tail.length} lines; 'pairbench show ${node.id} log' prints all of it):`, ...tail.map((l) => `  ${l}`));
  }
  if (entry.status === 'cached' && history?.latest && history.latest.key !== entry.key && key?.ok) {
    lines.push('differs from the last build:', ...whyMiss(ctx.store, node, key.value).map((r) => `  ${r}`));
  }
  return { text: lines.join('\n'), json };
}

/** The last lines of a failure's log blob, if it is still in the store. */
function failureLogTail(ctx: EngineContext, log: string | undefined, lines = 20): string[] | null {
  if (!log) return null;
  try {
    const text = ctx.store.cas
      .read(log as Sha256)
      .toString('utf8')
      .trimEnd();
    return text ? text.split('\n').slice(-lines) : null;
  } catch {
    return null;
  }
}
