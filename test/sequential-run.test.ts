import { createHash } from 'node:crypto';
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { calculatorTask } from './fixtures.js';
import { Rig } from './rig.js';
import type { CacheKey } from '../pipeline/digest.js';

// A sequential cohort run for real (the command agent, local backend): 12 independent
// tasks, 3 looks at 4, 8 and 12 families. Every family but one is helped by the treatment
// (the other is a tie: its verifier passes untouched), placed first in the preregistered
// order, so look 2 has 7 helped and 1 tie: exact sign-flip p = 2/128, Z = 2.42, over
// Pocock's 2.29. The cohort stops there and the last 4 families' attempts never run.
const IDS = Array.from({ length: 12 }, (_, i) => `fix-add-${String(i + 1).padStart(2, '0')}`);
const rank = (f: string) => createHash('sha256').update(`1:family:${f}`).digest('hex');
const ORDER = [...IDS].sort((a, b) => (rank(a) < rank(b) ? -1 : 1));
const TIE = ORDER[0]!;

let rig: Rig;
beforeEach(() => {
  rig = new Rig();
  calculatorTask(rig.dir);
  for (const id of IDS) {
    cpSync(join(rig.dir, 'tasks', 'fix-add'), join(rig.dir, 'tasks', id), { recursive: true });
    const yaml = join(rig.dir, 'tasks', id, 'task.yaml');
    writeFileSync(yaml, readFileSync(yaml, 'utf8').replace('id: fix-add', `id: ${id}`).replace('family: arithmetic', `family: ${id}`));
  }
  rig.write(`tasks/${TIE}/verifier/test_add.mjs`, "console.log('passes whatever the attempt did');\n");
  rig.write('fixtures/CLAUDE.md', 'Always use + in add().\n');
});
afterEach(() => rig.cleanup());

function config(stopping: string, version = 1): string {
  const ran = join(rig.dir, 'ran.log');
  return `steps:
  materialize: { kind: materialize, matrix: { task: [${IDS.join(', ')}] } }
  attempts:
    kind: run
    needs: [materialize]
    matrix: &attempt { task: [${IDS.join(', ')}], arm: [control, treatment], rep: 1 }
    agent: { adapter: command, command: 'echo "$PWD" >> ${ran}; if [ -f CLAUDE.md ]; then sed -i "s/a - b/a + b/" src/add.mjs; fi' }
    arms:
      control: {}
      treatment: { files: { CLAUDE.md: fixtures/CLAUDE.md } }
    sandbox: { backend: local, egress: open }
    order_seed: 1
  verify:
    kind: verify
    needs: [materialize, attempts]
    matrix: *attempt
    sandbox: { backend: local, egress: open }
  audit:
    kind: audit
    needs: [attempts, verify]
    matrix: *attempt
  cohort:
    kind: analyze
    version: ${version}
    needs: [audit]
    control: control
    treatments: [treatment]
    bootstrap: { resamples: 200, seed: 1 }
    stopping: ${stopping}
`;
}

const POCOCK = '{ rule: group-sequential, looks: 3, spending: pocock, futility: non-binding, power: 0.9 }';

describe('sequential stopping in a run', () => {
  it('takes each look after its families, stops scheduling when a boundary is crossed, and a warm run is a no-op', async () => {
    rig.write('bench.config.yaml', config(POCOCK));
    const plan = await rig.cli('plan', '--json');
    expect(plan.code, plan.stderr).toBe(0);
    const order = (JSON.parse(plan.stdout).nodes as { node: string }[]).map((n) => n.node);
    // Look 1 comes after every attempt of the first 4 families and before any of the next 4.
    const at = (id: string) => order.indexOf(id);
    for (const f of ORDER.slice(0, 4)) expect(at(`audit/${f}/treatment/1`)).toBeLessThan(at('cohort/look-1'));
    for (const f of ORDER.slice(4, 8)) expect(at(`attempts/${f}/control/1`)).toBeGreaterThan(at('cohort/look-1'));

    const run = await rig.cli('run', '--json');
    expect(run.code, run.stderr).toBe(0);
    // Only the first 8 families' 16 attempts ran an agent.
    expect(rig.read('ran.log').trim().split('\n')).toHaveLength(16);
    const result = await rig.cli('show', 'cohort', 'analysis.json');
    expect(result.code, result.stderr).toBe(0);
    const analysis = JSON.parse(result.stdout);
    const seq = analysis.sequential;
    expect(seq.looks.map((l: { decision: string }) => l.decision)).toEqual(['continue', 'efficacy', 'stopped-earlier']);
    expect(seq.looks[1].statistic).toBeCloseTo(2.4176, 3);
    expect(seq.attempts_not_run).toBe(8);
    const comparison = analysis.comparisons[0];
    expect(comparison.ci.method).toBe('repeated-ci');
    expect(comparison.ci.high).toBeLessThanOrEqual(1);

    const again = await rig.cli('run');
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr + again.stdout).toMatch(/0 ran, \d+ cached/);
    expect(rig.read('ran.log').trim().split('\n')).toHaveLength(16);
  });

  it('with a confidence sequence, looks after every family and stops once it excludes 0', async () => {
    // Every family helped (the tie's verifier is the real one again): the betting sequence's lower end passes 0 at family 10 (-0.007 at 9, +0.057 at 10).
    cpSync(join(rig.dir, 'tasks', 'fix-add', 'verifier'), join(rig.dir, 'tasks', TIE, 'verifier'), { recursive: true });
    rig.write('bench.config.yaml', config('{ rule: confidence-sequence }'));
    const run = await rig.cli('run');
    expect(run.code, run.stderr).toBe(0);
    const ranNow = rig.read('ran.log').trim().split('\n').length;
    const analysis = JSON.parse((await rig.cli('show', 'cohort', 'analysis.json')).stdout);
    expect(ranNow).toBe(20);
    expect(analysis.sequential.stopped_at).toBe(10);
    expect(analysis.sequential.attempts_not_run).toBe(4);
    expect(analysis.sequential.looks).toHaveLength(12);
    // The local backend: the sequence crossed, and no claim is made without isolation.
    expect(analysis.comparisons[0]).toMatchObject({ verdict: 'unisolated', ci: { method: 'betting-cs' } });
    expect(analysis.comparisons[0].problems.map((p: { message: string }) => p.message).join('\n')).toMatch(/would be positive, but no claim is made/);
    expect(analysis.comparisons[0].ci.low).toBeGreaterThan(0);
  });

  it('refuses a changed stopping rule after the first attempt, naming it', async () => {
    rig.write('bench.config.yaml', config(POCOCK));
    expect((await rig.cli('run')).code).toBe(0);
    rig.write('bench.config.yaml', config(POCOCK.replace('looks: 3', 'looks: 4')));
    const refused = await rig.cli('run');
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('cohort cohort version 1 is frozen');
    expect(refused.stderr).toMatch(/cohort: spec\.stopping\.looks: 3 -> 4/);
    // Raising the maximum is a new version.
    rig.write('bench.config.yaml', config(POCOCK.replace('looks: 3', 'looks: 4'), 2));
    expect((await rig.cli('run')).code).toBe(0);
  });
});

describe('a look and infrastructure faults', () => {
  it('waits (fails, so it is not cached) while a family has an attempt with an infrastructure fault to retry', async () => {
    const { mkdtempSync, mkdirSync, rmSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { Store } = await import('../pipeline/store/store.js');
    const { lookStep } = await import('../steps/analyze-step.js');
    const { makeAttempt } = await import('../stats/synthetic.js');
    const dir = mkdtempSync(join(tmpdir(), 'pairbench-look-'));
    try {
      const store = new Store(join(dir, 'store'));
      store.init();
      const families = Array.from({ length: 12 }, (_, i) => `f${String(i).padStart(2, '0')}`);
      // Look 2 covers the first 8 families; family f05's treatment attempt had an infrastructure fault.
      const upstream = families.slice(0, 8).flatMap((family, i) =>
        (['control', 'treatment'] as const).map((arm) => {
          const record = makeAttempt({
            task: family,
            family,
            arm,
            rep: 1,
            pass: arm === 'treatment',
            ...(i === 5 && arm === 'treatment' ? { admission: 'excluded' as const, pass: null, infra_error: true } : {}),
          });
          const file = join(dir, `${family}-${arm}.json`);
          // As audit writes it: the record with the evidence behind its integrity flags.
          const mutation = { touched: [], out_of_bounds: [], verifier_owned: [], allowed_paths: ['src/**'] };
          writeFileSync(file, JSON.stringify({ ...record, mutation, leakage: [] }));
          return {
            node: `audit/${family}/${arm}/1`,
            key: createHash('sha256').update(`audit/${family}/${arm}/1`).digest('hex') as CacheKey,
            outputs: { 'audit.json': store.cas.putPath(file) },
          };
        }),
      );
      const step = {
        name: 'cohort',
        kind: 'analyze',
        spec: { kind: 'analyze', control: 'control', treatments: ['treatment'], stopping: { rule: 'group-sequential', looks: 3, spending: 'pocock' } },
      };
      const node = {
        id: 'cohort/look-2',
        step,
        kind: lookStep,
        matrix: { look: '2' },
        upstream: [],
        downstream: [],
        annotation: { schedule: [families.slice(0, 4), families.slice(4, 8), families.slice(8)] },
      };
      const workDir = join(dir, 'work');
      mkdirSync(workDir);
      const outcomes: string[] = [];
      const result = await lookStep.execute({
        node: node as never,
        config: {} as never,
        workDir,
        files: [],
        upstream,
        artifacts: store.cas,
        log: () => {},
        logFile: join(dir, 'look.log'),
        mirrorOf: (source) => store.mirrorPath(source),
        hostEnv: {},
        signal: new AbortController().signal,
        doNotCache: () => {},
        outcome: (word) => outcomes.push(word),
      });
      expect(result.ok).toBe(false);
      expect(result.ok ? '' : result.error.message).toContain('look 2 waits: family f05 has an attempt with an infrastructure fault');
      expect(outcomes).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
