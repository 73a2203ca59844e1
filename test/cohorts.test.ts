import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mcpToolNameOf } from '../agents/adapter.js';
import { claudeBinary } from '../agents/claude-code.js';
import { agentAdapters } from '../agents/index.js';
import { cli } from './cli-in-process.js';
import { loadConfig } from '../pipeline/config/load.js';
import { buildGraph } from '../pipeline/dag.js';
import type { CacheKey } from '../pipeline/digest.js';
import { lookup } from '../pipeline/caching/local-cache.js';
import { EARLIER_TRIES } from '../pipeline/step-kind.js';
import { Store } from '../pipeline/store/store.js';
import { builtinStepKinds } from '../steps/index.js';
import { Ajv } from 'ajv';
import { goldenStore } from './golden-store.js';

const checkResults = new Ajv({ allErrors: true, strict: false }).compile(
  JSON.parse(readFileSync(join(dirname(fileURLToPath(import.meta.url)), '..', 'schemas', 'results.schema.json'), 'utf8')),
);
const resultsProblems = (value: unknown): string => (checkResults(value) ? '' : JSON.stringify(checkResults.errors?.slice(0, 5)));

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
/** gortex's agent dimension, and the name each gives the graph server's tool (its adapter's). */
const GORTEX_AGENTS = ['claude-code', 'codex', 'gemini-cli'] as const;

const CASES: { config: string; tasks: number; verdicts: Verdicts; deltas?: Record<string, Record<string, number>> }[] = [
  { config: 'bench.config.yaml', tasks: 8, verdicts: { 'context-file': { 'claude-md vs control': ['positive', '+'] } } },
  {
    config: 'cohorts/stele-memory.yaml',
    tasks: 3,
    verdicts: {
      'stele-memory': { 'memory vs disabled': ['insufficient-n', '+'] },
      'stele-file-boundaries': { 'boundaries vs disabled': ['insufficient-n', '+'] },
    },
    // What cohorts/README.md says each reads, in pp: the value, not only the sign.
    deltas: { 'stele-memory': { 'memory vs disabled': 100 }, 'stele-file-boundaries': { 'boundaries vs disabled': 33.3 } },
  },
  { config: 'cohorts/primer-context-file.yaml', tasks: 3, verdicts: { 'primer-context-file': { 'with vs without': ['insufficient-n', '+'] } } },
  {
    // The seed's scale: 3 tasks in each of 5 categories (the families), one cell per agent.
    config: 'cohorts/gortex-mcp.yaml',
    tasks: 15,
    verdicts: Object.fromEntries(
      GORTEX_AGENTS.map((agent) => [
        `gortex-mcp-${agent}`,
        {
          'with-tools vs without-tools': ['insufficient-n', '+'],
          'with-tools-ablated vs without-tools': ['insufficient-n', '+'],
          'with-tools-ablated vs with-tools': ['insufficient-n', '0'],
        },
      ]),
    ) as Verdicts,
    deltas: Object.fromEntries(GORTEX_AGENTS.map((agent) => [`gortex-mcp-${agent}`, { 'with-tools vs without-tools': 26.7 }])),
  },
  {
    config: 'cohorts/agents-md-study.yaml',
    tasks: 3,
    verdicts: Object.fromEntries(
      ['agents-md-claude-code', 'agents-md-codex', 'agents-md-qwen-code'].map((cell) => [
        cell,
        { 'llm vs none': ['insufficient-n', '0'], 'human vs none': ['insufficient-n', '+'], 'human vs llm': ['insufficient-n', '+'] },
      ]),
    ) as Verdicts,
  },
  // 12 independent tasks under a group-sequential design of 3 looks: it stops at look 2.
  { config: 'cohorts/sequential-stopping.yaml', tasks: 12, verdicts: { 'sequential-stopping': { 'claude-md vs control': ['positive', '+'] } } },
  {
    config: 'cohorts/coding-os-factorial.yaml',
    tasks: 3,
    verdicts: {
      'coding-os-factorial': {
        'graph vs raw': ['insufficient-n', '+'],
        'rules vs raw': ['insufficient-n', '+'],
        'full vs raw': ['insufficient-n', '+'],
        'full vs graph': ['insufficient-n', '+'],
        'full vs rules': ['insufficient-n', '+'],
      },
    },
  },
];

const json = (path: string): any => JSON.parse(readFileSync(path, 'utf8'));

interface Bundle {
  dir: string;
  results: any;
  report: string;
}

/**
 * Outputs a built node wrote that its step kind does not declare (StepKind.outputs: what
 * `show` describes and readers name). A command step's outs are the user's: not checked.
 */
async function undeclaredOutputs(config: string, storeDir: string): Promise<string[]> {
  const loaded = loadConfig(config, { storeDir });
  if (!loaded.ok) throw new Error(loaded.error.map((d) => d.message).join('; '));
  const graph = buildGraph(loaded.value, builtinStepKinds);
  if (!graph.ok) throw new Error(graph.error.map((d) => d.message).join('; '));
  const planned = JSON.parse((await cli('plan', '--config', config, '--store', storeDir, '--json')).stdout) as {
    nodes: { node: string; status: string; key?: string }[];
  };
  const store = new Store(storeDir);
  const out: string[] = [];
  for (const e of planned.nodes) {
    const node = graph.value.byId.get(e.node)!;
    if (e.status !== 'cached' || node.kind.name === 'command') continue;
    const found = lookup(store, e.key as CacheKey);
    if (found.status !== 'hit') continue;
    const declared = new Set(node.kind.outputs(node.step).map((a) => a.name));
    for (const name of Object.keys(found.record.outputs))
      if (!declared.has(name) && name !== EARLIER_TRIES) out.push(`${node.id} (${node.kind.name}): ${name}`);
  }
  return out;
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

  it("the verifier image primer-context-file pins builds reproducibly: built again from this machine's files, the pinned ID", () => {
    // (On a machine whose node or libraries differ, it fails naming them and how to re-pin.)
    const again = spawnSync(process.execPath, [join(ROOT, 'scripts', 'build-verifier-image.mjs'), '--rebuild'], { encoding: 'utf8' });
    expect(again.status, again.stderr).toBe(0);
    expect(again.stdout).toBe(`verifier image ${json(join(ROOT, 'examples', 'cohorts', 'fixtures', 'verifier-image.json')).id}: the pinned one\n`);
  });

  for (const c of CASES) {
    it(`${c.config}: certifies, runs, verifies, audits, analyses and exports a verifiable bundle with the expected verdicts`, async () => {
      const config = join(ROOT, c.config);
      const store = mkdtempSync(join(tmpdir(), 'pairbench-cohort-'));
      stores.push(store);
      // Each config's end-to-end run is shared with other test files (built once from an empty store,
      // by whichever test asks first, and copied here); run again on the copy, it is a no-op.
      const golden = await goldenStore(c.config, store);
      expect(golden.stderr).toMatch(/^\d+ nodes: \d+ ran, \d+ cached, 0 failed, 0 skipped/m);
      const run = await cli('run', '--config', config, '--store', store);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stderr).toMatch(/^(\d+) nodes: 0 ran, \1 cached, 0 failed, 0 skipped/m);
      expect(await undeclaredOutputs(config, store)).toEqual([]);

      const out = join(store, 'bundles');
      const exp = await cli('export', '--config', config, '--store', store, '--out', out, '--json');
      expect(exp.code, exp.stderr + exp.stdout).toBe(0);
      const dirs = (JSON.parse(exp.stdout).bundles as { dir: string }[]).map((b) => b.dir);
      const bundles: Record<string, Bundle> = {};
      for (const dir of dirs) {
        const check = await cli('verify-bundle', dir);
        expect(check.code, check.stdout + check.stderr).toBe(0);
        const results = json(join(dir, 'results.json'));
        // Every field as published in schemas/results.schema.json (generated from the writer's type).
        expect(resultsProblems(results), `${dir}/results.json`).toBe('');
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
          b.results.analysis.comparisons.map((x: { treatment: string; control: string; verdict: string; delta: number | null }) => [
            `${x.treatment} vs ${x.control}`,
            [x.verdict, sign(x.delta)],
          ]),
        );
        expect(got).toEqual(want);
        for (const [comparison, pp] of Object.entries(c.deltas?.[cohort] ?? {})) {
          const x = b.results.analysis.comparisons.find((y: { treatment: string; control: string }) => `${y.treatment} vs ${y.control}` === comparison);
          expect(Math.round(x.delta * 1000) / 10, `${cohort} ${comparison}`).toBe(pp);
        }
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
        // Two cohorts over the same attempts, registered and analysed in one run: neither was chosen after the other's look.
        for (const cohort of ['stele-memory', 'stele-file-boundaries'])
          expect(json(join(bundles[cohort]!.dir, 'config', 'freeze.json')).prior_analyses, cohort).toEqual([]);
      }
      if (c.config.includes('primer')) {
        const b = bundles['primer-context-file']!;
        // The context step generated the very CLAUDE.md the with arm received; its cost is overhead, never eval cost.
        expect(readFileSync(join(b.dir, 'nodes', 'primer-generate', 'CLAUDE.md'), 'utf8')).toBe(
          readFileSync(join(ROOT, 'examples', 'cohorts', 'primer-context-file', 'context', 'CLAUDE.md'), 'utf8'),
        );
        // Scripted generation: its tokens are counted, no price is claimed.
        expect(b.results.analysis.cost_streams.overhead).toMatchObject({ usd: null, tokens: 4100, model_source: 'scripted' });
        expect(b.report).toContain('Overhead (separate stream, never added to eval cost): unpriced (its model was scripted), 4100 tokens');
        // Verified in the docker image the config pins by ID (scripts/build-verifier-image.mjs built it, reproducibly):
        // in every verdict's receipt, under the report's status bar and in its Method.
        const pinned = json(join(ROOT, 'examples', 'cohorts', 'fixtures', 'verifier-image.json')).id as string;
        expect(readFileSync(config, 'utf8')).toContain(`image: ${pinned}`);
        for (const task of readdirSync(join(b.dir, 'nodes', 'verify')))
          for (const arm of ['without', 'with'])
            expect(json(join(b.dir, 'nodes', 'verify', task, arm, '1', 'verdict.json')).sandbox).toEqual({
              backend: 'docker',
              isolation: 'container',
              image_id: pinned,
            });
        expect(b.report).toContain(`Verifier: image ${pinned}, pinned by ID in every verify key`);
        expect(b.report).toContain(`- Verifier environment: image ${pinned}, pinned by ID in every verify key`);
        expect(readFileSync(join(b.dir, 'report.html'), 'utf8')).toContain(`<span class="k">verifier</span><span class="v">image ${pinned}, pinned by ID`);
      }
      if (c.config.includes('sequential')) {
        const b = bundles['sequential-stopping']!;
        const seq = b.results.analysis.sequential;
        // Look 1 (4 families, all helped: Z 1.53) continues; look 2 (8 families, 7 helped and a tie: Z 2.42) crosses Pocock's 2.29.
        expect(seq.looks.map((l: { decision: string }) => l.decision)).toEqual(['continue', 'efficacy', 'stopped-earlier']);
        expect(seq.looks.map((l: { families: number }) => l.families)).toEqual([4, 8, 0]);
        expect(seq.stopped_at).toBe(2);
        // The last 4 families' 8 attempts never ran: they are in the bundle as not run, and in no estimate.
        expect(seq.attempts_not_run).toBe(8);
        expect(b.results.attempts).toHaveLength(16);
        const notRun = readdirSync(join(b.dir, 'nodes', 'attempts')).filter((t) =>
          existsSync(join(b.dir, 'nodes', 'attempts', t, 'control', '1', 'not-run.json')),
        );
        expect(notRun).toHaveLength(4);
        expect(b.results.analysis.comparisons[0].ci.method).toBe('repeated-ci');
        expect(b.report).toContain('## Sequential stopping (preregistered)');
        expect(b.report).toMatch(/\| 2 \| 8 of 8 \| 2\.418 \| ±2\.295 \| .+ \| efficacy \|/);
        expect(b.report).toContain('stopped at look 2 of 3 (efficacy); 8 attempt(s) not run');
        expect(b.report).toContain('biased away from zero');
        expect(b.report).toContain('repeated CI at the stopping look');
      }
      if (c.config.includes('gortex')) {
        for (const agent of GORTEX_AGENTS) {
          const b = bundles[`gortex-mcp-${agent}`]!;
          const cmp = b.results.analysis.comparisons;
          // (a)/(b)/(c) all reported, the negative row included; the ablation changes nothing on the fixture.
          for (const x of cmp.slice(0, 2)) expect(x.outcomes.counts, agent).toEqual({ a: 5, b: 9, c: 1, no_answer: 0 });
          expect(cmp[0].outcomes.tasks.find((t: { task: string }) => t.task === 'bug-discount-total').class).toBe('c');
          // Delivered in every pair (the tools offered under this agent's names), used where the script asks the graph (13 of 15 tasks).
          expect(cmp[0].mechanism, agent).toMatchObject({ pairs: 15, delivered: 15, used: 13 });
          // The ablation's delta is in the headline, beside the treatment it ablates.
          expect(cmp[2]).toMatchObject({ treatment: 'with-tools-ablated', control: 'with-tools', delta: 0 });
          expect(b.report).toContain('(c) hurt: 1');
          // The judge beside the verifier: one row per task, per category, with their agreement.
          const judge = b.results.analysis.judge;
          expect(judge.counts.judge).toEqual({ a: 5, b: 9, c: 1, unclassified: 0 });
          expect(judge.rows.find((r: { task: string }) => r.task === 'bug-discount-total')).toMatchObject({
            judge: 'c',
            verifier: 'c',
            category: 'bug-localization',
          });
          expect(b.report).toContain('## Judge and verifier: with-tools vs without-tools');
          expect(b.report).toMatch(/\| bug-localization \| 3 \| 0 \| 2 \| 1 \| 0 \|/);
          // The agent called the graph itself, by its own name for the tool: the script's one mcp action reached each.
          const calls = (arm: string) =>
            (
              json(join(b.dir, 'nodes', `attempts-${agent}`, 'impact-priceof', arm, '1', 'trajectory.json')).steps as {
                tool_calls?: { function_name: string }[];
              }[]
            ).flatMap((st) => (st.tool_calls ?? []).map((t) => t.function_name));
          expect(calls('with-tools')[0], agent).toBe(mcpToolNameOf(agentAdapters.get(agent)!, 'graph', 'graph_tests'));
          expect(
            calls('without-tools').some((n) => n.includes('graph')),
            agent,
          ).toBe(false);
        }
      }
      if (c.config.includes('agents-md')) {
        const repo = join(ROOT, 'examples', 'cohorts', 'fixtures', 'repos', 'inventory');
        const own = (p: string) =>
          createHash('sha256')
            .update(execFileSync('git', ['-C', repo, 'show', `8d901125bff43d763a9d6786c532b111ad883b1e:${p}`]))
            .digest('hex');
        for (const [cell, agent] of [
          ['agents-md-claude-code', 'claude-code'],
          ['agents-md-codex', 'codex'],
        ] as const) {
          const b = bundles[cell]!;
          // HUMAN received the repository's own files, byte for byte; NONE and LLM did not.
          const result = (arm: string) => json(join(b.dir, 'nodes', `attempts-${agent}`, 'stub-onHand-110442e3', arm, '1', 'result.json'));
          expect(result('human').restored).toEqual([
            { path: 'AGENTS.md', sha256: own('AGENTS.md') },
            { path: 'CLAUDE.md', sha256: own('CLAUDE.md') },
          ]);
          expect(result('none').restored).toBeUndefined();
          expect(result('llm').restored).toBeUndefined();
          // Per cell: each arm's resolution rate, and cost and steps change with intervals.
          expect(b.results.analysis.arms.map((a: { arm: string; completion_rate: number }) => [a.arm, a.completion_rate])).toEqual([
            ['none', 0],
            ['llm', 0],
            ['human', 1],
          ]);
          const human = b.results.analysis.comparisons.find((x: { treatment: string; control: string }) => x.treatment === 'human' && x.control === 'none');
          expect(human.cost_ratio).toBeGreaterThan(1); // the restored files ride along in every request
          expect(human.cost_ratio_ci.low).toBeGreaterThan(1);
          expect(human.paired.turns).toMatchObject({ n_pairs: 6, median: 0 });
          expect(b.report).toMatch(/- cost change: \+\d+\.\d% \(treatment \/ control weighted cost \d\.\d\dx; 95% CI \+\d+\.\d% to \+\d+\.\d%\)/);
          expect(b.report).toContain('- steps change, turns: 0 per attempt (paired median over 6 pairs; 95% CI 0 to 0)');
          expect(b.report).toContain('- steps change, tool calls: 0 per attempt');
        }
        // Codex reports reasoning tokens; the paired change is there too.
        expect(bundles['agents-md-codex']!.report).toContain('- reasoning tokens change:');
        expect(bundles['agents-md-claude-code']!.report).not.toContain('reasoning tokens change');
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
        expect(bundles['coding-os-factorial']!.report).toMatch(/^## Factorial \(graph x rules\)$/m);
        // Staged: the pilot ran raw and full, its gate opened, then the single-lever arms ran.
        const attempts = bundles['coding-os-factorial']!.results.attempts as { node: string; arm: string }[];
        expect(new Set(attempts.filter((a) => a.node.startsWith('audit-pilot/')).map((a) => a.arm))).toEqual(new Set(['raw', 'full']));
        expect(new Set(attempts.filter((a) => a.node.startsWith('audit/')).map((a) => a.arm))).toEqual(new Set(['graph', 'rules']));
        // The gate is frozen with the cohort (derived from the graph: it is upstream of the second stage).
        const frozen = json(join(bundles['coding-os-factorial']!.dir, 'config', 'freeze.json')).frozen_fields;
        expect(frozen['pilot-gate: require.min_effect']).toBe('0.1');
        expect(frozen['pilot-gate: kind']).toBe('"gate v2"');
      }

      // A second run executes nothing.
      const again = await cli('run', '--config', config, '--store', store, '--json');
      expect(again.code, again.stderr).toBe(0);
      expect((JSON.parse(again.stdout).nodes as { status: string }[]).filter((n) => n.status === 'executed')).toEqual([]);
    });
  }
});
