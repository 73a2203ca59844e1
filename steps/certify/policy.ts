import type { Finding, FindingClass } from './scan.js';

/** What makes a task fail certification. Part of the certify step's cache key. */
export interface CertifyPolicy {
  /** Finding classes that fail the task; findings of other classes are recorded only. */
  fail_on: FindingClass[];
  /** Benchmark-awareness words added to the default list. */
  words: string[];
  /** How many times the discrimination check runs (verifier fails untouched, passes solved). */
  repeats: number;
}

export const FINDING_CLASSES: readonly FindingClass[] = Object.freeze(['solution-leak', 'verifier-leak', 'benchmark-awareness', 'canary', 'instructions-survived'] as const);

export const DEFAULT_POLICY: CertifyPolicy = Object.freeze({
  fail_on: Object.freeze([...FINDING_CLASSES]) as FindingClass[],
  words: Object.freeze([]) as unknown as string[],
  repeats: 3,
}) as CertifyPolicy;

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function isFindingClass(v: unknown): v is FindingClass {
  return typeof v === 'string' && (FINDING_CLASSES as readonly string[]).includes(v);
}

/**
 * A step's `policy:` mapping merged over DEFAULT_POLICY. The spec has already
 * passed the JSON Schema; anything absent (or of the wrong shape) keeps its
 * default. Lists are deduplicated and sorted so equal policies hash equally.
 */
export function policyFromSpec(spec: unknown): CertifyPolicy {
  const s = isRecord(spec) ? spec : {};
  const failOn = Array.isArray(s['fail_on']) ? s['fail_on'].filter(isFindingClass) : DEFAULT_POLICY.fail_on;
  const words = Array.isArray(s['words']) ? s['words'].filter((w): w is string => typeof w === 'string' && w.trim() !== '') : DEFAULT_POLICY.words;
  const repeats = typeof s['repeats'] === 'number' && Number.isInteger(s['repeats']) && s['repeats'] >= 1 ? s['repeats'] : DEFAULT_POLICY.repeats;
  return {
    fail_on: FINDING_CLASSES.filter((c) => failOn.includes(c)),
    words: [...new Set(words)].sort(),
    repeats,
  };
}

/** The findings that fail certification under `policy`, in their given order. */
export function failingFindings(findings: Finding[], policy: CertifyPolicy): Finding[] {
  const failOn = new Set(policy.fail_on);
  return findings.filter((f) => failOn.has(f.class));
}
