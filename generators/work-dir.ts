import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/*
 * A generator's scratch directory holds a copy of the repository per candidate tree (90 MB on
 * qs): it is removed when the generator returns, and also when the process is interrupted
 * (SIGINT, SIGTERM), after which the signal is raised again so the process ends as it would
 * have (or the caller's own handler runs).
 */
const live = new Set<string>();
const SIGNALS = ['SIGINT', 'SIGTERM'] as const;

function removeAll(): void {
  for (const d of live) rmSync(d, { recursive: true, force: true });
  live.clear();
}

/** Aborted when a signal ends the generator: its test processes are killed (their own process groups outlive it otherwise). */
const interrupted = new AbortController();

export function interruptSignal(): AbortSignal {
  return interrupted.signal;
}

function onSignal(signal: NodeJS.Signals): void {
  interrupted.abort();
  removeAll();
  for (const s of SIGNALS) process.removeListener(s, onSignal);
  process.kill(process.pid, signal);
}

/** A new scratch directory under the temp dir, removed by `dispose()` or on SIGINT/SIGTERM. */
export function scratchDir(prefix: string): { dir: string; dispose(): void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  if (live.size === 0) for (const s of SIGNALS) process.on(s, onSignal);
  live.add(dir);
  return {
    dir,
    dispose() {
      rmSync(dir, { recursive: true, force: true });
      live.delete(dir);
      if (live.size === 0) for (const s of SIGNALS) process.removeListener(s, onSignal);
    },
  };
}
