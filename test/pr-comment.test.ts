/**
 * The pull-request comment renders every string a pull request, a config or an agent controls
 * as inert text, whatever field it came in through: each string field of an attempt record (a
 * task, its family and category, an arm, the agent's words in an explanation or an
 * infrastructure cause, ...), the cohort's name, the headline warnings, the review's lines and
 * the labels each carry mentions, URLs, HTML, pipes, headings, links and references, and the
 * comment, rendered by a GitHub-flavoured Markdown library, makes none of them (test/gfm-inert.ts).
 */
import { describe, expect, it } from 'vitest';
import { analyze } from '../stats/analyze.js';
import { judgeChange } from '../stats/change-gate.js';
import { diffRuns, type RunSide } from '../stats/run-diff.js';
import { defaultSpec } from '../stats/spec.js';
import { makeAttempt } from '../stats/synthetic.js';
import type { AttemptRecord } from '../stats/types.js';
import { prComment, type PrCheck } from '../report/pr-comment.js';
import { inertProblems } from './gfm-inert.js';

const HOSTILE =
  '@octocat https://evil.example www.evil.example a@b.example <img src=x onerror=alert(1)> | # Approved [ok](https://evil.example) #12 `x` *y* $z$\n## h';

/** Every string leaf of a record, by path. */
function stringPaths(v: unknown, prefix: string[] = []): string[][] {
  if (typeof v === 'string') return [prefix];
  if (v && typeof v === 'object' && !Array.isArray(v)) return Object.entries(v).flatMap(([k, x]) => stringPaths(x, [...prefix, k]));
  return [];
}

function setAt(o: Record<string, unknown>, path: string[], value: string): void {
  let at = o;
  for (const k of path.slice(0, -1)) at = at[k] as Record<string, unknown>;
  at[path.at(-1)!] = value;
}

/** A base and a head of 6 tasks x 2 reps: the head's treatment fails two tasks the base solved. */
function sides(poison: (a: AttemptRecord) => AttemptRecord, control: string, treatment: string): { base: RunSide; head: RunSide } {
  const make = (head: boolean) =>
    [control, treatment].flatMap((arm) =>
      Array.from({ length: 6 }, (_, t) =>
        [0, 1].map((rep) =>
          poison(
            makeAttempt({
              task: `t${t}`,
              family: `f${t}`,
              arm,
              rep,
              pass: !(head && arm === treatment && t < 2),
              explanation: 'the agent said: done',
              started_at: `2026-01-0${head && arm === treatment ? 2 : 1}T00:00:0${rep}.000Z`,
            }),
          ),
        ),
      ).flat(),
    );
  const side = (attempts: AttemptRecord[], label: string): RunSide => {
    const analysis = analyze(attempts, defaultSpec(control, [treatment], { bootstrap: { resamples: 200, seed: 1 } }));
    analysis.warnings.push({ kind: 'scripted', arm: treatment, message: `the agent printed: ${HOSTILE}` });
    return { label, cohort: HOSTILE, version: 1, analysis, attempts };
  };
  return { base: side(make(false), 'base'), head: side(make(true), 'head') };
}

function comment(base: RunSide, head: RunSide): string {
  const diff = diffRuns(base, head);
  const check = judgeChange({ cohort: head.cohort, policy: undefined, head: head.analysis, diff, protocolChanges: [`attempts: matrix arm: ["${HOSTILE}"]`] });
  const c: PrCheck = {
    cohorts: [{ node: HOSTILE, check, diff, head: head.analysis, sizing: null }],
    review: { treatment: { [head.cohort]: [HOSTILE] }, protocol: { [head.cohort]: [HOSTILE], other: [HOSTILE] }, refused: [] },
    labels: { base: HOSTILE, head: HOSTILE },
    link: 'https://github.test/team/app/actions/runs/1',
    passed: false,
  };
  return prComment(c);
}

describe('the pull-request comment', () => {
  it('the hostile text is what a comment would do without the escaping (the check is not vacuous)', () => {
    expect(inertProblems(`| a |\n|---|\n| ${HOSTILE} |\n`).length).toBeGreaterThan(4);
  });

  const record = makeAttempt({ task: 't', arm: 'a', rep: 0 });
  const fields = stringPaths(record).filter((p) => !['started_at', 'ended_at'].includes(p[0]!));
  for (const path of fields) {
    it(`a hostile ${path.join('.')} renders inert`, () => {
      const poison = (a: AttemptRecord) => {
        const copy = structuredClone(a) as unknown as Record<string, unknown>;
        // Names that tell records apart stay apart: the hostile text is added to them.
        const own = path.join('.') === 'task' || path.join('.') === 'family' || path.join('.') === 'arm' || path.join('.') === 'node';
        setAt(copy, path, own ? `${HOSTILE} ${String(path.reduce<unknown>((o, k) => (o as Record<string, unknown>)[k], a))}` : HOSTILE);
        return copy as unknown as AttemptRecord;
      };
      const arm = (name: string) => (path.join('.') === 'arm' ? `${HOSTILE} ${name}` : name);
      const { base, head } = sides(poison, arm('control'), arm('treatment'));
      const body = comment(base, head);
      expect(body).toContain('❌');
      expect(body).toContain('@\u200boctocat');
      expect(inertProblems(body)).toEqual([]);
    });
  }

  it("a protocol change to a cohort the head did not run fails the bottom line too (the pull request's config does not load)", () => {
    const { base } = sides((a) => a, 'control', 'treatment');
    const diff = diffRuns(base, base);
    const check = judgeChange({ cohort: base.cohort, policy: undefined, head: base.analysis, diff, protocolChanges: [] });
    expect(check.failures).toEqual([]);
    const c: PrCheck = {
      cohorts: [{ node: '', check, diff, head: base.analysis, sizing: null }],
      review: { treatment: {}, protocol: { '(config)': ["the pull request's config does not load"] }, refused: [] },
      labels: { base: 'b', head: 'h' },
      link: null,
      passed: false,
    };
    expect(prComment(c).split('\n')[0]).toMatch(/^❌ \*\*pairbench: this pull request changes the protocol/);
  });
});
