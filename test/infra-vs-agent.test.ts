import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claudeBinary } from '../agents/claude-code.js';
import { ensureTestImage } from './docker-image.js';
import { calculatorTask } from './fixtures.js';
import { Rig } from './rig.js';

// An agent that cannot start in its sandbox is an infrastructure fault, never the agent's
// failure. The real case: the test image carries node and the libraries node links, but
// Claude Code's binary also needs librt.so.1, which the image lacks -- the real CLI
// cannot start there. Before: 100% agent-crash, accepted, scored 0, silent WITHIN NOISE.

const dockerUp = (() => {
  try {
    execFileSync('docker', ['info'], { stdio: 'ignore', timeout: 10_000 });
    return true;
  } catch {
    return false;
  }
})();

const SCRIPT = JSON.stringify({
  turns: [
    {
      tool_calls: [{ name: 'Bash', input: { command: "sed -i 's/a - b/a + b/' src/add.mjs", description: 'fix add' } }],
      usage: { input_tokens: 900, output_tokens: 30 },
    },
    { text: 'Fixed.', usage: { input_tokens: 950, output_tokens: 5 } },
  ],
});

function config(sandbox: string): string {
  return `steps:
  materialize:
    kind: materialize
    matrix: { task: [fix-add] }
  attempts:
    kind: run
    needs: [materialize]
    matrix: &attempt { task: [fix-add], arm: [control, treatment], rep: 2 }
    agent: { adapter: claude-code, model: claude-fake-1 }
    arms:
      control: {}
      treatment: { files: { CLAUDE.md: fixtures/CLAUDE.md } }
    limits: { turns: 6, wall_seconds: 60 }
    sandbox: ${sandbox}
    model: { fake_script: fixtures/fix-add.script.json }
  verify:
    kind: verify
    needs: [materialize, attempts]
    matrix: *attempt
    sandbox: ${sandbox}
  audit:
    kind: audit
    needs: [attempts, verify]
    matrix: *attempt
  cohort:
    kind: analyze
    needs: [audit]
    control: control
    treatments: [treatment]
    bootstrap: { resamples: 200, seed: 1 }
  export:
    kind: export
    needs: [attempts, audit, cohort]
    cohort: cohort
`;
}

describe.skipIf(!dockerUp || !existsSync(claudeBinary()))('an agent that cannot start in its sandbox', () => {
  let rig: Rig;
  let image: string;
  beforeAll(async () => {
    image = await ensureTestImage();
    rig = new Rig();
    calculatorTask(rig.dir);
    rig.write('fixtures/CLAUDE.md', 'House rule: add() uses the plus operator.\n');
    rig.write('fixtures/fix-add.script.json', SCRIPT);
    rig.write('bench.config.yaml', config(`{ backend: docker, egress: none, image: "${image}" }`));
  });
  afterAll(() => rig?.cleanup());

  it('doctor runs a canary turn in the configured image and names the missing library before anything is spent', async () => {
    const r = await rig.cli('doctor', '--json');
    const out = JSON.parse(r.stdout) as { ok: boolean; checks: { name: string; ok: boolean; detail: string; fix: string | null }[] };
    const canary = out.checks.find((c) => c.name.startsWith('agent canary'));
    expect(canary, r.stdout).toBeDefined();
    expect(canary!.name).toContain(`claude-code 2.1.197 in docker image ${image}`);
    expect(canary!.ok).toBe(false);
    expect(canary!.detail).toMatch(/agent did not start: .*before its first model request: .*librt\.so\.1/);
    expect(canary!.fix).toMatch(/library/);
    // Everything else was fine: the canary is what caught it.
    expect(out.checks.filter((c) => !c.ok).map((c) => c.name)).toEqual([canary!.name]);
    expect(r.code).toBe(1);
    // Nothing was recorded: no attempt is cached, the canary spent nothing.
    const plan = JSON.parse((await rig.cli('plan', '--json')).stdout) as { nodes: { node: string; status: string }[] };
    expect(plan.nodes.filter((n) => n.node.startsWith('attempts/')).every((n) => n.status === 'run')).toBe(true);
  });

  it('the cohort excludes every attempt as infrastructure with the cause named, the headline warns, and each retry stays on record', async () => {
    const first = await rig.cli('run');
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toMatch(/warning: cohort: arm "control": 2 of 2 tries were infrastructure faults/);
    expect(first.stdout).toMatch(/cohort: treatment vs control {2}INVALID/);
    // Nothing was cached (an infrastructure fault is retried): the bundle is read as a user would.
    const out = mkdtempSync(join(tmpdir(), 'pairbench-infra-bundle-'));
    const bundleJson = (b: string, path: string) => JSON.parse(readFileSync(join(out, b, path), 'utf8'));
    try {
      const ex = await rig.cli('export', '--out', join(out, 'b1'));
      expect(ex.code, ex.stderr).toBe(0);
      for (const arm of ['control', 'treatment']) {
        for (const rep of [1, 2]) {
          const result = bundleJson('b1', `nodes/attempts/fix-add/${arm}/${rep}/result.json`);
          expect(result).toMatchObject({ exit_reason: 'infra-error', infra_kind: 'agent-start' });
          expect(result.infra_error).toMatch(/^agent did not start: exit code \d+ before its first model request: .*librt\.so\.1/);
          expect(result.turns).toBe(0);
          expect(result.cost_confidence).toBe('none');
          const audit = bundleJson('b1', `nodes/audit/fix-add/${arm}/${rep}/audit.json`);
          expect(audit).toMatchObject({ admission: 'excluded', reason_code: 'infra-agent-start', pass: null, infra_error: true });
          expect(audit.infra_cause).toMatch(/librt\.so\.1/);
        }
      }
      // Never scored: no delta, and the reader is told why before any verdict.
      const analysis = bundleJson('b1', 'results.json').analysis;
      expect(analysis.comparisons[0].verdict).toBe('invalid');
      expect(analysis.comparisons[0].delta).toBeNull();
      const infra = analysis.warnings.filter((w: { kind: string }) => w.kind === 'infra');
      expect(infra.map((w: { arm: string }) => w.arm)).toEqual(['control', 'treatment']);
      expect(infra[0].message).toMatch(
        /^arm "control": 2 of 2 tries were infrastructure faults \(excluded, never scored\): agent did not start: .*librt\.so\.1/,
      );
      const report = readFileSync(join(out, 'b1', 'report.md'), 'utf8');
      // The verifier ran in the image by ID: its environment is pinned, and the report says so.
      expect(report).toContain(`Verifier: image ${image}, pinned by ID in every verify key`);
      const warning = report.indexOf('⚠ **Warning:** arm "control": 2 of 2 tries were infrastructure faults');
      expect(warning).toBeGreaterThan(0);
      expect(warning).toBeLessThan(report.indexOf('## Verdicts'));
      expect(readFileSync(join(out, 'b1', 'report.html'), 'utf8')).toMatch(/<section class="warnings" role="alert"[^]*librt\.so\.1[^]*<section id="verdicts">/);

      // The next run retries every attempt and keeps the first try on record.
      const second = await rig.cli('run', '--json');
      const nodes = JSON.parse(second.stdout).nodes as { node: string; status: string }[];
      expect(nodes.filter((n) => n.node.startsWith('attempts/')).map((n) => n.status)).toEqual(['executed', 'executed', 'executed', 'executed']);
      const ex2 = await rig.cli('export', '--out', join(out, 'b2'));
      expect(ex2.code, ex2.stderr).toBe(0);
      const audit = bundleJson('b2', 'nodes/audit/fix-add/control/1/audit.json');
      expect(audit.tries).toHaveLength(1);
      expect(audit.tries[0]).toMatchObject({ exit_reason: 'infra-error' });
      expect(audit.tries[0].infra_error).toMatch(/librt\.so\.1/);
      // Rates count every try: 2 attempts, 4 tries, 4 infrastructure faults.
      const control = bundleJson('b2', 'results.json').analysis.arms.find((a: { arm: string }) => a.arm === 'control');
      expect(control).toMatchObject({ n_attempts: 2, n_tries: 4, n_infra_errors: 4, infra_error_rate: 1 });
      expect(bundleJson('b2', 'nodes/attempts/fix-add/control/1/earlier-tries/01/result.json').infra_error).toMatch(/librt\.so\.1/);
      expect((await rig.cli('verify-bundle', join(out, 'b2'))).code).toBe(0);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });

  it('the same step in a sandbox where the agent can start passes the canary', async () => {
    const ok = new Rig();
    try {
      calculatorTask(ok.dir);
      ok.write('fixtures/CLAUDE.md', 'House rule: add() uses the plus operator.\n');
      ok.write('fixtures/fix-add.script.json', SCRIPT);
      ok.write('bench.config.yaml', config('{ backend: bubblewrap, egress: none }'));
      const r = await ok.cli('doctor', '--json');
      const canary = (JSON.parse(r.stdout) as { checks: { name: string; ok: boolean; detail: string }[] }).checks.find((c) =>
        c.name.startsWith('agent canary'),
      );
      expect(canary, r.stdout).toMatchObject({ ok: true });
      expect(canary!.detail).toMatch(/reached the scripted model/);
    } finally {
      ok.cleanup();
    }
  });
});
