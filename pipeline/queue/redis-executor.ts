/**
 * The coordinator side of distributed execution: each node that must run becomes a job on
 * its kind's BullMQ queue (job id = the node's action key, so a node is never enqueued
 * twice), prioritised by its place in the run's order; a worker executes it and uploads
 * the result to the remote cache, where the coordinator reads it.
 */
import { Queue, QueueEvents } from 'bullmq';
import type { EngineEvent } from '../events.js';
import type { NodeExecutor, NodeKey, NodeState } from '../engine.js';
import { parseStepFailure, type StepFailure } from '../step-failure.js';
import { readThrough, writeBack } from '../caching/remote-tier.js';
import type { ActionRecord } from '../store/action-cache.js';
import type { RemoteCache } from '../store/remote-cache.js';
import type { Store } from '../store/store.js';
import type { GraphNode } from '../step-kind.js';
import { errorMessage } from '../result.js';
import { connectionOf, queueName, type JobData, type JobResult, type RedisTarget } from './redis-connection.js';

export class RedisExecutor implements NodeExecutor {
  private readonly queues = new Map<string, { queue: Queue; events: QueueEvents }>();

  constructor(
    private readonly target: RedisTarget,
    private readonly store: Store,
    private readonly remote: RemoteCache,
    /** Per-kind limits for the whole fleet (config concurrency.kinds). */
    private readonly kindLimits: Readonly<Record<string, number>>,
    /** Node id -> its place in the run's order (the preregistered interleaving for attempts). */
    private readonly priority: ReadonlyMap<string, number>,
  ) {}

  private async queueFor(kind: string): Promise<{ queue: Queue; events: QueueEvents }> {
    let q = this.queues.get(kind);
    if (!q) {
      const connection = connectionOf(this.target);
      q = { queue: new Queue(queueName(kind), { connection }), events: new QueueEvents(queueName(kind), { connection }) };
      this.queues.set(kind, q);
      await q.events.waitUntilReady();
      const limit = this.kindLimits[kind];
      if (limit) await q.queue.setGlobalConcurrency(limit);
    }
    return q;
  }

  async execute(node: GraphNode, key: NodeKey, records: ReadonlyMap<string, ActionRecord>, emit: (e: EngineEvent) => void): Promise<NodeState> {
    // What the worker reads must be where it can find it: every upstream record and its blobs.
    for (const u of node.upstream) {
      const r = records.get(u.id);
      if (r) await writeBack(this.store, this.remote, r);
    }
    if (!this.remote.active)
      return {
        status: 'failed',
        failure: { reason: 'infra', message: "the remote cache is unavailable: a worker could neither read this node's inputs nor return its result" },
      };
    const { queue, events } = await this.queueFor(node.kind.name);
    const data: JobData = { node: node.id, key: key.key, upstream: Object.fromEntries(node.upstream.map((u) => [u.id, records.get(u.id)!.key])) };
    try {
      // A failed job of this key from an earlier run is retried, not returned again.
      const earlier = await queue.getJob(key.key);
      if (earlier && (await earlier.isFailed())) await earlier.remove();
      const job = await queue.add(node.id, data, {
        jobId: key.key,
        priority: Math.min(this.priority.get(node.id) ?? 1, 2_097_152),
        removeOnComplete: { age: 24 * 3600 },
        removeOnFail: { age: 24 * 3600 },
      });
      emit({ type: 'running', node: node.id });
      const started = Date.now();
      const result = (await job.waitUntilFinished(events)) as JobResult;
      if (result.status === 'failed') {
        // The worker's failure, with its reason's data, if it is one; a worker that sent something else failed in a way of its own.
        const sent = parseStepFailure(result.failure as unknown);
        const failure: StepFailure = sent.ok
          ? { ...sent.value, message: `${sent.value.message} (on ${result.worker})` }
          : { reason: 'internal', message: `${result.worker} failed this node but its answer is not a failure (${sent.error})` };
        emit({ type: 'failed', node: node.id, failure, logTail: '' });
        return { status: 'failed', failure };
      }
      const record =
        this.store.actions.get(key.key).status === 'hit'
          ? (this.store.actions.get(key.key) as { record: ActionRecord }).record
          : await readThrough(this.store, this.remote, key.key);
      if (!record) {
        const failure = {
          reason: 'store-error' as const,
          message: `${result.worker} built ${node.id}, but the remote cache does not return its record: check the workers' cache settings (same remote, same signing key)`,
        };
        emit({ type: 'failed', node: node.id, failure, logTail: '' });
        return { status: 'failed', failure };
      }
      emit({ type: 'done', node: node.id, key: key.key, durationMs: Date.now() - started, recorded: true, worker: result.worker });
      return { status: 'executed', record };
    } catch (e) {
      const failure = { reason: 'infra' as const, message: `the queue failed this node: ${errorMessage(e)}` };
      emit({ type: 'failed', node: node.id, failure, logTail: '' });
      return { status: 'failed', failure };
    }
  }

  async close(): Promise<void> {
    for (const { queue, events } of this.queues.values()) {
      await events.close();
      await queue.close();
    }
  }
}
