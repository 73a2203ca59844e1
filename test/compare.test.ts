/**
 * `pairbench compare` on two bundles of the shipped example: the CLAUDE.md as shipped (the
 * golden store) against the same file with one harmful line (its scripted model then breaks
 * the two arithmetic tasks it otherwise solves). The flipped tasks are named, the change in
 * effect has its paired interval, a tampered bundle is refused, and runs that differ in what
 * was run are named, not averaged.
 */
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claudeBinary } from '../agents/claude-code.js';
import { cli } from './cli-in-process.js';
import type { ResultsFile } from '../report/results-file.js';
import { diffRuns, type RunSide } from '../stats/run-diff.js';
import { cliOutputProblems } from './cli-schema.js';
import { goldenStore } from './golden-store.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

const sideOf = (dir: string): RunSide => {
  const r = JSON.parse(readFileSync(join(dir, 'results.json'), 'utf8')) as ResultsFile;
  return { label: dir, cohort: r.cohort, version: r.version, analysis: r.analysis, attempts: r.attempts };
};

describe.skipIf(!existsSync(claudeBinary()))('pairbench compare: the shipped CLAUDE.md against one with a harmful line', () => {
  let dir: string;
  let base: string;
  let head: string;
  /** `plan` after the edit, before the run. */
  let planned: Awaited<ReturnType<typeof cli>>;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'pairbench-compare-'));
    cpSync(join(ROOT, 'bench.config.yaml'), join(dir, 'bench.config.yaml'));
    cpSync(join(ROOT, 'examples'), join(dir, 'examples'), { recursive: true });
    const config = join(dir, 'bench.config.yaml');
    const store = join(dir, 'store');
    await goldenStore('bench.config.yaml', store);
    base = join(dir, 'base');
    head = join(dir, 'head');
    const exported = await cli('export', '--config', config, '--store', store, '--out', base);
    expect(exported.code, exported.stderr).toBe(0);
    // The pull request: one harmful line, and the cohort's next version (version 1 is frozen with the file as it was).
    const claude = join(dir, 'examples', 'toy', 'context', 'CLAUDE.md');
    writeFileSync(claude, readFileSync(claude, 'utf8') + '- Amounts are floats in euros.\n');
    writeFileSync(config, readFileSync(config, 'utf8').replace(/^ {4}version: 1$/m, '    version: 2'));
    planned = await cli('plan', '--config', config, '--store', store);
    const run = await cli('run', '--config', config, '--store', store);
    expect(run.code, run.stderr).toBe(0);
    const again = await cli('export', '--config', config, '--store', store, '--out', head);
    expect(again.code, again.stderr).toBe(0);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("plan, after the edit, counts what will run apart from what runs only if an upstream's output changes: 16 attempts of the edited arm, not 32", () => {
    expect(planned.code, planned.stderr).toBe(0);
    const summary = planned.stdout.trimEnd().split('\n').at(-1)!;
    expect(summary).toMatch(/ to run \(8 task certifications, 16 agent attempts, .*\), \d+ more only if an upstream's output changes \(16 agent attempts, /);
  });

  it('lists the flipped tasks and the change in effect with its paired interval, in Markdown, HTML and JSON', async () => {
    const json = await cli('compare', base, head, '--json');
    expect(json.code, json.stderr).toBe(0);
    const out = JSON.parse(json.stdout);
    expect(cliOutputProblems('#/definitions/compare', out)).toBe('');
    expect(out).toMatchObject({ comparable: true, mismatches: [], base: { cohort: 'context-file', version: 1 }, head: { cohort: 'context-file', version: 2 } });
    const [c] = out.comparisons;
    expect(c).toMatchObject({ treatment: 'claude-md', control: 'control', base: { verdict: 'positive', delta: 0.75 }, head: { delta: 0.5 } });
    // The two arithmetic tasks moved in the treatment (solved, now broken); the control did not move. At 2 reps
    // a side neither is a flip on its own (p 1/3: a change that does nothing moves a task that far that often).
    expect(c.flipped).toEqual([]);
    expect(c.moved.map((f: { task: string }) => f.task)).toEqual(['split-cents', 'sum-cents']);
    for (const f of c.moved)
      expect(f).toMatchObject({
        control: { base: 1, head: 1 },
        treatment: { base: 1, head: 0 },
        base_class: 'b',
        head_class: 'c',
        change: -1,
        consistent: true,
      });
    expect(c.moved[0].p).toBeCloseTo(1 / 3, 12);
    expect(c.flips_expected_no_change).toBe(0);
    expect(c.reps_for_one_task_flip).toBe(4);
    // Together they are evidence: the exact tests over all tasks.
    expect(c.tests.regression.p).toBeCloseTo(1 / 36, 12);
    expect(c.tests.new_harm).toMatchObject({ tasks: ['split-cents', 'sum-cents'] });
    expect(c.shared_tasks).toHaveLength(8);
    expect(c.effect_change.estimate).toBeCloseTo(-0.25, 12);
    expect(c.effect_change.ci).toMatchObject({ method: 'cluster-t', confidence: 0.95, units: 8 });
    expect(c.effect_change.ci.low).toBeLessThan(-0.25);
    expect(c.effect_change.ci.high).toBeGreaterThan(-0.25);

    const html = join(dir, 'compare.html');
    const md = await cli('compare', base, head, '--html', html);
    expect(md.code, md.stderr).toBe(0);
    expect(md.stdout).toContain('## pairbench compare: context-file v1 (base) vs context-file v2 (head)');
    expect(md.stdout).toMatch(
      /\| claude-md vs control \| POSITIVE \+75\.0 pp \| WITHIN NOISE \+50\.0 pp \| -25\.0 pp \(95% CI -\d+\.\d pp to \+\d+\.\d pp; 8 tasks\) \| none \|/,
    );
    expect(md.stdout).toContain(
      'No task of claude-md vs control changed beyond noise on its own (a change that does nothing would list about 0.0 at this size; a task needs 4 reps a side to show a flip alone). Moved within noise:',
    );
    expect(md.stdout).toContain('- sum-cents: control 100.0% → 100.0%, claude-md 100.0% → 0.0% (pass rates; outcome b → c; p 0.33)');
    const page = readFileSync(html, 'utf8');
    expect(page).toContain('<td>none</td>');
    expect(page).toContain('sum-cents: control 100.0% → 100.0%');
  });

  it('a bundle against itself: nothing flipped, a change of zero', async () => {
    const out = JSON.parse((await cli('compare', base, base, '--json')).stdout);
    expect(out.comparisons[0].flipped).toEqual([]);
    expect(out.comparisons[0].effect_change.estimate).toBe(0);
  });

  it('a bundle that does not match its manifest is refused, naming the file, and nothing is compared', async () => {
    const forged = join(dir, 'forged');
    cpSync(head, forged, { recursive: true });
    const results = JSON.parse(readFileSync(join(forged, 'results.json'), 'utf8'));
    results.analysis.comparisons[0].verdict = 'positive';
    writeFileSync(join(forged, 'results.json'), JSON.stringify(results));
    const r = await cli('compare', base, forged);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain(`${forged} does not match its manifest.json (results.json differs)`);
  });

  it('runs that differ in agent, model or isolation are named, and no change in effect is estimated across them', () => {
    const b = sideOf(base);
    const h = sideOf(head);
    const upgraded = { ...h, attempts: h.attempts.map((a) => ({ ...a, agent: { ...a.agent, version: '9.9.9' } })) };
    const d = diffRuns(b, upgraded);
    expect(d.comparable).toBe(false);
    expect(d.mismatches.some((m) => m.startsWith('agent: claude-code ') && m.includes('claude-code 9.9.9'))).toBe(true);
    expect(d.comparisons[0]!.effect_change).toBeNull();
    // Tasks only one side ran are named; the shared ones still compare.
    const fewer = { ...h, analysis: structuredClone(h.analysis) };
    fewer.attempts = h.attempts.filter((a) => a.task !== 'is-amount');
    fewer.analysis.comparisons[0]!.outcomes!.tasks = fewer.analysis.comparisons[0]!.outcomes!.tasks.filter((t) => t.task !== 'is-amount');
    const partial = diffRuns(b, fewer);
    expect(partial.mismatches.some((m) => m.startsWith('tasks: 1 only in') && m.includes('(is-amount)'))).toBe(true);
    expect(partial.comparisons[0]!.only_base).toEqual(['is-amount']);
    expect(partial.comparisons[0]!.effect_change!.n_tasks).toBe(7);
  });
});
