/**
 * A worker: pulls jobs from every kind's queue, reads the node's upstream records from the
 * remote cache, checks that it computes the coordinator's key (same config, same inputs),
 * executes the node here and uploads the result. A worker that dies mid-job holds its job
 * only until its lock expires: BullMQ marks the job stalled and another worker runs it.
 */
import { hostname } from 'node:os';
import { Worker, type Job } from 'bullmq';
import pLimit from 'p-limit';
import type { HostEnv, GraphNode, StepFailure } from '../step-kind.js';
import { computeKey, executeHere, type EngineContext } from '../engine.js';
import { lookup } from '../caching/local-cache.js';
import { readThrough } from '../caching/remote-tier.js';
import type { Reporter } from '../events.js';
import type { ResolvedInput } from '../inputs.js';
import { errorMessage } from '../result.js';
import type { ActionRecord } from '../store/action-cache.js';
import type { CacheKey } from '../digest.js';
import type { RemoteCache } from '../store/remote-cache.js';
import { connectionOf, queueName, type JobData, type JobResult, type RedisTarget } from './redis-connection.js';

export interface WorkerOptions {
  ctx: EngineContext;
  inputs: ReadonlyMap<string, ResolvedInput[]>;
  remote: RemoteCache;
  target: RedisTarget;
  concurrency: number;
  hostEnv: HostEnv;
  reporter: Reporter;
  /** How long a job's lock lasts without renewal: a dead worker's job is taken over after about this long. */
  lockMs?: number;
  /** Called when a job ends (the CLI prints it). */
  onJob?(job: { node: string; key: string; result: JobResult; ms: number }): void;
}

export interface RunningWorker {
  name: string;
  close(): Promise<void>;
}

export async function startWorker(o: WorkerOptions): Promise<RunningWorker> {
  const name = `${hostname()}:${process.pid}`;
  // A worker killed here before left its work directories: they go before this one takes jobs.
  const reaped = o.ctx.store.reapDeadTemp();
  if (reaped.length)
    o.reporter.event({
      type: 'warning',
      message: `removed ${reaped.length} work director${reaped.length === 1 ? 'y' : 'ies'} of dead processes from ${o.ctx.store.tmpDir}`,
    });
  const byId = new Map<string, GraphNode>(o.ctx.graph.nodes.map((n) => [n.id, n]));
  const kinds = [...new Set(o.ctx.graph.nodes.map((n) => n.kind.name))];

  const process1 = async (job: Job<JobData>): Promise<JobResult> => {
    const started = Date.now();
    const done = (result: JobResult) => (o.onJob?.({ node: job.data.node, key: job.data.key, result, ms: Date.now() - started }), result);
    const fail = (failure: StepFailure) => done({ status: 'failed', worker: name, failure });
    const node = byId.get(job.data.node);
    if (!node) return fail({ reason: 'refused', message: `this worker's config has no node ${job.data.node}: start workers with the coordinator's config` });
    const records = new Map<string, ActionRecord>();
    for (const u of node.upstream) {
      const key = job.data.upstream[u.id] as CacheKey | undefined;
      const local = key ? lookup(o.ctx.store, key) : undefined;
      const record = local?.status === 'hit' ? local.record : key ? await readThrough(o.ctx.store, o.remote, key) : undefined;
      if (!record) return fail({ reason: 'store-error', message: `upstream ${u.id} (${key?.slice(0, 12) ?? 'no key'}) is not in the remote cache` });
      records.set(u.id, record);
    }
    const key = computeKey(node, o.inputs.get(node.id)!, records, o.hostEnv);
    if (!key.ok) return fail(key.error);
    if (key.value.key !== job.data.key) {
      return fail({
        reason: 'refused',
        message: `this worker computes key ${key.value.key.slice(0, 12)} for ${node.id}, the coordinator ${job.data.key.slice(0, 12)}: its config or input files differ (run workers on the same commit of the project)`,
      });
    }
    const state = await executeHere(o.ctx, node, key.value, o.inputs.get(node.id)!, records, { reporter: o.reporter, hostEnv: o.hostEnv, remote: o.remote });
    if (state.status === 'failed') return fail(state.failure);
    if (state.status === 'skipped') return fail({ reason: 'internal', message: state.because });
    return done({ status: 'executed', worker: name });
  };

  // --concurrency bounds this worker's jobs across every kind's queue.
  const slots = pLimit(o.concurrency);
  const connection = connectionOf(o.target);
  const lockDuration = o.lockMs ?? 10_000;
  const workers = kinds.map(
    (kind) =>
      new Worker<JobData, JobResult>(
        queueName(kind),
        async (job) => {
          try {
            return await slots(() => process1(job));
          } catch (e) {
            return { status: 'failed', worker: name, failure: { reason: 'internal', message: errorMessage(e) } };
          }
        },
        { connection, concurrency: o.concurrency, lockDuration, stalledInterval: Math.max(1000, Math.floor(lockDuration / 2)), maxStalledCount: 2 },
      ),
  );
  await Promise.all(workers.map((w) => w.waitUntilReady()));
  return {
    name,
    close: async () => {
      await Promise.all(workers.map((w) => w.close()));
    },
  };
}
