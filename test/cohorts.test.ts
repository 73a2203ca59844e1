import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claudeBinary } from '../agents/claude-code.js';
import { main } from '../cli/main.js';

// The shipped cohorts and the quick-start example, end to end: the fixture repos are
// built, each config runs with a temp store (the real Claude Code CLI against its
// scripted fake model, sandbox `auto`), every task certifies, each export bundle is
// written out and re-verified, and each verdict is the one the fixtures are built to
// give. A changed verdict here means the machinery (or a fixture) changed.
const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const NOTE = 'results on fixture tasks prove the machinery, not any product';

interface Verdicts {
  /** analyze step -> "treatment vs control" -> [verdict, sign of the effect] */
  [cohort: string]: Record<string, [string, '+' | '0' | '-']>;
}

// The fixtures' cohorts are small (3 to 5 tasks, some in shared families): too few units for
// any test to reach alpha, so they are insufficient-n -- descriptive, with the effect each
// fixture is built to show. The example has 8 independent tasks and ends in a real verdict.
const CASES: { config: string; tasks: number; verdicts: Verdicts }[] = [
  { config: 'bench.config.yaml', tasks: 8, verdicts: { 'context-file': { 'claude-md vs control': ['positive', '+'] } } },
  {
    config: 'cohorts/stele-memory.yaml',
    tasks: 3,
    verdicts: { 'stele-memory': { 'memory vs disabled': ['insufficient-n', '+'] }, 'stele-file-boundaries': { 'boundaries vs disabled': ['insufficient-n', '+'] } },
  },
  { config: 'cohorts/primer-context-file.yaml', tasks: 3, verdicts: { 'primer-context-file': { 'with vs without': ['insufficient-n', '+'] } } },
  {
    config: 'cohorts/gortex-mcp.yaml',
    tasks: 5,
    verdicts: {
      'gortex-mcp': { 'with-tools vs without-tools': ['insufficient-n', '+'], 'with-tools-ablated vs without-tools': ['insufficient-n', '+'] },
      'gortex-prompt-ablation': { 'with-tools-ablated vs with-tools': ['insufficient-n', '0'] },
    },
  },
  {
    config: 'cohorts/coding-os-factorial.yaml',
    tasks: 3,
    verdicts: { 'coding-os-factorial': { 'graph vs raw': ['insufficient-n', '+'], 'rules vs raw': ['insufficient-n', '+'], 'full vs raw': ['insufficient-n', '+'] } },
  },
];

async function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await main(args, {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { write: (s: string) => (stderr += s) },
    env: { PATH: process.env['PATH'], CI: '1' },
  });
  return { code, stdout, stderr };
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
const json = (path: string): any => JSON.parse(readFileSync(path, 'utf8'));

interface Bundle {
  dir: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  results: any;
  report: string;
}

const stores: string[] = [];
beforeAll(() => {
  execFileSync(process.execPath, [join(ROOT, 'scripts', 'build-fixtures.mjs'), '--quiet'], { stdio: 'inherit' });
});
afterAll(() => {
  for (const s of stores) rmSync(s, { recursive: true, force: true });
});

describe.skipIf(!existsSync(claudeBinary()))('shipped cohorts, end to end on their fixtures', () => {
  it('the fixture repositories build deterministically: a second build finds every repo at its pinned commits', () => {
    const out = execFileSync(process.execPath, [join(ROOT, 'scripts', 'build-fixtures.mjs'), '--check'], { encoding: 'utf8' });
    expect(out).not.toContain('stale');
  });

  for (const c of CASES) {
    it(`${c.config}: certifies, runs, verifies, audits, analyses and exports a verifiable bundle with the expected verdicts`, { timeout: 180_000 }, async () => {
      const config = join(ROOT, c.config);
      const store = mkdtempSync(join(tmpdir(), 'pairbench-cohort-'));
      stores.push(store);
      const run = await cli('run', '--config', config, '--store', store);
      expect(run.code, run.stderr).toBe(0);

      const out = join(store, 'bundles');
      const exp = await cli('export', '--config', config, '--store', store, '--out', out, '--json');
      expect(exp.code, exp.stderr + exp.stdout).toBe(0);
      const dirs = (JSON.parse(exp.stdout).bundles as { dir: string }[]).map((b) => b.dir);
      const bundles: Record<string, Bundle> = {};
      for (const dir of dirs) {
        const check = await cli('verify-bundle', dir);
        expect(check.code, check.stdout + check.stderr).toBe(0);
        const results = json(join(dir, 'results.json'));
        // Each export step's `cohort` is the name of the analyze step it exports.
        bundles[results.cohort] = { dir, results, report: readFileSync(join(dir, 'report.md'), 'utf8') };
      }
      expect(Object.keys(bundles).sort()).toEqual(Object.keys(c.verdicts).sort());

      for (const [cohort, want] of Object.entries(c.verdicts)) {
        const b = bundles[cohort]!;
        // Every task certified (the receipts are in the bundle).
        const certs = readdirSync(join(b.dir, 'nodes', 'certify')).map((t) => json(join(b.dir, 'nodes', 'certify', t, 'certification.json')));
        expect(certs).toHaveLength(c.tasks);
        for (const cert of certs) expect(cert.verdict, `${cert.task}: ${cert.reasons.join('; ')}`).toBe('certified');
        // The verdicts the fixtures are built to give, with the report saying so.
        const sign = (d: number | null) => (d === null ? null : d > 0 ? '+' : d < 0 ? '-' : '0');
        const got = Object.fromEntries(
          b.results.analysis.comparisons.map((x: { treatment: string; control: string; verdict: string; delta: number | null }) => [`${x.treatment} vs ${x.control}`, [x.verdict, sign(x.delta)]]),
        );
        expect(got).toEqual(want);
        expect(b.report).toContain(NOTE);
        expect(b.report).toMatch(/^### .+: \*\*(POSITIVE|NEGATIVE|WITHIN NOISE|INSUFFICIENT N|REFUSED|INVALID)\*\*$/m);
        // Scripted outcomes are disclosed before any verdict.
        expect(b.report.indexOf('⚠ **Warning:** the outcomes were scripted')).toBeGreaterThan(0);
        expect(b.report.indexOf('⚠ **Warning:** the outcomes were scripted')).toBeLessThan(b.report.indexOf('## Verdicts'));
        expect(b.results.attempts.every((a: { scripted?: boolean }) => a.scripted === true)).toBe(true);
        expect(b.results.attempts.every((a: { admission: string }) => a.admission === 'accepted')).toBe(true);
      }

      // Per-cohort checks of the mechanism each fixture is built to show.
      if (c.config.includes('stele')) {
        // The control fixes every copy, dist/ included: an out-of-bounds write that scores 0.
        const rows = bundles['stele-memory']!.results.attempts as { task: string; arm: string; reason_code: string; pass: boolean }[];
        expect(rows.filter((a) => a.task === 'month-off-by-one' && a.arm === 'disabled').map((a) => [a.reason_code, a.pass])).toEqual([
          ['out-of-bounds', false],
          ['out-of-bounds', false],
        ]);
        expect(bundles['stele-memory']!.results.analysis.comparisons[0].mechanism).toMatchObject({ pairs: 6, delivered: 6, used: 6 });
      }
      if (c.config.includes('primer')) {
        const b = bundles['primer-context-file']!;
        // The generation step emitted the very CLAUDE.md the with arm received; its cost is overhead, never eval cost.
        expect(readFileSync(join(b.dir, 'nodes', 'primer-generate', 'CLAUDE.md'), 'utf8')).toBe(
          readFileSync(join(ROOT, 'examples', 'cohorts', 'primer-context-file', 'context', 'CLAUDE.md'), 'utf8'),
        );
        expect(b.results.analysis.cost_streams.overhead).toMatchObject({ usd: 0.0123, tokens: 4100 });
        expect(b.report).toContain('Overhead (separate stream, never added to eval cost): $0.0123, 4100 tokens');
      }
      if (c.config.includes('gortex')) {
        const cmp = bundles['gortex-mcp']!.results.analysis.comparisons;
        // (a)/(b)/(c) all reported, the negative row included; the ablation changes nothing on the fixture.
        for (const x of cmp) expect(x.outcomes.counts).toEqual({ a: 3, b: 1, c: 1, no_answer: 0 });
        expect(cmp[0].outcomes.tasks.find((t: { task: string }) => t.task === 'bug-discount-total').class).toBe('c');
        expect(bundles['gortex-prompt-ablation']!.results.analysis.comparisons[0].delta).toBe(0);
        expect(bundles['gortex-mcp']!.report).toContain('(c) hurt: 1');
      }
      if (c.config.includes('factorial')) {
        const f = bundles['coding-os-factorial']!.results.analysis.factorial;
        expect(f.status).toBe('ok');
        expect(f.main_effects.map((e: { name: string; estimate: number }) => [e.name, e.estimate])).toEqual([
          ['graph', 0.5],
          ['rules', 0.5],
        ]);
        expect(f.interaction.name).toBe('graph x rules');
        expect(f.interaction.estimate).toBeCloseTo(1 / 3, 10);
        expect(bundles['coding-os-factorial']!.report).toContain('## Factorial (graph x rules): ok');
      }

      // A second run executes nothing.
      const again = await cli('run', '--config', config, '--store', store, '--json');
      expect(again.code, again.stderr).toBe(0);
      expect((JSON.parse(again.stdout).nodes as { status: string }[]).filter((n) => n.status === 'executed')).toEqual([]);
    });
  }
});

