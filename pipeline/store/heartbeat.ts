import type { Worker } from 'node:worker_threads';
import { lazyRequire } from '../lazy-require.js';

// Loaded when a lock is first held (a plan holds none): worker_threads costs ~2 ms of start-up.
const workerThreads = lazyRequire<typeof import('node:worker_threads')>('node:worker_threads');

/**
 * Lock heartbeats on a thread of their own: every few seconds the mtime of each held
 * lock file is refreshed, whatever the main thread is doing. A long synchronous
 * stretch there (hashing a huge workspace) cannot make a live lock look stale, so
 * another run never takes it over and repeats the work.
 */
const SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { utimesSync } = require('node:fs');
const held = new Set();
parentPort.on('message', (m) => (m.add ? held.add(m.add) : held.delete(m.remove)));
setInterval(() => {
  const now = new Date();
  for (const p of held) {
    try { utimesSync(p, now, now); } catch { /* removed under us: nothing to refresh */ }
  }
}, workerData.everyMs);
`;

let worker: Worker | undefined;
let count = 0;

function thread(everyMs: number): Worker {
  if (!worker) {
    worker = new (workerThreads().Worker)(SOURCE, { eval: true, workerData: { everyMs } });
    worker.on('error', () => (worker = undefined));
  }
  return worker;
}

/** Starts refreshing `path` every `everyMs`; the returned function stops it. */
export function heartbeat(path: string, everyMs: number): () => void {
  const w = thread(everyMs);
  w.postMessage({ add: path });
  if (count++ === 0) w.ref();
  let stopped = false;
  return () => {
    if (stopped) return;
    stopped = true;
    w.postMessage({ remove: path });
    // Nothing held: the thread must not keep the process alive.
    if (--count === 0) w.unref();
  };
}
