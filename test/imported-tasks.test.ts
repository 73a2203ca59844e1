import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bubblewrapBackend } from '../sandboxes/bubblewrap.js';
import { makeRepo } from './fixtures.js';
import { Rig } from './rig.js';

// Tasks in external formats, written by the test as those formats document them,
// imported, certified, and run with oracle (passes) and nop (fails).
let rig: Rig;
beforeEach(() => (rig = new Rig()));
afterEach(() => rig.cleanup());

const bwrap = await bubblewrapBackend.available();

function pipeline(tasks: string, task: string, backend: string): string {
  const sandbox = backend === 'local' ? '{ backend: local, egress: open }' : `{ backend: ${backend}, egress: none }`;
  const m = `{ task: [${task}] }`;
  const attempts = (name: string, adapter: string) => `  ${name}:
    kind: run
    tasks: *tasks
    needs: [materialize, certify]
    matrix: { task: [${task}], arm: [only], rep: 1 }
    agent: { adapter: ${adapter} }
    arms: { only: {} }
    sandbox: ${sandbox}
  verify-${name}:
    kind: verify
    tasks: *tasks
    needs: [materialize, ${name}]
    matrix: { task: [${task}], arm: [only], rep: 1 }
    sandbox: ${sandbox}
`;
  return `steps:
  materialize:
    kind: materialize
    tasks: &tasks ${tasks}
    matrix: ${m}
  certify:
    kind: certify
    tasks: *tasks
    needs: [materialize]
    matrix: ${m}
    sandbox: ${sandbox}
    policy: { repeats: 2 }
${attempts('oracle', 'oracle')}${attempts('nop', 'nop')}`;
}

describe.skipIf(!bwrap.ok && process.env['PAIRBENCH_REQUIRE_SANDBOXES'] !== '1')('a Harbor task directory', () => {
  it('imports, certifies, and runs: oracle passes, nop fails (verdict from reward.txt)', async () => {
    const [commit] = makeRepo(join(rig.dir, 'datasets'), [
      {
        'tasks/greet/instruction.md': 'Make app/greet.sh print exactly "hello".\n',
        'tasks/greet/task.toml': '[task]\nname = "greet"\n\n[metadata]\ncategory = "shell"\ndifficulty = "easy"\n\n[verifier]\ntimeout_sec = 60.0\n\n[agent]\ntimeout_sec = 120.0\n\n[environment]\ncpus = 1\nmemory_mb = 512\nallow_internet = false\n',
        'tasks/greet/environment/Dockerfile': 'FROM busybox\nCOPY app /app\n',
        'tasks/greet/environment/app/greet.sh': 'echo hi\n',
        'tasks/greet/tests/test.sh': '#!/bin/bash\nmkdir -p /logs/verifier\nif [ "$(sh app/greet.sh)" = "hello" ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi\n',
        'tasks/greet/solution/solve.sh': "#!/bin/sh\nprintf 'echo hello\\n' > app/greet.sh\n",
      },
    ]);
    rig.write('bench.config.yaml', pipeline(`{ dir: datasets/tasks, repo: datasets, commit: ${commit} }`, 'greet', 'bubblewrap'));
    const r = await rig.cli('run');
    expect(r.code, r.stderr).toBe(0);
    const cert = await rig.outputJson('certify/greet', 'certification.json');
    expect(cert).toMatchObject({ verdict: 'certified', checks: { nop: [false, false], oracle: [true, true] } });
    expect(await rig.outputJson('verify-oracle/greet/only/1', 'verdict.json')).toMatchObject({ pass: true, reward: { reward: 1 } });
    expect(await rig.outputJson('verify-nop/greet/only/1', 'verdict.json')).toMatchObject({ pass: false, reward: { reward: 0 } });
    // The tree is the task's environment/ (the Dockerfile included), read from the dataset repo at the commit.
    const tree = await rig.cli('explain', 'materialize/greet', '--json');
    expect(JSON.parse(tree.stdout).record.outputs.tree.type).toBe('dir');
  });
});

describe('a SWE-bench JSONL instance', () => {
  it('imports, certifies, and runs: oracle passes, nop fails (FAIL_TO_PASS and PASS_TO_PASS from the hidden test patch)', async () => {
    const repo = join(rig.dir, 'repos', 'calc');
    const [base] = makeRepo(repo, [{ 'src/add.mjs': 'export const add = (a, b) => a - b;\n', 'package.json': '{"type": "module"}\n' }]);
    const testPatch = [
      'diff --git a/test/add.test.mjs b/test/add.test.mjs',
      'new file mode 100644',
      '--- /dev/null',
      '+++ b/test/add.test.mjs',
      '@@ -0,0 +1,5 @@',
      "+import { test } from 'node:test';",
      "+import assert from 'node:assert/strict';",
      "+import { add } from '../src/add.mjs';",
      "+test('add sums two numbers', () => assert.equal(add(2, 3), 5));",
      "+test('add is a function', () => assert.equal(typeof add, 'function'));",
      '',
    ].join('\n');
    const gold = ['diff --git a/src/add.mjs b/src/add.mjs', '--- a/src/add.mjs', '+++ b/src/add.mjs', '@@ -1 +1 @@', '-export const add = (a, b) => a - b;', '+export const add = (a, b) => a + b;', ''].join('\n');
    const instance = {
      repo: 'acme/calc',
      instance_id: 'acme__calc-1',
      base_commit: base,
      patch: gold,
      test_patch: testPatch,
      problem_statement: 'add() returns a - b instead of the sum.',
      hints_text: '',
      created_at: '2026-01-01T00:00:00Z',
      version: '1.0',
      FAIL_TO_PASS: JSON.stringify(['add sums two numbers']),
      PASS_TO_PASS: JSON.stringify(['add is a function']),
      environment_setup_commit: base,
    };
    writeFileSync(join(rig.dir, 'instances.jsonl'), JSON.stringify(instance) + '\n');
    rig.write(
      'bench.config.yaml',
      pipeline('{ swebench: instances.jsonl, repos: { acme/calc: repos/calc }, test_command: "node --test --test-name-pattern={test} test/" }', 'acme__calc-1', 'local'),
    );
    const r = await rig.cli('run');
    expect(r.code, r.stderr).toBe(0);
    expect((await rig.outputJson('certify/acme__calc-1', 'certification.json')).verdict).toBe('certified');
    expect(await rig.outputJson('verify-oracle/acme__calc-1/only/1', 'verdict.json')).toMatchObject({ pass: true, fail_to_pass: { 'add sums two numbers': 'pass' }, pass_to_pass: { 'add is a function': 'pass' } });
    expect(await rig.outputJson('verify-nop/acme__calc-1/only/1', 'verdict.json')).toMatchObject({ pass: false, fail_to_pass: { 'add sums two numbers': 'fail' }, pass_to_pass: { 'add is a function': 'pass' } });
  });
});
