import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Rig } from './rig.js';

let rig: Rig;
beforeEach(() => {
  rig = new Rig();
  rig.write('data/a.txt', 'alpha\n');
  rig.write('data/b.txt', 'beta\n');
  rig.write('bench.config.yaml', config());
});
afterEach(() => rig.cleanup());

function config(extra = ''): string {
  const log = rig.execLog;
  return `steps:
  a:
    kind: command
    deps: [data/a.txt]
    cmd: echo "$PAIRBENCH_NODE" >> ${log}; tr a-z A-Z < data/a.txt > a.out
    outs: [a.out]
  b:
    kind: command
    deps: [data/b.txt]
    cmd: echo "$PAIRBENCH_NODE" >> ${log}; cp data/b.txt b.out
    outs: [b.out]
  len:
    kind: command
    needs: [a]
    cmd: echo "$PAIRBENCH_NODE" >> ${log}; wc -c < "$PAIRBENCH_IN/a/a.out" | tr -d ' ' > len.out
    outs: [len.out]
  join:
    kind: command
    needs: [len, b]
    cmd: echo "$PAIRBENCH_NODE" >> ${log}; cat "$PAIRBENCH_IN/len/len.out" "$PAIRBENCH_IN/b/b.out" > join.out
    outs: [join.out]
${extra}`;
}

describe('incremental rebuilds', () => {
  it('runs everything once, then nothing; plan says so', async () => {
    const first = await rig.cli('run');
    expect(first.code).toBe(0);
    expect(rig.executions().sort()).toEqual(['a', 'b', 'join', 'len']);
    rig.clearExecutions();

    const second = await rig.cli('run');
    expect(second.code).toBe(0);
    expect(rig.executions()).toEqual([]);
    expect(second.stderr).toContain('4 nodes: 0 ran, 4 cached');

    const plan = await rig.cli('plan');
    expect(plan.stdout).toContain('nothing to run: all 4 nodes are cached');
    const planJson = JSON.parse((await rig.cli('plan', '--json')).stdout);
    expect(planJson.to_run).toBe(0);
    expect(planJson.nodes.every((n: { status: string }) => n.status === 'cached')).toBe(true);
  });

  it('editing one input re-runs only what is downstream of it, and plan says why', async () => {
    await rig.cli('run');
    rig.clearExecutions();
    rig.write('data/b.txt', 'beta two\n');

    const plan = await rig.cli('plan');
    expect(plan.stdout).toMatch(/to run {2}b\n {10}file data\/b\.txt digest [0-9a-f]{6} -> [0-9a-f]{6}/);
    expect(plan.stdout).toMatch(/to run {2}join\n {10}upstream b will run first/);
    expect(plan.stdout).not.toMatch(/to run {2}(a|len)\n/);

    expect((await rig.cli('run')).code).toBe(0);
    expect(rig.executions().sort()).toEqual(['b', 'join']);
  });

  it('stops the rebuild where an upstream reproduces byte-identical output (early cut-off)', async () => {
    await rig.cli('run');
    rig.clearExecutions();
    // Same length, different bytes: `a` re-runs, `len` re-runs and produces the same
    // output, so `join` is cached.
    rig.write('data/a.txt', 'gamma\n');
    const r = await rig.cli('run');
    expect(r.code).toBe(0);
    expect(rig.executions().sort()).toEqual(['a', 'len']);
    expect(r.stderr).toContain('4 nodes: 2 ran, 2 cached');
  });

  it('changing a command re-runs that step and explains the change', async () => {
    await rig.cli('run');
    rig.clearExecutions();
    rig.write('bench.config.yaml', config().replace('cp data/b.txt b.out', 'cat data/b.txt > b.out'));
    const plan = await rig.cli('plan');
    expect(plan.stdout).toContain('to run  b\n          cmd: ..."tions.log; cp data/b.txt b.out" -> ..."tions.log; cat data/b.txt > b.out"');
    await rig.cli('run');
    // b produced the same bytes, so join stays cached.
    expect(rig.executions()).toEqual(['b']);
  });

  it('explain shows the key inputs and the record', async () => {
    await rig.cli('run');
    const text = (await rig.cli('explain', 'len')).stdout;
    expect(text).toContain('status   cached');
    expect(text).toMatch(/"upstream": \{\n\s+"a": "[0-9a-f]{64}"/);
    expect(text).toContain('len.out  file');
    const json = JSON.parse((await rig.cli('explain', 'len', '--json')).stdout);
    expect(json.preimage.kind).toBe('command');
    expect(json.record.outputs['len.out'].size).toBe(2);
    const unknown = await rig.cli('explain', 'lenn');
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('did you mean "len"?');
  });
});

describe('matrix fan-out', () => {
  it('expands nodes with typeable ids; raising a count runs only the new nodes', async () => {
    const log = rig.execLog;
    const matrixConfig = (reps: number) => `steps:
  prep:
    kind: command
    matrix: { task: [t1, t2] }
    cmd: echo "$PAIRBENCH_NODE" >> ${log}; echo {{matrix.task}} > task.txt
    outs: [task.txt]
  run:
    kind: command
    needs: [prep]
    matrix: { task: [t1, t2], arm: [control, treatment], rep: ${reps} }
    cmd: echo "$PAIRBENCH_NODE" >> ${log}; cat "$PAIRBENCH_IN/prep/{{matrix.task}}/task.txt" > out.txt; echo $PAIRBENCH_MATRIX_ARM >> out.txt
    outs: [out.txt]
  summary:
    kind: command
    needs: [run]
    cmd: echo "$PAIRBENCH_NODE" >> ${log}; find "$PAIRBENCH_IN" -name out.txt | sort | sed "s|$PAIRBENCH_IN/||" > all.txt
    outs: [all.txt]
`;
    rig.write('bench.config.yaml', matrixConfig(2));
    expect((await rig.cli('run')).code).toBe(0);
    expect(rig.executions()).toContain('run/t2/treatment/2');
    expect(rig.executions()).toHaveLength(2 + 8 + 1);
    // run/t1/* needs only prep/t1
    const ex = JSON.parse((await rig.cli('explain', 'run/t1/control/1', '--json')).stdout);
    expect(ex.upstream).toEqual(['prep/t1']);
    rig.clearExecutions();

    rig.write('bench.config.yaml', matrixConfig(3));
    const plan = await rig.cli('plan');
    expect(plan.stdout).toContain('to run  run/t1/control/3\n          new node: never built');
    await rig.cli('run');
    expect(rig.executions().sort()).toEqual(['run/t1/control/3', 'run/t1/treatment/3', 'run/t2/control/3', 'run/t2/treatment/3', 'summary']);
  });
});

describe('declared environment', () => {
  it('passes only PATH and declared variables; a passed-through value is keyed by digest', async () => {
    rig.env = { SECRET: 's3cret', TOKEN: 'one' };
    rig.write(
      'bench.config.yaml',
      `steps:
  env:
    kind: command
    env: { GREETING: hello }
    pass_env: [TOKEN]
    cmd: echo "$PAIRBENCH_NODE" >> ${rig.execLog}; echo "secret=[$SECRET] greeting=[$GREETING] token=[$TOKEN]" > env.txt
    outs: [env.txt]
`,
    );
    expect((await rig.cli('run')).code).toBe(0);
    const ex = JSON.parse((await rig.cli('explain', 'env', '--json')).stdout);
    expect(JSON.stringify(ex.preimage)).not.toContain('one');
    rig.clearExecutions();
    // An undeclared variable changing does not re-run anything...
    rig.env = { SECRET: 'other', TOKEN: 'one' };
    await rig.cli('run');
    expect(rig.executions()).toEqual([]);
    // ...a declared one does, and plan names it.
    rig.env = { SECRET: 'other', TOKEN: 'two' };
    expect((await rig.cli('plan')).stdout).toMatch(/host env TOKEN \(digest\): [0-9a-f]{6} -> [0-9a-f]{6}/);
    const r = await rig.cli('run', '--json');
    expect(rig.executions()).toEqual(['env']);
    expect(JSON.parse(r.stdout).ok).toBe(true);
  });

  it('the process does not see undeclared host variables', async () => {
    rig.env = { SECRET: 's3cret' };
    rig.write(
      'bench.config.yaml',
      `steps:
  env:
    kind: command
    env: { GREETING: hello }
    cmd: echo "secret=[$SECRET] greeting=[$GREETING]" > env.txt; cp env.txt ${rig.dir}/seen.txt
    outs: [env.txt]
`,
    );
    expect((await rig.cli('run')).code).toBe(0);
    expect(rig.read('seen.txt')).toBe('secret=[] greeting=[hello]\n');
  });
});
