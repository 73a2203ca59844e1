// A perfect effect is not called noise: 12 tasks, each 0 of 2 in the control and 2 of 2 in the
// treatment, on an isolated backend (bubblewrap), end POSITIVE; an arm that changes nothing ends
// WITHIN NOISE and says why; two tasks that both flip are insufficient-n.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bubblewrapBackend } from '../sandboxes/bubblewrap.js';
import { calculatorTask, copyTask } from './fixtures.js';
import { Rig } from './rig.js';

const bwrap = await bubblewrapBackend.available();
const required = process.env['PAIRBENCH_REQUIRE_SANDBOXES'] === '1';

let rig: Rig;
beforeEach(() => {
  rig = new Rig();
  calculatorTask(rig.dir);
});
afterEach(() => rig.cleanup());

function cohort(tasks: string[]): string {
  const m = `{ task: [${tasks.join(', ')}], arm: [control, treatment, same], rep: 2 }`;
  const sandbox = '{ backend: bubblewrap, egress: none }';
  return `concurrency: { global: 2 }
steps:
  materialize: { kind: materialize, matrix: { task: [${tasks.join(', ')}] } }
  attempts:
    kind: run
    needs: [materialize]
    matrix: ${m}
    agent: { adapter: command, command: 'if [ "$ARM" = treatment ]; then sed -i "s/a - b/a + b/" src/add.mjs; fi' }
    arms: { control: { env: { ARM: control } }, treatment: { env: { ARM: treatment } }, same: { env: { ARM: same } } }
    sandbox: ${sandbox}
  verify: { kind: verify, needs: [materialize, attempts], matrix: ${m}, sandbox: ${sandbox} }
  audit: { kind: audit, needs: [attempts, verify], matrix: ${m} }
  cohort: { kind: analyze, needs: [audit], control: control, treatments: [treatment, same], bootstrap: { resamples: 200, seed: 1 } }
`;
}

describe.skipIf(!bwrap.ok && !required)('no spread: every task moved alike (bubblewrap)', () => {
  it('12 tasks that all flip are POSITIVE; an arm that changes nothing is WITHIN NOISE, with why; 2 that flip are insufficient-n', async () => {
    const tasks = ['fix-add', ...Array.from({ length: 11 }, (_, i) => `fix-add-${i + 2}`)];
    for (const t of tasks.slice(1)) copyTask(rig.dir, 'fix-add', t);
    rig.write('bench.config.yaml', cohort(tasks));
    const r = await rig.cli('run');
    expect(r.code, r.stderr).toBe(0);
    const analysis = await rig.outputJson('cohort', 'analysis.json');
    const [flip, same] = analysis.comparisons;
    expect(flip).toMatchObject({ treatment: 'treatment', verdict: 'positive', delta: 1 });
    expect(flip.ci).toMatchObject({ low: 1, high: 1 });
    expect(flip.ci.degenerate).toMatch(/no spread/);
    expect(flip.test.p).toBeCloseTo(2 / 4096, 12);
    expect(same).toMatchObject({ treatment: 'same', verdict: 'within-noise', delta: 0 });
    expect(same.problems).toContainEqual(expect.objectContaining({ reason: 'no-claim', condition: 'test' }));
    expect(r.stdout).toMatch(/cohort: treatment vs control {2}POSITIVE {2}\+100\.0 pp/);
    expect(r.stdout).toMatch(/cohort: same vs control {2}WITHIN NOISE/);

    const two = new Rig();
    try {
      calculatorTask(two.dir);
      copyTask(two.dir, 'fix-add', 'fix-add-2');
      two.write('bench.config.yaml', cohort(['fix-add', 'fix-add-2']));
      expect((await two.cli('run')).code).toBe(0);
      const a = await two.outputJson('cohort', 'analysis.json');
      expect(a.comparisons[0]).toMatchObject({ verdict: 'insufficient-n', delta: 1 });
    } finally {
      two.cleanup();
    }
  });
});
