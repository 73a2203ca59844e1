import { Parser } from 'tap-parser';
import type { RunnerStatus } from './status.js';

/**
 * TAP, read with a maintained parser (tap-parser): its TAP 13/14 grammar, subtests, directives
 * and YAML diagnostics, instead of regular expressions over lines. What the code under test
 * prints reaches a TAP file only as comments (node --test writes a test's output as `# ...`
 * lines), and a comment is never a result.
 */

/** One test point, and the points of its subtests (which come before it). */
interface Point {
  name: string;
  ok: boolean;
  skip: boolean;
  todo: boolean;
  /** node:test's `type: 'suite'` (describe blocks). */
  suite: boolean;
  children: Point[];
}

/** The test points of a TAP document as a tree: a subtest's points belong to the point that follows them. */
function tapTree(text: string): { roots: Point[]; comments: { before: number; text: string }[]; plan: boolean } {
  const comments: { before: number; text: string }[] = [];
  let plan = false;
  const listen = (parser: Parser, top: boolean): Point[] => {
    const points: Point[] = [];
    let pending: Point[][] = [];
    parser.on('child', (child: Parser) => pending.push(listen(child, false)));
    parser.on('assert', (a: { name?: string; ok: boolean; skip: boolean | string; todo: boolean | string; diag?: { type?: unknown } | null }) => {
      points.push({
        name: (a.name ?? '').trim(),
        ok: a.ok,
        skip: Boolean(a.skip),
        todo: Boolean(a.todo),
        suite: a.diag?.type === 'suite',
        children: pending.flat(),
      });
      pending = [];
    });
    if (top) {
      parser.on('comment', (c: string) => comments.push({ before: points.length, text: c.replace(/^#\s?/, '').replace(/\r?\n$/, '') }));
      parser.on('plan', () => (plan = true));
    }
    return points;
  };
  const parser = new Parser({ passes: true });
  const roots = listen(parser, true);
  parser.end(text);
  return { roots, comments, plan };
}

const statusOf = (p: Point): RunnerStatus => (p.skip ? 'SKIPPED' : p.todo ? 'XFAIL' : p.ok ? 'PASSED' : 'FAILED');

/** Every test point by its name (a repeated name by its ordinal, `name #2`), subtests included. */
export function parseTap(text: string): Map<string, RunnerStatus> {
  const out = new Map<string, RunnerStatus>();
  const seen = new Map<string, number>();
  const walk = (points: Point[]) => {
    for (const p of points) {
      walk(p.children);
      if (!p.name) continue;
      const n = (seen.get(p.name) ?? 0) + 1;
      seen.set(p.name, n);
      out.set(n === 1 ? p.name : `${p.name} #${n}`, statusOf(p));
    }
  };
  walk(tapTree(text).roots);
  return out;
}

/** A leaf test of node:test's TAP output (suites and tests that only hold subtests are not tests). */
export interface TapTest {
  /** Names from the top-level test down to this one. */
  path: string[];
  /** The names --test-name-pattern must match to run it: its non-suite ancestors and itself. */
  selectors: string[];
  status: 'pass' | 'fail' | 'skip' | 'todo';
}

/** The leaf tests of node:test's TAP, each with its path and the selectors that run it alone. */
export function tapTests(text: string): TapTest[] {
  const out: TapTest[] = [];
  const walk = (p: Point, path: string[], selectors: string[]) => {
    const at = [...path, p.name];
    const sel = p.suite ? selectors : [...selectors, p.name];
    if (p.children.length) {
      for (const c of p.children) walk(c, at, sel);
      return;
    }
    if (p.suite) return;
    out.push({ path: at, selectors: sel, status: p.skip ? 'skip' : p.todo ? 'todo' : p.ok ? 'pass' : 'fail' });
  };
  for (const r of tapTree(text).roots) walk(r, [], []);
  return out;
}

/**
 * Comments that are not a test's name: tape's closing tallies ("# tests 3", "# pass 3", "# fail 1",
 * "# ok") and what the parser adds of its own (a test count that does not match the plan).
 */
const TALLY = /^(tests|pass|fail|todo|skip) \d+$|^ok$|^test count\(\d+\) != plan\(/;

/**
 * tape's TAP: a `# name` comment opens a test, the points after it are its assertions; the
 * test fails if one of them does. A test with no assertion is left unclassified ('skip'). A
 * run that ended without its plan line crashed: the open test failed.
 */
export function tapeSections(text: string): { name: string; status: 'pass' | 'fail' | 'skip' }[] {
  const { roots, comments, plan } = tapTree(text);
  const sections = comments.filter((c) => !TALLY.test(c.text));
  const out: { name: string; status: 'pass' | 'fail' | 'skip' }[] = [];
  sections.forEach((s, i) => {
    const end = sections[i + 1]?.before ?? roots.length;
    const points = roots.slice(s.before, end);
    const crashed = !plan && i === sections.length - 1;
    out.push({ name: s.text, status: crashed || points.some((p) => !p.ok && !p.todo) ? 'fail' : points.length ? 'pass' : 'skip' });
  });
  return out;
}
