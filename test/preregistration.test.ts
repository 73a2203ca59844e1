import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { calculatorTask } from './fixtures.js';
import { Rig } from './rig.js';

let rig: Rig;
beforeEach(() => {
  rig = new Rig();
  calculatorTask(rig.dir);
  rig.write('fixtures/CLAUDE.md', 'Always use + in add().\n');
});
afterEach(() => rig.cleanup());

function config(version: number, extra = ''): string {
  return `steps:
  materialize: { kind: materialize, matrix: { task: [fix-add] } }
  attempts:
    kind: run
    needs: [materialize]
    matrix: { task: [fix-add], arm: [control, treatment], rep: 2 }
    agent: { adapter: command, command: 'if [ -f CLAUDE.md ]; then sed -i "s/a - b/a + b/" src/add.mjs; fi' }
    arms:
      control: {}
      treatment: { files: { CLAUDE.md: fixtures/CLAUDE.md } }
    sandbox: { backend: local, egress: open }
  verify:
    kind: verify
    needs: [materialize, attempts]
    matrix: { task: [fix-add], arm: [control, treatment], rep: 2 }
    sandbox: { backend: local, egress: open }
  audit:
    kind: audit
    needs: [attempts, verify]
    matrix: { task: [fix-add], arm: [control, treatment], rep: 2 }
  context-file:
    kind: analyze
    version: ${version}
    needs: [audit]
    control: control
    treatments: [treatment]
    bootstrap: { resamples: 200, seed: 1 }
${extra}`;
}

describe('preregistration', () => {
  it('refuses a changed frozen field after a run, naming it; a new version runs, reuses what is valid, and history lists both', async () => {
    rig.write('bench.config.yaml', config(1));
    const first = await rig.cli('run');
    expect(first.code, first.stderr).toBe(0);
    expect(first.stderr).toContain('cohort context-file version 1 registered');

    // Change the verifier: a frozen field.
    rig.write('tasks/fix-add/verifier/test_add.mjs', "const { add } = await import(process.cwd() + '/src/add.mjs');\nif (add(2, 2) !== 4) process.exit(1);\n");
    const refused = await rig.cli('run');
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('cohort context-file version 1 is frozen');
    expect(refused.stderr).toMatch(/task fix-add: verifier: [0-9a-f]{12} -> [0-9a-f]{12}/);
    expect(refused.stderr).toContain('bump `version` in steps.context-file');

    // Adding a metric (changing the analysis) is refused too.
    rig.write(
      'tasks/fix-add/verifier/test_add.mjs',
      "const { add } = await import(process.cwd() + '/src/add.mjs');\nif (add(2, 3) !== 5) { process.exit(1); }\nconsole.log('ok');\n",
    );
    rig.write('bench.config.yaml', config(1, '    weights: { input: 1, cache_write: 1, cache_read: 1, output: 1 }\n'));
    const metric = await rig.cli('run');
    expect(metric.code).toBe(2);
    expect(metric.stderr).toContain('analysis (arms, metrics, weights, bootstrap, validity floor, thresholds)');

    // A new version registers, runs, and reuses the attempts that are still valid.
    rig.clearExecutions();
    rig.write('bench.config.yaml', config(2, '    weights: { input: 1, cache_write: 1, cache_read: 1, output: 1 }\n'));
    const second = await rig.cli('run');
    expect(second.code, second.stderr).toBe(0);
    expect(second.stderr).toContain('cohort context-file version 2 registered');
    expect(second.stderr).toContain('cohort context-file version 2: reused 4 attempt(s) first produced by version 1');

    const history = await rig.cli('history');
    expect(history.stdout).toMatch(/version 1 {2}freeze [0-9a-f]{12} {2}frozen \S+ {2}first attempt \S+ {2}attempts executed 4/);
    expect(history.stdout).toMatch(/version 2 {2}freeze [0-9a-f]{12} {2}frozen \S+ {2}first attempt \(none yet\) {2}attempts executed 0/);
    expect(history.stdout).toContain('treatment vs control');
    const json = JSON.parse((await rig.cli('history', '--json')).stdout);
    expect(json.cohorts[0].versions.map((v: { version: number }) => v.version)).toEqual([1, 2]);
  });

  it('freeze records the digest before any attempt; a change before the first attempt re-freezes', async () => {
    rig.write('bench.config.yaml', config(1));
    const f = await rig.cli('freeze');
    expect(f.code).toBe(0);
    expect(f.stdout).toMatch(/cohort context-file version 1: freeze [0-9a-f]{64}/);
    rig.write('bench.config.yaml', config(1).replace('rep: 2', 'rep: 3').replace('rep: 2', 'rep: 3').replace('rep: 2', 'rep: 3'));
    const again = await rig.cli('freeze');
    expect(again.stdout).toContain('had no attempts yet: re-frozen');
  });
});
