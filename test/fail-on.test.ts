// `run --fail-on LIST`: the gate a pull request's check rests on. Its cases come from the
// verdicts themselves (stats/verdicts.ts): for each, the gate fails exactly when the run's
// comparison has it, and `unisolated` fails any comparison an unisolated arm ran in, whatever
// its verdict (a check must not be green on a run that isolated nothing).
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { VERDICTS } from '../stats/verdicts.js';
import { EXIT } from '../cli/command.js';
import { calculatorTask } from './fixtures.js';
import { Rig } from './rig.js';
import { cliOutputProblems } from './cli-schema.js';

const FIXED = 'echo ZXhwb3J0IGNvbnN0IGFkZCA9IChhLCBiKSA9PiBhICsgYjsK | base64 -d > src/add.mjs'; // add() fixed

const config = `steps:
  materialize: { kind: materialize, matrix: { task: [fix-add] } }
  attempts:
    kind: run
    needs: [materialize]
    matrix: { task: [fix-add], arm: [control, treatment], rep: 1 }
    agent: { adapter: command, command: 'if [ "$ARM" = treatment ]; then ${FIXED}; fi' }
    arms: { control: { env: { ARM: control } }, treatment: { env: { ARM: treatment } } }
    sandbox: { backend: local, egress: open }
  verify: { kind: verify, needs: [materialize, attempts], matrix: { task: [fix-add], arm: [control, treatment], rep: 1 }, sandbox: { backend: local, egress: open } }
  audit: { kind: audit, needs: [attempts, verify], matrix: { task: [fix-add], arm: [control, treatment], rep: 1 } }
  cohort: { kind: analyze, needs: [audit], control: control, treatments: [treatment] }
`;

describe('run --fail-on', () => {
  let rig: Rig;
  let verdict: string;
  beforeAll(async () => {
    rig = new Rig();
    calculatorTask(rig.dir);
    rig.write('bench.config.yaml', config);
    const r = await rig.cli('run', '--json');
    expect(r.code, r.stdout).toBe(0);
    const out = JSON.parse(r.stdout) as { comparisons: { verdict: string; unisolated_arms: string[] }[] };
    expect(out.comparisons).toHaveLength(1);
    verdict = out.comparisons[0]!.verdict;
    // The local backend isolates nothing: both arms are named whatever the verdict is.
    expect(out.comparisons[0]!.unisolated_arms.sort()).toEqual(['control', 'treatment']);
  });
  afterAll(() => rig.cleanup());

  for (const v of VERDICTS) {
    it(`--fail-on ${v}: exit ${EXIT.gateFailed} exactly when the comparison is ${v}${v === 'unisolated' ? ' or an arm ran unisolated' : ''}`, async () => {
      const fails = v === verdict || v === 'unisolated';
      const r = await rig.cli('run', '--fail-on', v);
      expect(r.code, r.stderr).toBe(fails ? EXIT.gateFailed : EXIT.ok);
      if (fails) expect(r.stderr).toMatch(new RegExp(`gate failed: --fail-on ${v}: cohort: treatment vs control is [A-Z -]+`));
      else expect(r.stderr).not.toContain('gate failed');
      const j = await rig.cli('run', '--fail-on', `${v},`, '--json');
      expect(j.code).toBe(r.code);
      expect(JSON.parse(j.stdout).gate).toMatchObject({ fail_on: [v], passed: !fails });
      expect(cliOutputProblems('#/definitions/run', JSON.parse(j.stdout))).toBe('');
    });
  }

  it('a gate with nothing to judge fails: a run of nodes that reach no analysis', async () => {
    const r = await rig.cli('run', 'attempts', '--fail-on', 'negative');
    expect(r.code).toBe(EXIT.gateFailed);
    expect(r.stderr).toContain('this run analysed no comparison, so there is no verdict to pass the gate');
  });

  it("a gate step's require.verdicts takes the same verdicts (the config schema lists them apart from the type)", () => {
    const schema = JSON.parse(readFileSync(join(dirname(fileURLToPath(import.meta.url)), '..', 'schemas', 'bench.config.schema.json'), 'utf8'));
    expect(schema.definitions.gateStep.properties.require.properties.verdicts.items.enum).toEqual([...VERDICTS]);
  });

  it('an unknown verdict is a usage error naming the verdicts, before anything runs', async () => {
    const r = await rig.cli('run', '--fail-on', 'negative,worse');
    expect(r.code).toBe(EXIT.usage);
    expect(r.stderr).toContain(`"worse" is not a verdict or a gate; the verdicts are ${VERDICTS.join(', ')}`);
  });
});
