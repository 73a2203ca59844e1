import { createRequire } from 'node:module';
import type { GlobOptions } from 'tinyglobby';

/** tinyglobby, loaded on the first pattern (a config without globs never pays for it). */
let tinyglobby: typeof import('tinyglobby') | undefined;
const load = () => (tinyglobby ??= createRequire(import.meta.url)('tinyglobby') as typeof import('tinyglobby'));

export function globSync(pattern: string, options: Omit<GlobOptions, 'patterns'>): string[] {
  return load().globSync(pattern, options);
}

export function isDynamicPattern(pattern: string): boolean {
  return load().isDynamicPattern(pattern);
}
