/**
 * The hooks a module uses to declare what a watcher of this process cannot see for itself. Today's
 * watcher is the plan memo (pipeline/memo/record.ts), which implements `Watcher` and installs it
 * while it records; a module declares through these functions and knows nothing of the memo
 * (test/module-graph.test.ts: only pipeline/memo and the CLI's memo entry import pipeline/memo/).
 * Undeclared, each thing the watcher cannot see is a doubt, and no memo is saved.
 * - `stampedQuery(owner, inputs, fn)`: a query (a child process) whose answer is a function of
 *   `inputs` (paths: binaries, sysctls under /proc by their content), observed in its place;
 * - `stampedAnswer(stamp, fn, answer)`: the answer is a daemon's state, asked again at replay by
 *   the asker its owner registers for the stamp's kind (cli/memo-entry.ts);
 * - `repeatedEffect(effect, fn)`: a write the command makes and a replay must make again (a use
 *   of the store logged for gc), by the performer its owner registers for its kind;
 * - `unrepeatedEffect(why, fn)`: a write a replay need not make (a mark held only while the
 *   command reads the store, which a replay does not);
 * - `startTimer()`: a duration the command prints: a replay prints its own in its place.
 * A declared query's inner reads are observed; an effect's are not (what an effect reads decides
 * nothing the command prints: printing inside one is a doubt). Other work running meanwhile is
 * not excused. The recorder is bundled apart from the rest of pairbench (it starts first), so the
 * two meet on a global symbol.
 */

/** A question to ask again at replay: its kind names the asker; the question is data (JSON). */
export interface Stamp {
  kind: string;
  question: unknown;
}

/** What to do again at replay: its kind names the performer; the data is JSON. */
export interface Effect {
  kind: string;
  data: unknown;
}

export const MEMO_RECORDER = Symbol.for('pairbench.memo.recorder');

/** How a printed duration is written: "0.55 s" in text, whole milliseconds in JSON. */
export type ElapsedStyle = 'seconds' | 'ms';

/** What watches this process (the plan memo while it records): the other side of each hook. */
export interface Watcher {
  run<T>(owner: string, inputs: readonly string[], fn: () => T): T;
  ask<T>(stamp: Stamp, fn: () => Promise<T>, answer: (value: T) => string): Promise<T>;
  /** `effect` undefined: a replay need not repeat it, for the reason `why`. */
  effect<T>(effect: Effect | undefined, why: string, fn: () => T): T;
  /** The clock, read for a duration only (startTimer). */
  clock(): number;
  /** A duration as printed, marked so that the recorder keeps its place in the output. */
  hole(ms: number, style: ElapsedStyle): string;
}

const recorder = () => (globalThis as Record<symbol, Watcher | undefined>)[MEMO_RECORDER];

export function stampedQuery<T>(owner: string, inputs: readonly string[], fn: () => T): T {
  const r = recorder();
  return r ? r.run(owner, inputs, fn) : fn();
}

export function stampedAnswer<T>(stamp: Stamp, fn: () => Promise<T>, answer: (value: T) => string): Promise<T> {
  const r = recorder();
  return r ? r.ask(stamp, fn, answer) : fn();
}

export function repeatedEffect<T>(effect: Effect, fn: () => T): T {
  const r = recorder();
  return r ? r.effect(effect, effect.kind, fn) : fn();
}

export function unrepeatedEffect<T>(why: string, fn: () => T): T {
  const r = recorder();
  return r ? r.effect(undefined, why, fn) : fn();
}

export function renderElapsed(ms: number, style: ElapsedStyle): string {
  return style === 'seconds' ? `${(ms / 1000).toFixed(2)} s` : String(Math.round(ms));
}

/** A duration the command measured, printable only as itself: its number does not leak into other output. */
export class Elapsed {
  constructor(private readonly ms: number) {}

  /** "0.55 s". */
  seconds(): string {
    return recorder()?.hole(this.ms, 'seconds') ?? renderElapsed(this.ms, 'seconds');
  }

  /** Whole milliseconds, in a JSON output. */
  toJSON(): number | string {
    return recorder()?.hole(this.ms, 'ms') ?? Math.round(this.ms);
  }
}

/** Starts timing something whose duration is printed (a replay prints its own in its place). */
export function startTimer(): { elapsed(): Elapsed } {
  const now = () => recorder()?.clock() ?? Date.now();
  const started = now();
  return { elapsed: () => new Elapsed(now() - started) };
}
