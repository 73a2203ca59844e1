import { CONFIG_ERROR, defineCommand } from '../command.js';

export const workerCommand = defineCommand({
  name: 'worker',
  synopsis: 'worker',
  summary: 'execute nodes a coordinator queues on Redis (run --executor redis://...)',
  usage: 'pairbench worker --redis redis://HOST:PORT/DB [options]',
  about: `Executes the nodes a coordinator ('pairbench run --executor redis://...') queues: for
each job it reads the node's upstream records from the remote cache, checks that it
computes the coordinator's key (the same config and input files: run workers on the
same commit of the project), runs the node in its own store and sandbox, and uploads
the result. A worker that dies holds its job only until its lock expires (10 s;
PAIRBENCH_WORKER_LOCK_MS); then another worker runs it. Stops on SIGINT or SIGTERM.
With --json, one JSON line per finished job.`,
  options: [
    ['redis', 'URL', 'the queue (required)'],
    ['concurrency', 'K', 'jobs at once on this worker, across every kind (default 1)'],
    ['remote-cache', 'URL', 'overrides cache.remote (required one way or the other)'],
  ],
  config: true,
  usesStore: true,
  exits: `0 stopped on request (the jobs it held finished or were handed back); ${CONFIG_ERROR}.`,
  async run({ io, json, values, project }) {
    const { runWorker } = await import('../worker.js');
    return runWorker(io, json, project.ctx, project.inputs, { redis: values.redis, concurrency: values.concurrency, remoteCache: values['remote-cache'] });
  },
});
