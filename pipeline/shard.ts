/**
 * `run --shard i/N`: N CI jobs sharing a cache split a cohort without a queue. A node
 * that fans out over tasks belongs to the shard its task hashes to (so a task's whole
 * chain, materialize to audit, stays in one job); a node with no task dimension and
 * none upstream (e.g. a context step every task reads) belongs to every shard, which
 * runs it if no cache has it yet; a node that gathers tasks (analyze, export) belongs
 * to no shard: the final run without --shard builds it from the shards' cache hits.
 */
import { sha256 } from './digest.js';
import { withUpstream } from './dag.js';
import type { GraphNode } from './step-kind.js';
import { err, ok, type Result } from './result.js';

export interface Shard {
  index: number;
  count: number;
}

export function parseShard(text: string): Result<Shard, string> {
  const m = /^(\d+)\/(\d+)$/.exec(text.trim());
  const index = m ? Number(m[1]) : NaN;
  const count = m ? Number(m[2]) : NaN;
  if (!m || !(count >= 1) || !(index >= 1) || index > count) return err(`--shard takes i/N with 1 <= i <= N (e.g. --shard 2/3), not "${text}"`);
  return ok({ index, count });
}

/** The shard (1-based) a task belongs to: by its name's digest, the same on every machine. */
export function shardOfTask(task: string, count: number): number {
  return (parseInt(sha256(task).slice(0, 8), 16) % count) + 1;
}

export type Ownership = { owned: true } | { owned: false; because: string };

export function ownership(node: GraphNode, shard: Shard): Ownership {
  const task = node.matrix['task'];
  if (task !== undefined) {
    const s = shardOfTask(task, shard.count);
    return s === shard.index ? { owned: true } : { owned: false, because: `task ${task} belongs to shard ${s}/${shard.count}` };
  }
  const gathers = withUpstream(node.upstream).some((u) => u.matrix['task'] !== undefined);
  return gathers ? { owned: false, because: 'it gathers every task: the final run without --shard builds it' } : { owned: true };
}
