import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { calculatorTask } from './fixtures.js';
import { Rig } from './rig.js';

// `pairbench show`: a node's outputs and log from the store, as a user names them.
let rig: Rig;
beforeEach(() => (rig = new Rig()));
afterEach(() => rig.cleanup());

const COHORT = `steps:
  materialize: { kind: materialize, matrix: { task: [fix-add] } }
  attempts:
    kind: run
    needs: [materialize]
    matrix: { task: [fix-add], arm: [control], rep: 1 }
    agent: { adapter: command, command: 'sed -i "s/a - b/a + b/" src/add.mjs; echo fixed' }
    arms: { control: {} }
    sandbox: { backend: local, egress: open }
`;

describe('pairbench show', () => {
  it('lists a node’s outputs, prints one, a file inside a directory output, and the log', async () => {
    calculatorTask(rig.dir);
    rig.write('bench.config.yaml', COHORT);
    expect((await rig.cli('run')).code).toBe(0);

    const list = await rig.cli('show', 'attempts/fix-add/control/1');
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout).toMatch(/^attempts\/fix-add\/control\/1:$/m);
    for (const name of ['result.json', 'changes.json', 'changed', 'agent.log', 'log'])
      expect(list.stdout).toMatch(new RegExp(`^  ${name.replace('.', '\\.')} +(file|dir|log) `, 'm'));
    // Each output with what it is, as the run kind declares it.
    expect(list.stdout).toMatch(/^ {2}result\.json +file +\d+ bytes +[0-9a-f]{12} {2}\(the attempt's result: exit reason, turns, /m);
    expect(list.stdout).toMatch(/^ {2}log +log +[0-9a-f]{12} {2}\(what the node printed while it ran\)$/m);

    const result = await rig.cli('show', 'attempts/fix-add/control/1', 'result.json');
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(await rig.outputText('attempts/fix-add/control/1', 'result.json'));
    expect(JSON.parse(result.stdout).exit_reason).toBe('done');

    // A path inside a directory output: the changed file, and the materialized tree's file.
    expect((await rig.cli('show', 'attempts/fix-add/control/1', 'changed/src/add.mjs')).stdout).toBe('export const add = (a, b) => a + b;\n');
    expect((await rig.cli('show', 'materialize/fix-add', 'tree/src/add.mjs')).stdout).toBe('export const add = (a, b) => a - b;\n');
    const dir = await rig.cli('show', 'materialize/fix-add', 'tree');
    expect(dir.stdout).toMatch(/^ {2}src +dir /m);
    expect((await rig.cli('show', 'attempts/fix-add/control/1', 'log')).stdout).toContain('attempts/fix-add/control/1: done');

    const json = JSON.parse((await rig.cli('show', 'attempts/fix-add/control/1', 'agent.log', '--json')).stdout);
    expect(json).toMatchObject({ ok: true, node: 'attempts/fix-add/control/1', output: 'agent.log' });
    expect(json.text).toContain('fixed');
    expect(json.digest).toMatch(/^[0-9a-f]{64}$/);
  });

  it('names what is missing: an unknown output (exit 2, with the outputs there are), a node not built (exit 1)', async () => {
    calculatorTask(rig.dir);
    rig.write('bench.config.yaml', COHORT);
    const before = await rig.cli('show', 'attempts/fix-add/control/1', 'result.json');
    expect(before.code).toBe(1);
    expect(before.stderr).toContain('has not been built by this config');
    expect(before.stderr).toContain("run 'pairbench run attempts/fix-add/control/1' first");
    expect((await rig.cli('run')).code).toBe(0);
    const wrong = await rig.cli('show', 'attempts/fix-add/control/1', 'verdict.json');
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toContain('has no output "verdict.json"');
    expect(wrong.stderr).toMatch(/its outputs: .*result\.json.*log/);
    const nowhere = await rig.cli('show', 'atempts/fix-add/control/1');
    expect(nowhere.code).toBe(2);
    expect(nowhere.stderr).toContain('did you mean');
  });

  it('a failed node keeps its log: show prints it, explain shows its tail', async () => {
    rig.write(
      'bench.config.yaml',
      `steps:
  broken:
    kind: command
    cmd: 'echo "step one ok"; echo "the real cause: config value 42 is out of range" >&2; exit 3'
    outs: [never.out]
`,
    );
    const r = await rig.cli('run');
    expect(r.code).toBe(1);
    const log = await rig.cli('show', 'broken', 'log');
    expect(log.code, log.stderr).toBe(0);
    expect(log.stdout).toContain('the real cause: config value 42 is out of range');
    expect(log.stderr).toMatch(/note: the log of broken's last failure/);
    const list = await rig.cli('show', 'broken');
    expect(list.code).toBe(1);
    expect(list.stderr).toContain("'pairbench show broken log' prints its log");
    const ex = await rig.cli('explain', 'broken');
    expect(ex.stdout).toMatch(
      /its log \(last \d+ lines; 'pairbench show broken log' prints all of it\):\n(.*\n)*.*the real cause: config value 42 is out of range/,
    );
  });
});
