/** `pairbench worker`: executes queued nodes for a coordinator (`run --executor redis://...`) until stopped. */
import { printJsonLine } from './json-output.js';
import type { EngineContext } from '../pipeline/engine.js';
import type { ResolvedInput } from '../pipeline/inputs.js';
import { parseRedisUrl } from '../pipeline/queue/redis-connection.js';
import { err, ok, type Result } from '../pipeline/result.js';
import type { GraphNode } from '../pipeline/step-kind.js';
import type { RemoteCache } from '../pipeline/store/remote-cache.js';
import type { RedisExecutor } from '../pipeline/queue/redis-executor.js';
import type { CliIO } from './command-context.js';
import { remoteCacheFor } from './remote.js';
import { EXIT, usageError } from './command.js';

/** The coordinator's executor: `--executor redis://HOST:PORT/DB`, which needs the remote cache (outputs travel through it). */
export async function queueExecutor(
  url: string,
  ctx: EngineContext,
  remote: RemoteCache | undefined,
  nodes: readonly GraphNode[],
): Promise<Result<RedisExecutor, string>> {
  const target = parseRedisUrl(url);
  if (!target.ok) return target;
  if (!remote)
    return err('--executor needs a remote cache (cache.remote or --remote-cache URL): workers read their inputs from it and return their results through it');
  const { RedisExecutor } = await import('../pipeline/queue/redis-executor.js');
  const priority = new Map(nodes.map((n, i) => [n.id, i + 1]));
  return ok(new RedisExecutor(target.value, ctx.store, remote, ctx.config.concurrency.kinds, priority));
}

export async function runWorker(
  io: CliIO,
  json: boolean,
  ctx: EngineContext,
  inputs: ReadonlyMap<string, ResolvedInput[]>,
  flags: { redis?: string | undefined; concurrency?: string | undefined; remoteCache?: string | undefined },
): Promise<number> {
  const usage = (message: string) => usageError(io, json, 'worker', message);
  if (!flags.redis) return usage('--redis redis://HOST:PORT/DB is required (the queue the coordinator fills)');
  const target = parseRedisUrl(flags.redis);
  if (!target.ok) return usage(target.error);
  const concurrency = flags.concurrency === undefined ? 1 : Number(flags.concurrency);
  if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 1024)
    return usage(`--concurrency is a whole number from 1 to 1024, not "${flags.concurrency}"`);
  const warn = (message: string) => io.stderr.write(`warning: ${message}\n`);
  const remote = remoteCacheFor(ctx.config, { url: flags.remoteCache }, io.env, warn);
  if (!remote) return usage('a worker needs the remote cache (cache.remote or --remote-cache URL): it reads inputs from it and uploads results to it');
  if (!remote.ok) return usage(remote.error);
  const { startWorker } = await import('../pipeline/queue/worker.js');
  const worker = await startWorker({
    ctx,
    inputs,
    remote: remote.value,
    target: target.value,
    concurrency,
    hostEnv: io.env,
    reporter: { event: (e) => (e.type === 'warning' ? warn(e.message) : undefined) },
    ...(io.env['PAIRBENCH_WORKER_LOCK_MS'] ? { lockMs: Number(io.env['PAIRBENCH_WORKER_LOCK_MS']) } : {}),
    onJob: ({ node, key, result, ms }) => {
      if (json)
        printJsonLine(io.stdout, {
          node,
          key,
          status: result.status,
          worker: result.worker,
          duration_ms: ms,
          ...(result.failure ? { failure: result.failure } : {}),
        });
      else
        io.stdout.write(
          `${result.status === 'executed' ? 'done  ' : 'FAILED'} ${node} (${(ms / 1000).toFixed(2)} s)${result.failure ? `: ${result.failure.message}` : ''}\n`,
        );
    },
  });
  if (!json) io.stdout.write(`worker ${worker.name} on ${flags.redis}: ${concurrency} at a time; Ctrl-C to stop\n`);
  await new Promise<void>((resolve) => {
    const stop = () => resolve();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  await worker.close();
  return EXIT.ok; // stopped on request: the jobs it held were finished or handed back
}
