// generate's candidate loop: checked several at once, the answer is the one a loop checking one
// at a time gives (the first `count` valid candidates in seeded order, and the drops before them).
import { describe, expect, it } from 'vitest';
import { firstValid } from '../generators/common.js';
import { seededRng } from '../stats/rng.js';

type R = { ok: true; value: number } | { ok: false; error: string };

function sequential(valid: boolean[], count: number): { accepted: number[]; dropped: string[] } {
  const accepted: number[] = [];
  const dropped: string[] = [];
  for (const [i, v] of valid.entries()) {
    if (accepted.length >= count) break;
    if (v) accepted.push(i);
    else dropped.push(`c${i}`);
  }
  return { accepted, dropped };
}

describe('firstValid', () => {
  it('checked up to N at once, ending in any order, gives what one at a time gives; never more than N run at once', async () => {
    const random = seededRng(7).uniform;
    for (let trial = 0; trial < 300; trial++) {
      const n = 1 + Math.floor(random() * 12);
      const valid = Array.from({ length: n }, () => random() < 0.5);
      const count = 1 + Math.floor(random() * 4);
      const parallel = 1 + Math.floor(random() * 4);
      const pending: { i: number; end: () => void }[] = [];
      let running = 0;
      let most = 0;
      const evaluate = (_c: number, i: number) =>
        new Promise<R>((resolve) => {
          most = Math.max(most, ++running);
          pending.push({ i, end: () => (running--, resolve(valid[i] ? { ok: true, value: i } : { ok: false, error: 'no' })) });
        });
      const lines: string[] = [];
      let finished = false;
      const result = firstValid(
        [...valid.keys()],
        count,
        (c) => `c${c}`,
        evaluate,
        (l) => lines.push(l),
        parallel,
      ).finally(() => (finished = true));
      // End the running candidates in a random order, one at a time, until the loop returns.
      for (let steps = 0; !finished && steps < 1000; steps++) {
        await new Promise((r) => setImmediate(r));
        if (pending.length) pending.splice(Math.floor(random() * pending.length), 1)[0]!.end();
      }
      const got = await result;
      const want = sequential(valid, count);
      expect({ accepted: got.accepted, dropped: got.dropped.map((d) => d.candidate) }, `trial ${trial}: ${JSON.stringify({ valid, count, parallel })}`).toEqual(
        want,
      );
      expect(most).toBeLessThanOrEqual(parallel);
      if (n > 1) expect(most).toBe(Math.min(parallel, n)); // they do run at once
      expect(running).toBe(0); // nothing is left running when it returns
      // Every candidate returned was said to be accepted as it ended (one past them may be too: it ended first).
      const said = new Set(lines.filter((l) => l.startsWith('accepted ')).map((l) => Number(/^accepted c(\d+) /.exec(l)![1])));
      for (const i of got.accepted) expect(said.has(i), `trial ${trial}: c${i}`).toBe(true);
      // Every end is logged with its time, the time in all and (while more are needed) the time left.
      for (const l of lines.filter((x) => /^(accepted|dropped|not needed:) /.test(x)))
        expect(l).toMatch(/\(.*\S+; \S+ in all(; at most \S+ for the \d+ left)?\)$/);
    }
  });
});
