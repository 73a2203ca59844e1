import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { canonicalJson } from '../pipeline/canonical-json.js';
import { Rig } from './rig.js';

let rig: Rig;
beforeEach(() => (rig = new Rig()));
afterEach(() => rig.cleanup());

describe('config errors name file:line:column, the field, and what was expected', () => {
  it('malformed YAML', async () => {
    rig.write('bench.config.yaml', 'steps:\n  build:\n    kind: command\n    cmd: a: b\n');
    const r = await rig.cli('plan');
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('bench.config.yaml:4:10: error: steps.build.cmd');
    expect(r.stderr).toContain('invalid YAML: Nested mappings are not allowed');
  });

  it('a duplicate key is an error, not a silent override', async () => {
    rig.write('bench.config.yaml', 'steps:\n  build:\n    kind: command\n    cmd: x\n    cmd: y\n');
    const r = await rig.cli('plan');
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('bench.config.yaml:5:5: error: steps.build.cmd: invalid YAML: Map keys must be unique');
  });

  it('schema violations: unknown key (with a suggestion), wrong type, bad enum, missing key', async () => {
    rig.write('bench.config.yaml', 'steps:\n  build:\n    kind: command\n    cmdd: echo hi\n    outs: out.txt\n  test:\n    kind: comand\n');
    const r = await rig.cli('plan');
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('bench.config.yaml:2:3: error: steps.build: missing required key "cmd"');
    expect(r.stderr).toContain(
      'bench.config.yaml:4:5: error: steps.build.cmdd: unknown key "cmdd"; expected one of: kind, description, needs, matrix, cmd, deps, outs, env, pass_env, timeout\n  hint: did you mean "cmd"?',
    );
    expect(r.stderr).toContain('bench.config.yaml:5:11: error: steps.build.outs: got string; expected array');
    expect(r.stderr).toContain('bench.config.yaml:7:11: error: steps.test.kind: got "comand"; expected one of: "command"');
    expect(r.stderr).toContain('  4 |     cmdd: echo hi\n    |     ^^^^');
  });

  it('--json gives the same errors for machines', async () => {
    rig.write('bench.config.yaml', 'stepz: {}\n');
    const r = await rig.cli('plan', '--json');
    expect(r.code).toBe(2);
    const errors = JSON.parse(r.stdout).errors;
    expect(errors).toContainEqual(expect.objectContaining({ field: 'stepz', file: expect.stringMatching(/bench\.config\.yaml$/), line: 1, column: 1 }));
  });

  it('errors in an included file point into that file', async () => {
    rig.write('bench.config.yaml', 'include: [more/*.yaml]\nsteps:\n  a:\n    kind: command\n    cmd: "true"\n');
    rig.write('more/extra.yaml', 'steps:\n  b:\n    kind: command\n    cmd: "true"\n    timeout: -1\n');
    const r = await rig.cli('plan');
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/more\/extra\.yaml:5:14: error: steps\.b\.timeout: got -1; must be > 0/);
  });

  it('included steps join the DAG; a duplicate name points at both places', async () => {
    rig.write('bench.config.yaml', 'include: [more.yaml]\nsteps:\n  a:\n    kind: command\n    cmd: "true"\n');
    rig.write('more.yaml', 'steps:\n  b:\n    kind: command\n    needs: [a]\n    cmd: "true"\n');
    const ok = await rig.cli('plan', '--json');
    expect(JSON.parse(ok.stdout).nodes.map((n: { node: string }) => n.node)).toEqual(['a', 'b']);
    rig.write('more.yaml', 'steps:\n  a:\n    kind: command\n    cmd: "true"\n');
    const dup = await rig.cli('plan');
    expect(dup.stderr).toMatch(/more\.yaml:2:3: error: steps\.a: step "a" is defined twice \(first at \S*bench\.config\.yaml:3\)/);
    // The first definition is a related location: a note in words, and in the JSON error shape.
    expect(dup.stderr).toMatch(/\n {2}note: \S*bench\.config\.yaml:3:3: step "a" is first defined here/);
    const json = JSON.parse((await rig.cli('plan', '--json')).stdout);
    expect(json.errors[0]).toMatchObject({
      severity: 'error',
      line: 2,
      column: 3,
      related: [{ message: 'step "a" is first defined here', line: 3, column: 3 }],
    });
  });
});

describe('DAG errors in words', () => {
  it('unknown step in needs', async () => {
    rig.write('bench.config.yaml', 'steps:\n  build:\n    kind: command\n    cmd: "true"\n  test:\n    kind: command\n    needs: [buld]\n    cmd: "true"\n');
    const r = await rig.cli('plan');
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(
      'bench.config.yaml:7:13: error: steps.test.needs[0]: step "test" needs "buld", which is not a step; steps are: build, test\n  hint: did you mean "build"?',
    );
  });

  it('cycle', async () => {
    rig.write(
      'bench.config.yaml',
      'steps:\n  a:\n    kind: command\n    needs: [c]\n    cmd: x\n  b:\n    kind: command\n    needs: [a]\n    cmd: y\n  c:\n    kind: command\n    needs: [b]\n    cmd: y\n',
    );
    const r = await rig.cli('plan');
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/error: steps\.\w\.needs: cycle: (a -> c -> b -> a|c -> b -> a -> c|b -> a -> c -> b)/);
    // Every other edge of the cycle, where it is written.
    const notes = r.stderr.split('\n').filter((l) => l.startsWith('  note: '));
    expect(notes).toHaveLength(2);
    for (const n of notes) expect(n).toMatch(/^ {2}note: \S*bench\.config\.yaml:(4|8|12):13: steps\.(a|b|c)\.needs: (a needs c|b needs a|c needs b)$/);
  });

  it('dangling inputs: an upstream not in needs, an output not declared, a file that does not exist', async () => {
    rig.write(
      'bench.config.yaml',
      'steps:\n  a:\n    kind: command\n    cmd: x\n    outs: [o.txt]\n  b:\n    kind: command\n    cmd: y\n    deps: [{from: a}]\n',
    );
    expect((await rig.cli('plan')).stderr).toContain(
      'bench.config.yaml:9:12: error: steps.b.deps[0]: dangling input: reads from step "a", which is not in needs',
    );
    rig.write(
      'bench.config.yaml',
      'steps:\n  a:\n    kind: command\n    cmd: x\n    outs: [o.txt]\n  b:\n    kind: command\n    needs: [a]\n    cmd: y\n    deps: [{from: a, out: p.txt}]\n',
    );
    expect((await rig.cli('plan')).stderr).toContain('dangling input: step "a" declares no output "p.txt" (its outs: o.txt)');
    rig.write('bench.config.yaml', 'steps:\n  a:\n    kind: command\n    matrix: {task: [t1, t2]}\n    cmd: x\n    deps: ["data/{{matrix.task}}.txt"]\n');
    rig.write('data/t1.txt', 'one');
    const r = await rig.cli('plan');
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('bench.config.yaml:6:12: error: steps.a.deps[0]: node a/t2: input "data/t2.txt" does not exist');
  });

  it('a matrix node whose upstream has no matching node', async () => {
    rig.write(
      'bench.config.yaml',
      'steps:\n  a:\n    kind: command\n    matrix: {task: [t1]}\n    cmd: x\n  b:\n    kind: command\n    needs: [a]\n    matrix: {task: [t1, t2]}\n    cmd: y\n',
    );
    const r = await rig.cli('plan');
    expect(r.stderr).toContain('node b/t2 needs step "a", but "a" has no node with task=t2');
  });

  it('unknown command and bad options are usage errors (exit 2)', async () => {
    expect((await rig.cli('plam')).code).toBe(2);
    rig.write('bench.config.yaml', 'steps: {}\n');
    const r = await rig.cli('run', '--jobs', 'zero');
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--jobs takes a whole number >= 1');
    const help = await rig.cli('gc', '--help');
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('--dry-run');
  });
});

describe('canonical JSON', () => {
  it('sorts keys by code point and drops insignificant whitespace', () => {
    expect(canonicalJson({ b: 1, a: [true, null, 'x'], A: { d: 2, c: 1 } })).toBe('{"A":{"c":1,"d":2},"a":[true,null,"x"],"b":1}');
    // U+FF21 sorts before U+1F600 by code point, after it by UTF-16 code unit.
    expect(canonicalJson({ '\u{1F600}': 1, '\uFF21': 2 })).toBe('{"\uFF21":2,"\u{1F600}":1}');
  });
});
