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

/** A gate of the head against the base (a pull request's check; stats/head-vs-base.ts). */
export type HeadVsBaseGate = 'regression' | 'new-harm' | 'not-noninferior';

const GATES: Record<HeadVsBaseGate, string> = {
  regression: "the head's effect is significantly below the base's (one-sided, at the cohort's alpha)",
  'new-harm': 'more tasks are hurt in every rep by the head, and not by the base, than no change gives (at alpha)',
  'not-noninferior': 'the head is not shown within the preregistered margin of the base',
};

export const HEAD_VS_BASE_GATES = Object.keys(GATES) as readonly HeadVsBaseGate[];

export function isHeadVsBaseGate(v: string): v is HeadVsBaseGate {
  return Object.hasOwn(GATES, v);
}

/** What a gate means, in words (the comment and the help say it). */
export const gateMeaning = (g: HeadVsBaseGate) => GATES[g];

/** What a check can fail on: the head's own verdicts, and the gates of the head against the base. */
export type FailOn = Verdict | HeadVsBaseGate;

/** The check when the config preregisters none. */
export const DEFAULT_FAIL_ON: readonly FailOn[] = ['negative', 'unisolated', 'invalid', 'regression', 'new-harm'];

/** The items of `--fail-on`'s comma-separated value, blanks left out. */
const items = (value: string) =>
  value
    .split(',')
    .map((v) => v.trim())
    .filter(Boolean);

/** What is wrong with `--fail-on`'s value (a comma-separated list of verdicts and gates), if anything. */
export function failOnProblem(value: string): string | undefined {
  const given = items(value);
  const known = `the verdicts are ${VERDICTS.join(', ')}; the gates of a pull request against its base are ${HEAD_VS_BASE_GATES.join(', ')}`;
  if (!given.length) return `--fail-on takes a comma-separated list of verdicts and gates (${known})`;
  const unknown = given.filter((v) => !isVerdict(v) && !isHeadVsBaseGate(v));
  return unknown.length ? `--fail-on: ${unknown.map((v) => `"${v}"`).join(', ')} is not a verdict or a gate; ${known}` : undefined;
}

/** `--fail-on`'s verdicts (its value already passed failOnProblem); its gates are the base's to judge (parseFailOnGates). */
export function parseFailOn(value: string): Set<Verdict> {
  return new Set(items(value).filter(isVerdict));
}

/** `--fail-on`'s gates of the head against the base. */
export function parseFailOnGates(value: string): Set<HeadVsBaseGate> {
  return new Set(items(value).filter(isHeadVsBaseGate));
}
