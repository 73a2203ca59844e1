/**
 * Which families each look of a sequential cohort covers. Apart from the statistics
 * (sequential.ts) so that building a graph, which needs the looks, loads none of them.
 */
import type { StoppingSpec } from './types.js';

/** Families complete at each of `looks` looks over `families` families: the last look has them all. */
export function plannedFamilies(families: number, looks: number): number[] {
  const out: number[] = [];
  for (let k = 1; k <= looks; k++) out.push(Math.max(out[out.length - 1] ?? 0, Math.round((k * families) / looks)));
  return out;
}

/** The families of each look, from the families in their preregistered order. */
export function lookSchedule(orderedFamilies: readonly string[], stopping: StoppingSpec): string[][] {
  const looks = stopping.rule === 'confidence-sequence' ? orderedFamilies.length : Math.min(stopping.looks ?? 1, orderedFamilies.length);
  const ends = plannedFamilies(orderedFamilies.length, looks);
  return ends.map((end, k) => orderedFamilies.slice(k === 0 ? 0 : ends[k - 1]!, end)).filter((g) => g.length > 0);
}
