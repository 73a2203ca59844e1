import type { execa as Execa } from 'execa';

/**
 * execa, loaded on first use: importing it costs ~100 ms, which a plan or a no-op run
 * (that spawns nothing) should not pay.
 */
let loaded: typeof Execa | undefined;

export async function loadExeca(): Promise<typeof Execa> {
  loaded ??= (await import('execa')).execa;
  return loaded;
}
