import type { GlobOptions } from 'tinyglobby';
import { lazyRequire } from './lazy-require.js';

/** tinyglobby, loaded on the first pattern (a config without globs never pays for it). */
const load = lazyRequire<typeof import('tinyglobby')>('tinyglobby');

export function globSync(pattern: string, options: Omit<GlobOptions, 'patterns'>): string[] {
  return load().globSync(pattern, options);
}

export function isDynamicPattern(pattern: string): boolean {
  return load().isDynamicPattern(pattern);
}
