/**
 * "Does our CLAUDE.md help one model more than another?": the shipped example's arms crossed
 * with two models (a matrix dimension), each its own scripted model: claude-fake-1 (the
 * example's, which writes the house format when CLAUDE.md says what it is) and
 * claude-fake-plain (the same turns, but it never reads the conventions). Within each model
 * the context effect is paired by task; the interaction has its interval; nothing is refused.
 */
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claudeBinary } from '../agents/claude-code.js';
import type { ResultsFile } from '../report/results-file.js';
import { cli } from './cli-in-process.js';
import { goldenStore } from './golden-store.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
/** Two tasks that need the house format, two plain arithmetic ones. */
const TASKS = ['format-amount', 'parse-amount', 'sum-cents', 'split-cents'];

describe.skipIf(!existsSync(claudeBinary()))('model as a factor: the example crossed with two models', () => {
  let dir: string;
  let results: ResultsFile;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'pairbench-model-factor-'));
    cpSync(join(ROOT, 'bench.config.yaml'), join(dir, 'bench.config.yaml'));
    cpSync(join(ROOT, 'examples'), join(dir, 'examples'), { recursive: true });
    const store = join(dir, 'store');
    // Materialize and certify are the golden example's: only the attempts are new.
    await goldenStore('bench.config.yaml', store);
    const toy = join(dir, 'examples', 'toy');
    const script = readFileSync(join(toy, 'model.json'), 'utf8');
    writeFileSync(join(toy, 'claude-fake-1.json'), script);
    // The plain model ignores the conventions: the same code, with the house format never known.
    const plain = script.replace('const house = /house\\\\s+format/i.test(conventions);', 'const house = false;');
    expect(plain).not.toBe(script);
    writeFileSync(join(toy, 'claude-fake-plain.json'), plain);
    const config = readFileSync(join(dir, 'bench.config.yaml'), 'utf8')
      .replace(
        /matrix: &attempt \{ task: \*ids, arm: \[control, claude-md\], rep: 2 \}/,
        `matrix: &attempt { task: [${TASKS.join(', ')}], arm: [control, claude-md], model: [claude-fake-1, claude-fake-plain], rep: 1 }`,
      )
      .replace('agent: { adapter: claude-code, model: claude-fake-1 }', 'agent: { adapter: claude-code }')
      .replace('model: { fake_script: examples/toy/model.json }', 'model: { fake_script: "examples/toy/{model}.json" }')
      .replace(/^ {4}treatments: \[claude-md\]$/m, '    treatments: [claude-md]\n    by: model')
      .replace(/^ {4}version: 1$/m, '    version: 3');
    expect(config).toContain('by: model');
    expect(config).toContain('model: [claude-fake-1, claude-fake-plain]');
    writeFileSync(join(dir, 'bench.config.yaml'), config);
    const run = await cli('run', '--config', join(dir, 'bench.config.yaml'), '--store', store);
    expect(run.code, run.stderr + run.stdout).toBe(0);
    const out = join(dir, 'bundle');
    const exported = await cli('export', '--config', join(dir, 'bench.config.yaml'), '--store', store, '--out', out);
    expect(exported.code, exported.stderr).toBe(0);
    results = JSON.parse(readFileSync(join(out, 'results.json'), 'utf8')) as ResultsFile;
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('reports the context effect within each model, paired by task, and refuses nothing', () => {
    const a = results.analysis;
    expect(a.comparisons.map((c) => [c.treatment, c.control, c.verdict === 'refused'])).toEqual([
      ['claude-md @ claude-fake-1', 'control @ claude-fake-1', false],
      ['claude-md @ claude-fake-plain', 'control @ claude-fake-plain', false],
    ]);
    const [strong, plain] = a.comparisons;
    // The example's model writes the house format with the conventions: the two format tasks flip.
    expect(strong!.delta).toBeCloseTo(0.5, 12);
    expect(plain!.delta).toBeCloseTo(0, 12);
    for (const c of a.comparisons) {
      // Nothing refuses it (no mixed or mismatched configuration); four tasks are too few for a claim, and it says so.
      expect(c.problems.map((p) => p.reason)).toEqual(['insufficient-n']);
      expect(c.pairs.valid).toBe(TASKS.length);
      expect(c.ci).not.toBeNull();
    }
    // Each attempt ran the model of its cell.
    expect(results.attempts).toHaveLength(TASKS.length * 2 * 2);
    for (const x of results.attempts) expect(x.node.split('/')[3], x.node).toBe(x.agent.model);
  });

  it('the interaction, with its interval, is in the same Holm family; the models differ only descriptively', () => {
    const x = results.analysis.crossed!;
    expect(x).toMatchObject({ by: 'model', levels: ['claude-fake-1', 'claude-fake-plain'] });
    expect(x.designs).toHaveLength(1);
    const [d] = x.designs;
    expect(d).toMatchObject({
      treatment: 'claude-md',
      control: 'control',
      level: 'claude-fake-plain',
      base_level: 'claude-fake-1',
      status: 'ok',
      problems: [],
    });
    // (plain's effect) - (claude-fake-1's effect) = 0 - 0.5.
    expect(d!.interaction!.estimate).toBeCloseTo(-0.5, 12);
    expect(d!.interaction!.ci!.low).toBeLessThan(-0.5);
    expect(d!.interaction!.ci!.high).toBeGreaterThan(-0.5);
    expect(d!.interaction!.n_tasks).toBe(TASKS.length);
    // Holm over three tests: two within-model comparisons and the interaction.
    const ps = [...results.analysis.comparisons.map((c) => c.test!), d!.interaction!.test!];
    expect(ps.every((t) => t.units_needed === ps[0]!.units_needed)).toBe(true);
    expect(ps.every((t) => t.p_holm >= t.p)).toBe(true);
    // Between the models: an estimate with an interval, no test.
    expect(d!.between).toMatchObject({ n_tasks: TASKS.length });
    expect(d!.between).not.toHaveProperty('test');
  });

  it('the report shows the model x arm grid with intervals, and the interaction', () => {
    const md = readFileSync(join(dir, 'bundle', 'report.md'), 'utf8');
    expect(md).toContain('## By model');
    expect(md).toMatch(/^\| claude-fake-1 \| 50\.0% \| 100\.0% \| \*\*[A-Z ]+\*\* \+50\.0 pp \[.*\] \|$/m);
    expect(md).toMatch(/^\| claude-fake-plain \| 50\.0% \| 50\.0% \| \*\*[A-Z ]+\*\* 0\.0 pp \[.*\] \|$/m);
    expect(md).toMatch(/^- claude-md x model \(claude-fake-plain vs claude-fake-1\): \*\*[A-Z ]+\*\* -50\.0 pp \\?\[/m);
    expect(md).toContain('descriptive, not tested');
    const html = readFileSync(join(dir, 'bundle', 'report.html'), 'utf8');
    expect(html).toContain('<section id="crossed">');
  });
});
