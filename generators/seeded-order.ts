import { sha256 } from '../pipeline/digest.js';

/** Items sorted by sha256(`${seed}:${id}`) (ties by id): a stable shuffle that needs no random source. */
export function seededOrder<T>(seed: number, items: readonly T[], idOf: (item: T) => string): T[] {
  return items
    .map((item) => ({ item, id: idOf(item), key: sha256(`${seed}:${idOf(item)}`) as string }))
    .sort((a, b) => compare(a.key, b.key) || compare(a.id, b.id))
    .map((x) => x.item);
}

export function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The first `n` hex digits of sha256(text): a short, stable suffix for ids. */
export function shortHash(text: string, n = 8): string {
  return sha256(text).slice(0, n);
}
