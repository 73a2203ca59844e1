/**
 * Effects: writes a memoized command makes that a replay must make again (a use of the store
 * logged for gc), each declared by its owner where it writes (pipeline/hooks.ts) and made again at replay
 * by the performer its owner registers for its kind (cli/memo-entry.ts): the memo knows no store.
 * A performer first checks it can (it says why not: the replay is then a miss and the command
 * runs in full), then writes; an effect whose kind has no performer is a miss.
 */
import type { Effect } from '../hooks.js';

/** Makes an effect again: undefined once done, else why it cannot be made here (nothing written). */
export type EffectPerformers = Readonly<Record<string, (data: unknown) => string | undefined>>;

/** Makes every effect again, in order; why one could not be made, or undefined when all were. */
export function performEffects(effects: readonly Effect[], performers: EffectPerformers): string | undefined {
  for (const effect of effects) if (!performers[effect.kind]) return `no performer for a ${effect.kind} effect`;
  for (const effect of effects) {
    let why: string | undefined;
    try {
      why = performers[effect.kind]!(effect.data);
    } catch (e) {
      why = (e as Error).message;
    }
    if (why) return `${effect.kind}: ${why}`;
  }
  return undefined;
}
