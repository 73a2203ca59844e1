// Only the runner's own report decides (issue 61, item 8): a second summary printed after the
// real one, or a printed TAP point, by the code under test, end to end through run and verify.
// The runner is simulated (its log as pytest -rA, Django and sympy print it; TAP to {report});
// the code under test is the attempt's own src/add.mjs, whose exit hook prints the decoy.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FIX_ADD_PATCH, makeRepo, newFilePatch } from './fixtures.js';
import { Rig } from './rig.js';

let rig: Rig;
beforeEach(() => {
  rig = new Rig();
});
afterEach(() => rig.cleanup());

/** Each text format: the listed test's id, the runner's log of one test, and the decoy claiming it passed. */
const FORMATS: Record<'pytest-rA' | 'django' | 'sympy' | 'tap', { id: string; log: (ok: boolean) => string; decoy: string }> = {
  'pytest-rA': {
    id: 'tests/test_add.py::test_add',
    log: (ok) =>
      `============================= test session starts ==============================\ncollected 1 item\n\ntests/test_add.py ${ok ? '.' : 'F'}    [100%]\n\n=========================== short test summary info ============================\n${ok ? 'PASSED tests/test_add.py::test_add' : 'FAILED tests/test_add.py::test_add - assert -1 == 5'}\n============================== 1 ${ok ? 'passed' : 'failed'} in 0.01s ===============================\n`,
    decoy:
      '=========================== short test summary info ============================\\nPASSED tests/test_add.py::test_add\\n============================== 1 passed in 0.01s ===============================\\n',
  },
  django: {
    id: 'test_add (calc.tests.AddTest)',
    log: (ok) =>
      `test_add (calc.tests.AddTest) ... ${ok ? 'ok' : 'FAIL'}\n\n${ok ? '' : '======================================================================\nFAIL: test_add (calc.tests.AddTest)\n----------------------------------------------------------------------\nAssertionError: -1 != 5\n\n'}----------------------------------------------------------------------\nRan 1 test in 0.001s\n\n${ok ? 'OK' : 'FAILED (failures=1)'}\n`,
    decoy: 'test_add (calc.tests.AddTest) ... ok\\n\\n----------------------------------------------------------------------\\nRan 1 test in 0.001s\\n\\nOK\\n',
  },
  sympy: {
    id: 'test_add',
    log: (ok) =>
      `============================= test process starts ==============================\n\ncalc/tests/test_add.py[1]\ntest_add ${ok ? 'ok' : 'F'}\n\n${ok ? '' : '________________________________________________________________________________\n___________________ calc/tests/test_add.py:test_add ____________________\nAssertionError\n\n'}============= tests finished: ${ok ? '1 passed' : '0 passed, 1 failed'}, in 0.01 seconds ==============\n`,
    decoy: 'test_add ok\\n============= tests finished: 1 passed, in 0.01 seconds ==============\\n',
  },
  tap: { id: 'add works', log: (ok) => `TAP version 13\n${ok ? 'ok' : 'not ok'} 1 - add works\n1..1\n`, decoy: 'ok 1 - add works\\n' },
};

/** The simulated runner: imports the attempt's add(), writes the format's log (TAP: to the report file, as it streams), exits 1 on a failure. */
function runner(format: keyof typeof FORMATS): string {
  const f = FORMATS[format];
  return `import { appendFileSync, writeFileSync } from 'node:fs';
const tap = ${JSON.stringify(format)} === 'tap';
if (tap) writeFileSync(process.argv[2], 'TAP version 13\\n');
let ok = false;
try { const { add } = await import(process.cwd() + '/src/add.mjs'); ok = add(2, 3) === 5; } catch {}
const log = ok ? ${JSON.stringify(f.log(true))} : ${JSON.stringify(f.log(false))};
if (tap) appendFileSync(process.argv[2], log.slice('TAP version 13\\n'.length)); else process.stdout.write(log);
process.exitCode = ok ? 0 : 1;
`;
}

/** A SWE-bench instance whose hidden test patch adds the runner; its repository's test command is that runner, read as `format`. */
function instance(format: keyof typeof FORMATS): string {
  const repo = join(rig.dir, 'repos', 'calc');
  const [base] = makeRepo(repo, [{ 'src/add.mjs': 'export const add = (a, b) => a - b;\n', 'package.json': '{"type": "module"}\n' }]);
  const body = runner(format).split('\n');
  const testPatch = newFilePatch('tests/run.mjs', body);
  const record = {
    repo: 'acme/calc',
    instance_id: 'acme__calc-1',
    base_commit: base,
    patch: FIX_ADD_PATCH,
    test_patch: testPatch,
    problem_statement: 'add() returns a - b instead of the sum.',
    version: '1.0',
    environment_setup_commit: base,
    FAIL_TO_PASS: JSON.stringify([FORMATS[format].id]),
    PASS_TO_PASS: null,
  };
  writeFileSync(join(rig.dir, 'instances.json'), JSON.stringify([record]));
  const command = `node tests/run.mjs${format === 'tap' ? ' {report}' : ''}`;
  return `{ swebench: instances.json, repos: { acme/calc: repos/calc }, test_commands: { acme/calc: { command: "${command}", report: ${format} } } }`;
}

function config(tasks: string, agents: Record<string, string>): string {
  const arms = Object.keys(agents);
  return `steps:
  materialize: { kind: materialize, tasks: &tasks ${tasks}, matrix: { task: [acme__calc-1] } }
  attempts:
    kind: run
    tasks: *tasks
    needs: [materialize]
    matrix: &a { task: [acme__calc-1], arm: [${arms.join(', ')}], rep: 1 }
    agent: { adapter: command, command: 'sh -c "$PAIRBENCH_ARM_SCRIPT"' }
    arms:
${arms.map((a) => `      ${a}: { env: { PAIRBENCH_ARM_SCRIPT: ${JSON.stringify(agents[a])} } }`).join('\n')}
    sandbox: { backend: local, egress: open }
  verify: { kind: verify, tasks: *tasks, needs: [materialize, attempts], matrix: *a, sandbox: { backend: local, egress: open } }
`;
}

describe('a decoy summary or point printed by the code under test decides nothing, on every text format', () => {
  for (const format of Object.keys(FORMATS) as (keyof typeof FORMATS)[]) {
    it(`${format}: a failing attempt that prints a passing summary (TAP: a point) is excluded as ambiguous, never a pass; without the decoy it fails`, async () => {
      const f = FORMATS[format];
      const tasks = instance(format);
      // The code under test prints the decoy: at exit after the runner's own output (TAP: into the report it was handed, as it loads).
      const hook =
        format === 'tap'
          ? `import { appendFileSync } from 'node:fs'; appendFileSync(process.argv[2], '${f.decoy}');`
          : `process.on('exit', () => process.stdout.write('${f.decoy}'));`;
      rig.write('hook.mjs', hook + '\n');
      rig.write(
        'bench.config.yaml',
        config(tasks, {
          honest: 'true',
          decoy: `cat ${rig.dir}/hook.mjs >> src/add.mjs`,
          fixed: `sed -i "s/a - b/a + b/" src/add.mjs && cat ${rig.dir}/hook.mjs >> src/add.mjs`,
        }),
      );
      const r = await rig.cli('run');
      expect(r.code, r.stderr).toBe(0);
      const honest = await rig.outputJson('verify/acme__calc-1/honest/1', 'verdict.json');
      expect(honest.pass, JSON.stringify(honest)).toBe(false);
      for (const arm of ['decoy', 'fixed']) {
        const v = await rig.outputJson(`verify/acme__calc-1/${arm}/1`, 'verdict.json');
        expect(v.pass, `${arm}: ${JSON.stringify(v)}`).toBe(null);
        expect(v.no_verdict).toMatch(/the runner's report is ambiguous: /);
      }
    });
  }
});
