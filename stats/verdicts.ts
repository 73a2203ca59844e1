import type { Verdict } from './types.js';

// Keyed by the type: a verdict added to it and not here (or one here that is not one) fails to compile.
const ALL: Record<Verdict, true> = {
  positive: true,
  negative: true,
  'within-noise': true,
  'insufficient-n': true,
  unisolated: true,
  refused: true,
  invalid: true,
};

/** Every verdict a comparison can reach, at run time (what `run --fail-on` accepts). */
export const VERDICTS = Object.keys(ALL) as readonly Verdict[];

export function isVerdict(v: string): v is Verdict {
  return Object.hasOwn(ALL, v);
}

/** The items of `--fail-on`'s comma-separated value, blanks left out. */
const items = (value: string) =>
  value
    .split(',')
    .map((v) => v.trim())
    .filter(Boolean);

/** What is wrong with `--fail-on`'s value (a comma-separated list of verdicts), if anything. */
export function failOnProblem(value: string): string | undefined {
  const given = items(value);
  if (!given.length) return `--fail-on takes a comma-separated list of verdicts (${VERDICTS.join(', ')})`;
  const unknown = given.filter((v) => !isVerdict(v));
  return unknown.length ? `--fail-on: ${unknown.map((v) => `"${v}"`).join(', ')} is not a verdict; the verdicts are ${VERDICTS.join(', ')}` : undefined;
}

/** `--fail-on`'s verdicts (its value already passed failOnProblem). */
export function parseFailOn(value: string): Set<Verdict> {
  return new Set(items(value).filter(isVerdict));
}
