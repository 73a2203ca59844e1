import type { Verdict } from './types.js';

/** Every verdict a comparison can reach, at run time (what `run --fail-on` accepts). */
export const VERDICTS = ['positive', 'negative', 'within-noise', 'insufficient-n', 'unisolated', 'refused', 'invalid'] as const satisfies readonly Verdict[];

// A verdict added to the type but not to the list above fails to compile here.
type Unlisted = Exclude<Verdict, (typeof VERDICTS)[number]>;
const complete: [Unlisted] extends [never] ? true : Unlisted = true;
void complete;

export function isVerdict(v: string): v is Verdict {
  return (VERDICTS as readonly string[]).includes(v);
}

/** What is wrong with `--fail-on`'s value (a comma-separated list of verdicts), if anything. */
export function failOnProblem(value: string): string | undefined {
  const given = value.split(',').map((v) => v.trim());
  const unknown = given.filter((v) => v && !isVerdict(v));
  if (!given.some(Boolean)) return `--fail-on takes a comma-separated list of verdicts (${VERDICTS.join(', ')})`;
  return unknown.length ? `--fail-on: ${unknown.map((v) => `"${v}"`).join(', ')} is not a verdict; the verdicts are ${VERDICTS.join(', ')}` : undefined;
}

export function parseFailOn(value: string): Set<Verdict> {
  return new Set(
    value
      .split(',')
      .map((v) => v.trim())
      .filter(isVerdict),
  );
}
