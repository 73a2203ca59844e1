/**
 * A task dimension drawn from its source (`task: {from: tasks, select: ...}`): every id, the ids
 * matching globs, or a seeded sample. Drawn from the sorted ids, so the same source and
 * selection give the same list on every machine; returned sorted.
 */
import picomatch from 'picomatch';
import type { Diagnostic } from '../pipeline/diagnostic.js';
import { err, ok, type Result } from '../pipeline/result.js';
import { seededRng } from '../stats/rng.js';

export type TaskSelection = 'all' | string[] | { sample: number; seed: number; match?: string[] };

export function selectIds(ids: readonly string[], select: TaskSelection, sourceName: string): Result<string[], Diagnostic[]> {
  const sorted = [...ids].sort();
  if (select === 'all') return ok(sorted);
  const matching = (globs: readonly string[]) => {
    const is = picomatch([...globs]);
    return sorted.filter((id) => is(id));
  };
  if (Array.isArray(select)) return ok(matching(select));
  const pool = select.match ? matching(select.match) : sorted;
  // A glob that matches nothing is the mistake to name, not the sample's size.
  if (select.match && !pool.length)
    return err([
      {
        message: `select.match (${select.match.join(', ')}) matches none of the ${sorted.length} task${sorted.length === 1 ? '' : 's'} of ${sourceName}`,
        hint: sorted.length
          ? `a glob is matched against whole ids, such as ${sorted
              .slice(0, 3)
              .map((id) => JSON.stringify(id))
              .join(', ')}: fix the glob (a prefix needs a trailing *)`
          : `${sourceName} has no task: check its path`,
      },
    ]);
  if (select.sample > pool.length)
    return err([
      {
        message: `select.sample is ${select.sample}, but ${sourceName} has ${pool.length} task${pool.length === 1 ? '' : 's'}${select.match ? ' matching select.match' : ''}`,
        hint: `sample at most ${pool.length}, or select: all`,
      },
    ]);
  // A partial Fisher-Yates shuffle of the sorted ids with the seeded generator: the first N drawn.
  const rng = seededRng(select.seed);
  const a = [...pool];
  for (let i = 0; i < select.sample; i++) {
    const j = i + rng.int(a.length - i);
    [a[i], a[j]] = [a[j]!, a[i]!];
  }
  return ok(a.slice(0, select.sample).sort());
}
