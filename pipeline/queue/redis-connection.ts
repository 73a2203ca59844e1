/** redis://HOST:PORT/DB as BullMQ connection options, and the queue of each step kind. */
import { err, ok, type Result } from '../result.js';
import type { StepFailure } from '../step-failure.js';

export interface RedisTarget {
  host: string;
  port: number;
  db: number;
  password?: string;
}

export function parseRedisUrl(url: string): Result<RedisTarget, string> {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return err(`"${url}" is not a redis URL (redis://HOST:PORT/DB)`);
  }
  if (u.protocol !== 'redis:') return err(`"${url}" is not a redis URL (redis://HOST:PORT/DB)`);
  const db = u.pathname && u.pathname !== '/' ? Number(u.pathname.slice(1)) : 0;
  if (!Number.isInteger(db) || db < 0) return err(`"${url}": the database is a number (redis://HOST:PORT/DB)`);
  return ok({ host: u.hostname || '127.0.0.1', port: u.port ? Number(u.port) : 6379, db, ...(u.password ? { password: decodeURIComponent(u.password) } : {}) });
}

export function connectionOf(t: RedisTarget) {
  // BullMQ's workers block on Redis: no per-request retry limit (its own docs' setting).
  return { host: t.host, port: t.port, db: t.db, ...(t.password ? { password: t.password } : {}), maxRetriesPerRequest: null };
}

/** One queue per step kind, so a kind's concurrency limit holds across the whole fleet (BullMQ global concurrency). */
export const queueName = (kind: string) => `pairbench-${kind}`;

/** What a job carries: the node, the key the coordinator computed, and the keys of the records it reads. */
export interface JobData {
  node: string;
  key: string;
  upstream: Record<string, string>;
}

/** What a worker returns. */
export interface JobResult {
  status: 'executed' | 'failed';
  worker: string;
  /** Sent as JSON through redis: the coordinator checks it (parseStepFailure) before it believes it. */
  failure?: StepFailure;
}
