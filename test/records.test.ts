import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { main } from '../cli/main.js';
import { calculatorTask } from './fixtures.js';
import { Rig } from './rig.js';

// What a bundle says about where it came from: the registered freeze of its cohort version,
// the time of its first attempt, and -- on a store shared by several configs -- the config
// that was asked for, never the one that happened to run last.

function config(agentCommand: string, wait = '', cohort = 'context-file'): string {
  return `steps:
  materialize: { kind: materialize, matrix: { task: [fix-add] } }
  attempts:
    kind: run
    needs: [materialize]
    matrix: &attempt { task: [fix-add], arm: [control, treatment], rep: 2 }
    agent: { adapter: command, command: '${wait}${agentCommand}' }
    arms:
      control: {}
      treatment: { files: { CLAUDE.md: fixtures/CLAUDE.md } }
    sandbox: { backend: local, egress: open }
  verify:
    kind: verify
    needs: [materialize, attempts]
    matrix: *attempt
    sandbox: { backend: local, egress: open }
  audit: { kind: audit, needs: [attempts, verify], matrix: *attempt }
  ${cohort}:
    kind: analyze
    needs: [audit]
    control: control
    treatments: [treatment]
    bootstrap: { resamples: 200, seed: 1 }
  export:
    kind: export
    needs: [attempts, audit, ${cohort}]
    cohort: ${cohort}
`;
}

const ONLY_WITH_CONTEXT = 'if grep -qs "plus operator" CLAUDE.md; then sed -i "s/a - b/a + b/" src/add.mjs; fi';
const ALWAYS = 'sed -i "s/a - b/a + b/" src/add.mjs';

let rig: Rig;
let out: string;
beforeEach(() => {
  rig = new Rig();
  calculatorTask(rig.dir);
  rig.write('fixtures/CLAUDE.md', 'add() uses the plus operator.\n');
  out = mkdtempSync(join(tmpdir(), 'pairbench-records-'));
});
afterEach(() => {
  rig.cleanup();
  rmSync(out, { recursive: true, force: true });
});

async function cli(configFile: string, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await main([...args, '--config', join(rig.dir, configFile)], {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { write: (s: string) => (stderr += s) },
    env: { PATH: process.env['PATH'], CI: '1' },
  });
  return { code, stdout, stderr };
}

describe('records', () => {
  it('two configs sharing one store each export their own bundle, whichever ran last', async () => {
    // Two cohorts (the registry keys cohorts by name); both configs name their export step "export".
    rig.write('a.config.yaml', config(ONLY_WITH_CONTEXT, '', 'cohort-a'));
    rig.write('b.config.yaml', config(ALWAYS, '', 'cohort-b'));
    expect((await cli('a.config.yaml', 'run')).code).toBe(0);
    expect((await cli('b.config.yaml', 'run')).code).toBe(0);
    for (const [file, other] of [
      ['a.config.yaml', 'b.config.yaml'],
      ['b.config.yaml', 'a.config.yaml'],
    ] as const) {
      const dest = join(out, file);
      const r = await cli(file, 'export', '--out', dest);
      expect(r.code, r.stderr).toBe(0);
      expect(readFileSync(join(dest, 'config', 'bench.config.yaml'), 'utf8')).toBe(rig.read(file));
      expect(readFileSync(join(dest, 'config', 'bench.config.yaml'), 'utf8')).not.toBe(rig.read(other));
      const passes = JSON.parse(readFileSync(join(dest, 'results.json'), 'utf8')).attempts.filter(
        (x: { arm: string; pass: boolean }) => x.arm === 'control' && x.pass,
      ).length;
      expect(passes, file).toBe(file === 'a.config.yaml' ? 0 : 2);
    }
    // A config whose export was never built has no bundle, even though the store holds others.
    rig.write('c.config.yaml', config(ONLY_WITH_CONTEXT, '', 'cohort-c'));
    const c = await cli('c.config.yaml', 'export', '--out', join(out, 'c'));
    expect(c.code).not.toBe(0);
    expect(c.stderr).toContain('export has no bundle built from this config');
  });

  it('the bundle carries the registered freeze: cohort version, freeze digest, frozen fields, first attempt', async () => {
    rig.write('bench.config.yaml', config(ONLY_WITH_CONTEXT));
    const frozen = JSON.parse((await rig.cli('freeze', '--json')).stdout).cohorts[0];
    expect((await rig.cli('run')).code).toBe(0);
    expect((await rig.cli('export', '--out', join(out, 'b'))).code).toBe(0);
    const freeze = JSON.parse(readFileSync(join(out, 'b', 'config', 'freeze.json'), 'utf8'));
    expect(freeze).toMatchObject({ cohort: 'context-file', version: 1, freeze_digest: frozen.freeze_digest, frozen_fields: frozen.fields });
    expect(freeze.freeze_digest).not.toBe(freeze.config_digest);
    const report = readFileSync(join(out, 'b', 'report.md'), 'utf8');
    expect(report).toContain('# pairbench: context-file v1');
    expect(report).toContain(`freeze \`${frozen.freeze_digest}\``);
    // The registry bound the version as its first attempt started (not when the run ended): at or before the bundle's earliest attempt.
    const registered = JSON.parse((await rig.cli('history', '--json')).stdout).cohorts[0].versions[0];
    const attempts = JSON.parse(readFileSync(join(out, 'b', 'results.json'), 'utf8')).attempts as { started_at: string; ended_at: string }[];
    const lastEnd = attempts
      .map((a) => a.ended_at)
      .sort()
      .pop()!;
    expect(registered.bound_by).toMatch(/^attempt attempts\//);
    expect(registered.bound_at <= freeze.first_attempt_at).toBe(true);
    expect(Date.parse(freeze.first_attempt_at) - Date.parse(registered.bound_at)).toBeLessThan(10_000);
    expect(registered.bound_at < lastEnd).toBe(true);
    expect(freeze.last_attempt_at).toBe(lastEnd);
  });

  it('a run killed after its first attempt has still bound the version: a changed frozen field is refused', async () => {
    // Attempts take a while; the run is killed (no cleanup at all) while they are under way.
    rig.write('bench.config.yaml', config(ALWAYS, 'sleep 3; '));
    const child = rig.spawn('run', '--jobs', '1');
    let bound: string | null = null;
    for (let i = 0; i < 100 && !bound; i++) {
      await new Promise((r) => setTimeout(r, 200));
      const h = JSON.parse((await rig.cli('history', '--json')).stdout);
      bound = h.cohorts[0]?.versions[0]?.bound_at ?? null;
    }
    child.kill('SIGKILL');
    await child.done;
    expect(bound, 'the registry never recorded the first attempt while the run was going').not.toBeNull();
    rig.write('tasks/fix-add/verifier/test_add.mjs', "const { add } = await import(process.cwd() + '/src/add.mjs');\nif (add(2, 2) !== 4) process.exit(1);\n");
    const refused = await rig.cli('run');
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('cohort context-file version 1 is frozen');
  });
});
