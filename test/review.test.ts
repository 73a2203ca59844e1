/**
 * `pairbench review`: the base decides the protocol, the pull request the treatment, and a
 * treatment file is only a treatment. Each case is a pull request on the shipped example (a base
 * checkout and a head checkout, as the action has them): what it changes, what the review takes,
 * what it names as a protocol change, and -- for the attacks -- that it refuses, naming why, and
 * leaves every file of the base's tree as it was.
 */
import { cpSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { review, type ReviewReport } from '../cli/review.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const CLAUDE = 'examples/toy/context/CLAUDE.md';

/** A checkout of the shipped example. */
function checkoutOf(dir: string): string {
  mkdirSync(dir, { recursive: true });
  cpSync(join(ROOT, 'bench.config.yaml'), join(dir, 'bench.config.yaml'));
  cpSync(join(ROOT, 'examples', 'toy'), join(dir, 'examples', 'toy'), { recursive: true });
  mkdirSync(join(dir, 'examples', 'cohorts', 'fixtures'), { recursive: true });
  symlinkSync(join(ROOT, 'examples', 'cohorts', 'fixtures', 'repos'), join(dir, 'examples', 'cohorts', 'fixtures', 'repos'));
  return dir;
}

/** Every file of a tree and its bytes (links by their target). */
function snapshot(dir: string, rel = ''): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of readdirSync(join(dir, rel)).sort()) {
    const p = rel ? `${rel}/${name}` : name;
    const st = lstatSync(join(dir, p));
    if (st.isSymbolicLink()) out[p] = 'link';
    else if (st.isDirectory()) Object.assign(out, snapshot(dir, p));
    else out[p] = readFileSync(join(dir, p), 'utf8');
  }
  return out;
}

describe('pairbench review', () => {
  let tmp: string;
  let base: string;
  let head: string;
  let before: Record<string, string>;
  beforeEach(() => {
    tmp = mkdtempSync(join(tmpdir(), 'pairbench-review-'));
    base = checkoutOf(join(tmp, 'base'));
    head = checkoutOf(join(tmp, 'head'));
    before = snapshot(base);
  });
  afterEach(() => rmSync(tmp, { recursive: true, force: true }));

  const edit = (rel: string, change: (text: string) => string) => writeFileSync(join(head, rel), change(readFileSync(join(head, rel), 'utf8')));
  const run = async (): Promise<ReviewReport> => {
    const r = await review(join(base, 'bench.config.yaml'), join(head, 'bench.config.yaml'), { PATH: process.env['PATH'] });
    if (!r.ok) throw new Error(r.error);
    return r.report;
  };
  const refusedUntouched = (r: ReviewReport) => {
    expect(r.refused.length).toBeGreaterThan(0);
    expect(r.treatment.files).toEqual([]);
    expect(snapshot(base)).toEqual(before);
  };

  it('the treatment is taken, and a change of reps is named, not run', async () => {
    edit(CLAUDE, (t) => t + '- Amounts are floats in euros.\n');
    edit('bench.config.yaml', (t) => t.replace('rep: 2 }', 'rep: 3 }'));
    const r = await run();
    expect(r.refused).toEqual([]);
    expect(r.arms).toEqual([{ step: 'attempts', arm: 'claude-md' }]);
    expect(r.treatment.files).toEqual([CLAUDE]);
    expect(r.treatment.changes['context-file']).toEqual([
      expect.stringMatching(/^attempts\[arm=claude-md\]: input examples\/toy\/context\/CLAUDE\.md: [0-9a-f]{12} -> [0-9a-f]{12}$/),
      expect.stringMatching(/^certify: input examples\/toy\/context\/CLAUDE\.md: /),
    ]);
    expect(r.protocol['context-file']).toContain('attempts: matrix rep: 2 -> 3');
    // The review tree: the base's config, the pull request's CLAUDE.md.
    expect(readFileSync(join(base, 'bench.config.yaml'), 'utf8')).toContain('rep: 2 }');
    expect(readFileSync(join(base, CLAUDE), 'utf8')).toContain('floats in euros');
  });

  it("a treatment arm's entry is taken (written into the base's config); the control's is the protocol", async () => {
    edit('bench.config.yaml', (t) =>
      t
        .replace(
          'claude-md: { instructions: examples/toy/context/CLAUDE.md }',
          'claude-md: { instructions: examples/toy/context/CLAUDE.md, prompt_append: "Mind the cents." }',
        )
        .replace('control: {}', 'control: { prompt_append: "Use floats." }'),
    );
    const r = await run();
    expect(r.refused).toEqual([]);
    expect(r.treatment.entries).toEqual(['steps.attempts.arms.claude-md']);
    expect(readFileSync(join(base, 'bench.config.yaml'), 'utf8')).toContain('Mind the cents.');
    expect(readFileSync(join(base, 'bench.config.yaml'), 'utf8')).not.toContain('Use floats.');
    expect(r.protocol['context-file']!.some((l) => l.startsWith('attempts[arm=control]: arm.prompt_append: null -> "Use floats."'))).toBe(true);
  });

  it("attack: the treatment names the fake model's script and edits it: refused, the base's tree untouched", async () => {
    edit('bench.config.yaml', (t) => t.replace('instructions: examples/toy/context/CLAUDE.md', 'instructions: examples/toy/model.json'));
    edit('examples/toy/model.json', (t) => t.replace('"turns"', '"turns" ').trimEnd() + '\n');
    const r = await run();
    refusedUntouched(r);
    expect(r.refused).toEqual([
      'examples/toy/model.json is a treatment file of the pull request, but attempts also reads it (examples/toy/model.json): only the base may change it',
    ]);
  });

  it("attack: the treatment names a task's own file, read when the config loads: refused, the base's tree untouched", async () => {
    const task = 'examples/toy/tasks/sum-cents/task.yaml';
    edit('bench.config.yaml', (t) => t.replace('instructions: examples/toy/context/CLAUDE.md', `instructions: ${task}`));
    edit(task, (t) => t.replace('the total of a', 'the total (rounded) of a'));
    const r = await run();
    refusedUntouched(r);
    expect(r.refused[0]).toMatch(/^a treatment file is read when the config loads/);
  });

  it("attack: a treatment outside the pull request's project, or a link to one: refused", async () => {
    writeFileSync(join(tmp, 'secret.txt'), 'a host secret\n');
    symlinkSync(join(tmp, 'secret.txt'), join(head, 'examples/toy/context/LINK.md'));
    edit('bench.config.yaml', (t) => t.replace('instructions: examples/toy/context/CLAUDE.md', 'instructions: examples/toy/context/LINK.md'));
    const r = await run();
    refusedUntouched(r);
    expect(r.refused[0]).toContain("which is outside the pull request's project: not taken");
  });

  it("attack: a link in the base's tree on the way to a treatment file: nothing is written through it", async () => {
    // The base keeps its context outside its tree (trusted, and read as it is): the review never writes there.
    cpSync(join(base, 'examples/toy/context'), join(tmp, 'elsewhere'), { recursive: true });
    rmSync(join(base, 'examples/toy/context'), { recursive: true });
    symlinkSync(join(tmp, 'elsewhere'), join(base, 'examples/toy/context'));
    before = snapshot(base);
    const outside = snapshot(join(tmp, 'elsewhere'));
    edit(CLAUDE, (t) => t + '- Amounts are floats in euros.\n');
    const r = await run();
    refusedUntouched(r);
    expect(snapshot(join(tmp, 'elsewhere'))).toEqual(outside);
    expect(r.refused.some((l) => l.includes("the base's tree has a symbolic link at examples/toy/context"))).toBe(true);
  });

  it('a pull request whose config does not load: named, nothing taken', async () => {
    edit('bench.config.yaml', (t) => t.replace('kind: analyze', 'kind: analyse'));
    const r = await run();
    refusedUntouched(r);
    expect(r.protocol['(config)']![0]).toMatch(/^the pull request's config does not load:/);
  });
});
