/** Pairs a control arm's attempts with a treatment arm's: same task, same rep. */
import type { AttemptRecord, PairCounts } from './types.js';

export interface PairedTask {
  task: string;
  family: string;
  category: string;
  /** aligned by index: control[i] and treatment[i] are one valid pair (both accepted) */
  control: AttemptRecord[];
  treatment: AttemptRecord[];
}

export interface Pairing {
  counts: PairCounts;
  /** tasks with at least one valid pair, sorted by task id (the bootstrap's order) */
  tasks: PairedTask[];
  /** records that repeat an (arm, task, rep) already seen: the first one is used */
  duplicates: number;
  /** (task, rep) pairs present in both arms with at least one side excluded */
  excludedPairs: { task: string; family: string; rep: number }[];
  /** tasks that appear in either arm but have no valid pair: in no estimate, named in the report */
  lostTasks: string[];
}

const keyOf = (a: AttemptRecord): string => `${a.task}\u0000${a.rep}`;

function index(attempts: readonly AttemptRecord[]): { byKey: Map<string, AttemptRecord>; duplicates: number } {
  const byKey = new Map<string, AttemptRecord>();
  let duplicates = 0;
  for (const a of attempts) {
    const k = keyOf(a);
    if (byKey.has(k)) duplicates++;
    else byKey.set(k, a);
  }
  return { byKey, duplicates };
}

export function pairAttempts(control: readonly AttemptRecord[], treatment: readonly AttemptRecord[]): Pairing {
  const c = index(control);
  const t = index(treatment);
  const keys = [...new Set([...c.byKey.keys(), ...t.byKey.keys()])];
  const counts: PairCounts = { total: keys.length, valid: 0, excluded: 0, unmatched: 0 };
  const byTask = new Map<string, PairedTask>();
  const excludedPairs: Pairing['excludedPairs'] = [];
  const sortedKeys = keys
    .map((k) => ({ k, a: (c.byKey.get(k) ?? t.byKey.get(k))! }))
    .sort((x, y) => (x.a.task < y.a.task ? -1 : x.a.task > y.a.task ? 1 : x.a.rep - y.a.rep));
  for (const { k } of sortedKeys) {
    const ca = c.byKey.get(k);
    const ta = t.byKey.get(k);
    if (!ca || !ta) {
      counts.unmatched++;
      continue;
    }
    if (ca.admission !== 'accepted' || ta.admission !== 'accepted') {
      counts.excluded++;
      excludedPairs.push({ task: ca.task, family: ca.family, rep: ca.rep });
      continue;
    }
    counts.valid++;
    let row = byTask.get(ca.task);
    if (!row) {
      row = { task: ca.task, family: ca.family, category: ca.category, control: [], treatment: [] };
      byTask.set(ca.task, row);
    }
    row.control.push(ca);
    row.treatment.push(ta);
  }
  const everyTask = new Set([...control, ...treatment].map((a) => a.task));
  const lostTasks = [...everyTask].filter((task) => !byTask.has(task)).sort();
  return { counts, tasks: [...byTask.values()], duplicates: c.duplicates + t.duplicates, excludedPairs, lostTasks };
}
