import picomatch from 'picomatch';
import type { Finding, FindingClass } from './scan.js';

/** A finding a person looked at and accepted: this class, on paths matching this glob, for this reason. */
export interface AllowEntry {
  path: string;
  class: FindingClass;
  /** Only findings on this surface (tree, prompt, treatment:STEP:ARM); absent: any. */
  surface?: string;
  reason: string;
}

/** What makes a task fail certification. Part of the certify step's cache key. */
export interface CertifyPolicy {
  /** Finding classes that fail the task; findings of other classes are recorded only. */
  fail_on: readonly FindingClass[];
  /** Benchmark-awareness words added to the default list. */
  words: readonly string[];
  /** How many times the discrimination check runs (verifier fails untouched, passes solved). */
  repeats: number;
  /** Accepted findings, each with its reason (recorded in the receipt). */
  allow: readonly AllowEntry[];
}

export const FINDING_CLASSES: readonly FindingClass[] = Object.freeze([
  'solution-leak',
  'verifier-leak',
  'benchmark-awareness',
  'canary',
  'instructions-survived',
] as const);

export const DEFAULT_POLICY: Readonly<CertifyPolicy> = Object.freeze({
  fail_on: FINDING_CLASSES,
  words: Object.freeze([]),
  repeats: 3,
  allow: Object.freeze([]),
});

/** Most severe first: what gives the answer away, then what says it is a test, then what only hints. */
const SEVERITY: Record<FindingClass, number> = { 'solution-leak': 0, 'verifier-leak': 1, canary: 2, 'instructions-survived': 3, 'benchmark-awareness': 4 };

/** Findings ordered by severity, then surface, path and line: the one to fix first comes first. */
export function bySeverity(findings: readonly Finding[]): Finding[] {
  return [...findings].sort(
    (a, b) =>
      SEVERITY[a.class] - SEVERITY[b.class] ||
      (a.surface < b.surface ? -1 : a.surface > b.surface ? 1 : 0) ||
      (a.path < b.path ? -1 : a.path > b.path ? 1 : 0) ||
      a.line - b.line,
  );
}

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
  const allow = (Array.isArray(s['allow']) ? s['allow'] : [])
    .filter((a): a is Record<string, unknown> => isRecord(a) && typeof a['path'] === 'string' && isFindingClass(a['class']) && typeof a['reason'] === 'string')
    .map((a) => ({
      path: a['path'] as string,
      class: a['class'] as FindingClass,
      ...(typeof a['surface'] === 'string' ? { surface: a['surface'] } : {}),
      reason: a['reason'] as string,
    }));
  return {
    fail_on: FINDING_CLASSES.filter((c) => failOn.includes(c)),
    words: [...new Set(words)].sort(),
    repeats,
    allow,
  };
}

/** The allow entry that accepts a finding, if any. */
export function allowedBy(f: Finding, policy: CertifyPolicy): AllowEntry | undefined {
  return policy.allow.find((a) => a.class === f.class && (a.surface === undefined || a.surface === f.surface) && picomatch(a.path, { dot: true })(f.path));
}

/** The findings that fail certification under `policy` (their class fails, and no allow entry accepts them), most severe first. */
export function failingFindings(findings: Finding[], policy: CertifyPolicy): Finding[] {
  const failOn = new Set(policy.fail_on);
  return bySeverity(findings.filter((f) => failOn.has(f.class) && !allowedBy(f, policy)));
}

/** Distinct paths of one class on one surface beyond which the entries name a directory glob instead. */
const PATHS_PER_ENTRY = 4;

/**
 * The `policy.allow` entries that would accept `findings`, as YAML lines ready to paste under the
 * certify step's `policy: allow:` (each with a reason for the person to write): one entry per
 * class, surface and path, or per top-level directory (`dir/**`) where a class has many paths.
 * Accepting a finding is a person's decision: the entry says what it accepts, nothing more.
 */
export function allowEntriesFor(findings: readonly Finding[]): string[] {
  const groups = new Map<string, { cls: FindingClass; surface: string; paths: Set<string> }>();
  for (const f of findings) {
    const key = `${f.class}\0${f.surface}`;
    const g = groups.get(key) ?? { cls: f.class, surface: f.surface, paths: new Set<string>() };
    g.paths.add(f.path);
    groups.set(key, g);
  }
  const lines: string[] = [];
  for (const g of groups.values()) {
    const paths = [...g.paths].sort();
    const globs = paths.length <= PATHS_PER_ENTRY ? paths : [...new Set(paths.map((p) => (p.includes('/') ? `${p.slice(0, p.indexOf('/'))}/**` : p)))].sort();
    for (const path of globs)
      lines.push(`- { path: ${JSON.stringify(path)}, class: ${g.cls}, surface: ${JSON.stringify(g.surface)}, reason: "<why this is not a leak>" }`);
  }
  return lines;
}
