/** What the benchmarks share: a median, and the execution time each cached node recorded. */
import { join } from 'node:path';
import { Store } from '../pipeline/store/store.js';

export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

/** Node id -> the duration its action record holds, for every record in the project's store. */
export function nodeDurations(projectDir: string): Map<string, number> {
  const store = new Store(join(projectDir, '.pairbench'));
  const out = new Map<string, number>();
  for (const r of store.actions.list()) {
    const found = store.actions.get(r.key);
    if (found.status === 'hit') out.set(found.record.node, found.record.duration_ms);
  }
  return out;
}
