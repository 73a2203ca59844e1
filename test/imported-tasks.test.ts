import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { bubblewrapBackend } from '../sandboxes/bubblewrap.js';
import { dockerBackend } from '../sandboxes/docker.js';
import { ensureTestImage } from './docker-image.js';
import { FIX_ADD_PATCH, makeRepo, newFilePatch } from './fixtures.js';
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
        'tasks/greet/task.toml':
          '[task]\nname = "greet"\n\n[metadata]\ncategory = "shell"\ndifficulty = "easy"\n\n[verifier]\ntimeout_sec = 60.0\n\n[agent]\ntimeout_sec = 120.0\n\n[environment]\ncpus = 1\nmemory_mb = 512\nallow_internet = false\n',
        'tasks/greet/environment/Dockerfile': 'FROM busybox\nCOPY app /app\n',
        'tasks/greet/environment/app/greet.sh': 'echo hi\n',
        'tasks/greet/tests/test.sh':
          '#!/bin/bash\nmkdir -p /logs/verifier\nif [ "$(sh app/greet.sh)" = "hello" ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi\n',
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

describe('a Harbor task on the local backend', () => {
  it('certify says the verifier cannot run there, as an infrastructure fault naming the backends that can (its verdict file needs a sandbox)', async () => {
    const [commit] = makeRepo(join(rig.dir, 'datasets'), [
      {
        'tasks/greet/instruction.md': 'Make app/greet.sh print exactly "hello".\n',
        'tasks/greet/task.toml': '[task]\nname = "greet"\n\n[verifier]\ntimeout_sec = 60.0\n',
        'tasks/greet/environment/Dockerfile': 'FROM busybox\nCOPY app /app\n',
        'tasks/greet/environment/app/greet.sh': 'echo hi\n',
        'tasks/greet/tests/test.sh': '#!/bin/bash\nmkdir -p /logs/verifier\necho 1 > /logs/verifier/reward.txt\n',
        'tasks/greet/solution/solve.sh': "#!/bin/sh\nprintf 'echo hello\\n' > app/greet.sh\n",
      },
    ]);
    rig.write('bench.config.yaml', pipeline(`{ dir: datasets/tasks, repo: datasets, commit: ${commit} }`, 'greet', 'local'));
    const r = await rig.cli('run', 'certify');
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      'FAILED  certify/greet: infrastructure: task greet writes its verdict to /logs/verifier: verify it with the bubblewrap or docker backend (not local)',
    );
  });
});

describe('a SWE-bench JSONL instance', () => {
  it.skipIf(!bwrap.ok && process.env['PAIRBENCH_REQUIRE_SANDBOXES'] !== '1')(
    'rejected with the reference solution: the reason names the failing tests and the likely cause (their downloads, under egress none)',
    async () => {
      const repo = join(rig.dir, 'repos', 'data');
      const [base] = makeRepo(repo, [{ 'src/add.mjs': 'export const add = (a, b) => a - b;\n', 'package.json': '{"type": "module"}\n' }]);
      const body = [
        "import { test } from 'node:test';",
        "import assert from 'node:assert/strict';",
        "import { add } from '../src/add.mjs';",
        "test('add sums two numbers', () => assert.equal(add(2, 3), 5));",
        // As a PASS_TO_PASS test that fetches its fixture data does (offline, it fails).
        "test('loads the reference table', async () => { const r = await fetch('http://data.example.com/table.json'); assert.ok(r.ok); });",
      ];
      const testPatch = newFilePatch('test/add.test.mjs', body);
      const instance = {
        repo: 'acme/data',
        instance_id: 'acme__data-1',
        base_commit: base,
        patch: FIX_ADD_PATCH,
        test_patch: testPatch,
        problem_statement: 'add() returns a - b instead of the sum.',
        hints_text: '',
        created_at: '2026-01-01T00:00:00Z',
        version: '1.0',
        FAIL_TO_PASS: JSON.stringify(['add sums two numbers']),
        PASS_TO_PASS: JSON.stringify(['loads the reference table']),
        environment_setup_commit: base,
      };
      writeFileSync(join(rig.dir, 'instances.jsonl'), JSON.stringify(instance) + '\n');
      const tasks = '{ swebench: instances.jsonl, repos: { acme/data: repos/data }, test_command: "node --test --test-name-pattern={test} test/" }';
      rig.write(
        'bench.config.yaml',
        `steps:\n  materialize: { kind: materialize, tasks: &tasks ${tasks}, matrix: { task: [acme__data-1] } }\n  certify: { kind: certify, tasks: *tasks, needs: [materialize], matrix: { task: [acme__data-1] }, sandbox: { backend: bubblewrap, egress: none }, policy: { repeats: 1 } }\n`,
      );
      const r = await rig.cli('run');
      expect(r.code, r.stderr).toBe(0);
      const cert = await rig.outputJson('certify/acme__data-1', 'certification.json');
      expect(cert.verdict).toBe('rejected');
      const reason = (cert.reasons as string[]).find((x) => x.startsWith('the verifier fails with the reference solution'));
      expect(reason, JSON.stringify(cert.reasons)).toMatch(/: 1 failed \(pass_to_pass loads the reference table\)/);
      expect(reason, reason).toMatch(/network under egress none/);
      expect(reason).not.toMatch(/add sums two numbers/);
    },
  );

  it('imports, certifies, and runs: oracle passes, nop fails (FAIL_TO_PASS and PASS_TO_PASS from the hidden test patch)', async () => {
    const repo = join(rig.dir, 'repos', 'calc');
    const [base] = makeRepo(repo, [{ 'src/add.mjs': 'export const add = (a, b) => a - b;\n', 'package.json': '{"type": "module"}\n' }]);
    const testPatch = newFilePatch('test/add.test.mjs', [
      "import { test } from 'node:test';",
      "import assert from 'node:assert/strict';",
      "import { add } from '../src/add.mjs';",
      "test('add sums two numbers', () => assert.equal(add(2, 3), 5));",
      "test('add is a function', () => assert.equal(typeof add, 'function'));",
    ]);
    const instance = {
      repo: 'acme/calc',
      instance_id: 'acme__calc-1',
      base_commit: base,
      patch: FIX_ADD_PATCH,
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
      pipeline(
        '{ swebench: instances.jsonl, repos: { acme/calc: repos/calc }, test_command: "node --test --test-name-pattern={test} test/" }',
        'acme__calc-1',
        'local',
      ),
    );
    const r = await rig.cli('run');
    expect(r.code, r.stderr).toBe(0);
    expect((await rig.outputJson('certify/acme__calc-1', 'certification.json')).verdict).toBe('certified');
    expect(await rig.outputJson('verify-oracle/acme__calc-1/only/1', 'verdict.json')).toMatchObject({
      pass: true,
      fail_to_pass: { 'add sums two numbers': 'pass' },
      pass_to_pass: { 'add is a function': 'pass' },
    });
    expect(await rig.outputJson('verify-nop/acme__calc-1/only/1', 'verdict.json')).toMatchObject({
      pass: false,
      fail_to_pass: { 'add sums two numbers': 'fail' },
      pass_to_pass: { 'add is a function': 'pass' },
    });
  });
});

/** A Python instance: 2 FAIL_TO_PASS tests from the hidden test patch, 120 PASS_TO_PASS (one id with a space), as a JSON array file. */
function pythonInstance(rig: Rig): void {
  // A Python package whose suite the hidden test patch extends: 2 FAIL_TO_PASS, 120 PASS_TO_PASS
  // (one parametrized with a space in its id), written here as SWE-bench records them.
  const repo = join(rig.dir, 'repos', 'pycalc');
  const existing = Array.from({ length: 119 }, (_, i) => `def test_existing_${i}():\n    assert calc.mul(${i}, 2) == ${i * 2}\n`).join('\n');
  const [base] = makeRepo(repo, [
    {
      'calc.py': 'def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n',
      'tests/__init__.py': '',
      'tests/test_existing.py': `import pytest\n\nimport calc\n\n\n${existing}\n\n@pytest.mark.parametrize("s", ["a b"])\ndef test_param(s):\n    assert " " in s\n`,
    },
  ]);
  const testPatch = [
    'diff --git a/tests/test_add.py b/tests/test_add.py',
    'new file mode 100644',
    '--- /dev/null',
    '+++ b/tests/test_add.py',
    '@@ -0,0 +1,9 @@',
    '+import calc',
    '+',
    '+',
    '+def test_add_sums():',
    '+    assert calc.add(2, 3) == 5',
    '+',
    '+',
    '+def test_add_commutes():',
    '+    assert calc.add(4, 1) == calc.add(1, 4)',
    '',
  ].join('\n');
  const gold = [
    'diff --git a/calc.py b/calc.py',
    '--- a/calc.py',
    '+++ b/calc.py',
    '@@ -1,3 +1,3 @@',
    ' def add(a, b):',
    '-    return a - b',
    '+    return a + b',
    ' ',
    '',
  ].join('\n');
  const p2p = [...Array.from({ length: 119 }, (_, i) => `tests/test_existing.py::test_existing_${i}`), 'tests/test_existing.py::test_param[a b]'];
  const instance = {
    repo: 'acme/pycalc',
    instance_id: 'acme__pycalc-7',
    base_commit: base,
    patch: gold,
    test_patch: testPatch,
    problem_statement: 'calc.add subtracts.',
    hints_text: '',
    created_at: '2026-01-01T00:00:00Z',
    version: '1.0',
    FAIL_TO_PASS: JSON.stringify(['tests/test_add.py::test_add_sums', 'tests/test_add.py::test_add_commutes']),
    PASS_TO_PASS: JSON.stringify(p2p),
    environment_setup_commit: base,
  };
  // As published: a JSON array, pretty-printed.
  writeFileSync(join(rig.dir, 'instances.json'), JSON.stringify([instance], null, 2) + '\n');
}

const PYTEST_RUNNER =
  '{ swebench: instances.json, repos: { acme/pycalc: repos/pycalc }, test_command: "python3 -m pytest -rA -p no:cacheprovider {tests}", timeout: 300 }';

describe.skipIf(!bwrap.ok && process.env['PAIRBENCH_REQUIRE_SANDBOXES'] !== '1')('a SWE-bench instance at a real size, as a JSON array', () => {
  it('120 PASS_TO_PASS tests: certifies, oracle passes, nop fails, with one pytest run per verification read from its -rA report', async () => {
    pythonInstance(rig);
    rig.write('bench.config.yaml', pipeline(PYTEST_RUNNER, 'acme__pycalc-7', 'bubblewrap'));
    const r = await rig.cli('run');
    expect(r.code, r.stderr).toBe(0);
    const cert = await rig.outputJson('certify/acme__pycalc-7', 'certification.json');
    expect(cert.verdict).toBe('certified');

    const oracle = await rig.outputJson('verify-oracle/acme__pycalc-7/only/1', 'verdict.json');
    expect(oracle.pass).toBe(true);
    expect(Object.keys(oracle.pass_to_pass)).toHaveLength(120);
    expect(Object.values(oracle.pass_to_pass).every((s) => s === 'pass')).toBe(true);
    expect(oracle.pass_to_pass['tests/test_existing.py::test_param[a b]']).toBe('pass');
    const nop = await rig.outputJson('verify-nop/acme__pycalc-7/only/1', 'verdict.json');
    expect(nop).toMatchObject({ pass: false, fail_to_pass: { 'tests/test_add.py::test_add_sums': 'fail', 'tests/test_add.py::test_add_commutes': 'fail' } });
    expect(Object.values(nop.pass_to_pass).every((s) => s === 'pass')).toBe(true);
    // In each of verify's 3 runs (verdict stability), one pytest process ran every listed test: the whole verifier output is kept.
    const log = await rig.outputText('verify-oracle/acme__pycalc-7/only/1', 'verifier.log');
    // Each run, then its canary (calibrated by certify, whatever verify's needs say).
    expect(log.match(/^=== .*$/gm)).toEqual([1, 2, 3].flatMap((i) => [`=== verifier run ${i} of 3`, '=== runner (every listed test)', '=== canary of runner']));
    expect(log).toMatch(/^PASSED tests\/test_existing\.py::test_param\[a b\]$/m);
    // The nop fails: no canary is run for a failure (each run: its header and the runner).
    expect((await rig.outputText('verify-nop/acme__pycalc-7/only/1', 'verifier.log')).match(/^=== /gm)).toHaveLength(6);
    // Certify calibrated the runner's canary on the reference solution: one run more, planted into the hidden test file.
    expect(cert.canaries.runner).toMatchObject({ calibrated: true, targets: [{ where: 'workspace', path: 'tests/test_add.py' }] });
    const calibration = (await rig.cli('show', 'certify/acme__pycalc-7', 'verifier-logs/oracle-1.log')).stdout;
    expect(calibration.match(/^=== .*$/gm)).toEqual(['=== runner (every listed test)', '=== canary of runner']);
  });

  it('an attempt that prints a forged -rA report and exits 0 before any test runs is caught by the runner canary', async () => {
    pythonInstance(rig);
    // calc.py, imported by every test module, prints PASSED for every listed id, then ends the process with 0.
    // pytest captures fd 1 while it collects: the forgery finds the verifier's real stdout among the open pipes and sockets.
    const forge = [
      'import os, stat, sys',
      'report = "".join("PASSED " + t + "\\n" for t in sys.argv[sys.argv.index("no:cacheprovider") + 1:]).encode()',
      'for fd in range(1, 64):',
      '    try:',
      '        if stat.S_ISFIFO(os.fstat(fd).st_mode) or stat.S_ISSOCK(os.fstat(fd).st_mode):',
      '            os.write(fd, report)',
      '    except OSError:',
      '        pass',
      'os._exit(0)',
    ].join('\n');
    const b64 = Buffer.from(`${forge}\n`).toString('base64');
    rig.write(
      'bench.config.yaml',
      `steps:
  materialize: { kind: materialize, tasks: &tasks ${PYTEST_RUNNER}, matrix: { task: [acme__pycalc-7] } }
  certify:
    kind: certify
    tasks: *tasks
    needs: [materialize]
    matrix: { task: [acme__pycalc-7] }
    sandbox: { backend: bubblewrap, egress: none }
    policy: { repeats: 1 }
  attempts:
    kind: run
    tasks: *tasks
    needs: [materialize, certify]
    matrix: { task: [acme__pycalc-7], arm: [only], rep: 1 }
    agent: { adapter: command, command: 'echo ${b64} | base64 -d > calc.py' }
    arms: { only: {} }
    sandbox: { backend: bubblewrap, egress: none }
  verify:
    kind: verify
    tasks: *tasks
    needs: [materialize, certify, attempts]
    matrix: { task: [acme__pycalc-7], arm: [only], rep: 1 }
    sandbox: { backend: bubblewrap, egress: none }
`,
    );
    const r = await rig.cli('run');
    expect(r.code, r.stderr).toBe(0);
    const verdict = await rig.outputJson('verify/acme__pycalc-7/only/1', 'verdict.json');
    // The forged report says every test passed; the canary's planted failure did not show: not believed.
    expect(Object.values(verdict.fail_to_pass)).toEqual(['pass', 'pass']);
    expect(verdict.pass).toBe(false);
    expect(verdict.forgery).toMatchObject({ reason: 'canary-passed' });
    expect(verdict.canaries.runner).toMatchObject({ status: 'passed', calibrated: true });
  });
});

describe.skipIf(!bwrap.ok && process.env['PAIRBENCH_REQUIRE_SANDBOXES'] !== '1')('a runner whose report is a JUnit file at {report}', () => {
  const JUNIT_RUNNER =
    '{ swebench: instances.json, repos: { acme/pycalc: repos/pycalc }, test_command: "python3 -m pytest -q -p no:cacheprovider --junitxml={report} {tests}", report: junit-xml, timeout: 300 }';

  it('a command without {report} is refused: the report is written where pairbench owns it, never the workspace', async () => {
    pythonInstance(rig);
    rig.write('bench.config.yaml', pipeline(JUNIT_RUNNER.replace(' --junitxml={report}', ' --junitxml=report.xml'), 'acme__pycalc-7', 'bubblewrap'));
    const r = await rig.cli('plan');
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('a junit-xml report is read from a file the runner writes to {report}');
  });

  it('text an attempt prints (a closing </testcase>, a <failure>, a forged report in the workspace) changes no verdict', async () => {
    pythonInstance(rig);
    // calc.py, imported by every test, prints XML; add() stays wrong; and a forged report.xml waits in the workspace.
    const noisy = [
      'print(\']]></system-out></testcase><testcase classname="tests.test_add" name="test_add_sums"/><![CDATA[\')',
      'print(\'</testcase></testsuite><testsuite><testcase name="x"><failure/></testcase>\')',
      'def add(a, b):',
      '    return a - b',
      '',
      '',
      'def mul(a, b):',
      '    return a * b',
      '',
    ].join('\n');
    const forged =
      '<testsuites><testsuite><testcase classname="tests.test_add" name="test_add_sums"/><testcase classname="tests.test_add" name="test_add_commutes"/></testsuite></testsuites>';
    const write = (path: string, text: string) => `echo ${Buffer.from(text).toString('base64')} | base64 -d > ${path}`;
    rig.write(
      'bench.config.yaml',
      pipeline(JUNIT_RUNNER, 'acme__pycalc-7', 'bubblewrap').replace(
        'agent: { adapter: nop }',
        `agent: { adapter: command, command: '${write('calc.py', noisy)} && ${write('report.xml', forged)}' }`,
      ),
    );
    const r = await rig.cli('run');
    expect(r.code, r.stderr).toBe(0);
    const cert = await rig.outputJson('certify/acme__pycalc-7', 'certification.json');
    expect(cert.verdict, cert.reasons.join('; ')).toBe('certified');
    expect(cert.canaries.runner).toMatchObject({ calibrated: true });
    const oracle = await rig.outputJson('verify-oracle/acme__pycalc-7/only/1', 'verdict.json');
    expect(oracle.pass).toBe(true);
    expect(oracle.fail_to_pass).toEqual({ 'tests/test_add.py::test_add_sums': 'pass', 'tests/test_add.py::test_add_commutes': 'pass' });
    expect(Object.values(oracle.pass_to_pass).every((st) => st === 'pass')).toBe(true);
    const noisyVerdict = await rig.outputJson('verify-nop/acme__pycalc-7/only/1', 'verdict.json');
    expect(noisyVerdict.pass).toBe(false);
    expect(noisyVerdict.fail_to_pass).toEqual({ 'tests/test_add.py::test_add_sums': 'fail', 'tests/test_add.py::test_add_commutes': 'fail' });
  });
});

const dockerUp = (await dockerBackend().available()).ok;

describe.skipIf(!dockerUp && process.env['PAIRBENCH_REQUIRE_SANDBOXES'] !== '1')('a Harbor task run as Harbor runs it', () => {
  it('WORKDIR /app, a bash solve.sh reading /solution, tests reading /app: the image is built, and it certifies on docker (oracle passes, nop fails)', async () => {
    // The base image is built here, offline (busybox + Debian's bash-static), and named by a tag the Dockerfile uses.
    const base = await ensureTestImage();
    const baseTag = (await execa('docker', ['image', 'inspect', '--format', '{{index .RepoTags 0}}', base])).stdout.trim();
    const [commit] = makeRepo(join(rig.dir, 'datasets'), [
      {
        'tasks/greet/instruction.md': 'Make /app/greet.sh print exactly "hello".\n',
        'tasks/greet/task.toml':
          'version = "1.0"\n\n[metadata]\ncategory = "shell"\n\n[verifier]\ntimeout_sec = 60.0\n\n[verifier.env]\nGREETING = "hello"\n\n[agent]\ntimeout_sec = 120.0\n\n[environment]\nbuild_timeout_sec = 120.0\nallow_internet = false\ncpus = 1\nmemory = "512M"\n',
        'tasks/greet/environment/Dockerfile': `FROM ${baseTag}\nWORKDIR /app\nCOPY app/ /app/\nCOPY marker /root/.marker\n`,
        'tasks/greet/environment/app/greet.sh': 'echo hi\n',
        'tasks/greet/environment/marker': 'image-home\n',
        // The tests read /app (the image's WORKDIR) and an env var task.toml sets; bash-only syntax.
        // As Harbor runs them: as root with HOME=/root (writable, holding the image's /root), in a
        // /tests they may write into, and an /app they may write whatever the attempt changed
        // there. Any of these failing ends the script (set -e) before a reward: no verdict.
        'tasks/greet/tests/test.sh': [
          '#!/bin/bash',
          'set -euo pipefail',
          'mkdir -p /logs/verifier',
          '[[ "$(id -u)" == 0 && "$HOME" == /root ]] || { echo "uid $(id -u), HOME $HOME"; exit 3; }',
          'grep -q image-home "$HOME/.marker"',
          'echo probe > "$HOME/.probe"',
          'echo probe > /tests/probe',
          'if [[ "$(bash /app/greet.sh)" == "$GREETING" ]]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi',
          'echo "# checked" >> /app/greet.sh',
          '',
        ].join('\n'),
        // The reference solution is bash, with pipefail, and reads a file beside it in /solution.
        'tasks/greet/solution/solve.sh': '#!/bin/bash\nset -euo pipefail\ncat /solution/greet.sh | tee /app/greet.sh > /dev/null\n',
        'tasks/greet/solution/greet.sh': 'echo hello\n',
      },
    ]);
    const sandbox = '{ backend: docker, egress: none }';
    const m = '{ task: [greet] }';
    const attempts = (name: string, adapter: string) => `  ${name}:
    kind: run
    tasks: *tasks
    needs: [materialize, environment, certify]
    matrix: { task: [greet], arm: [only], rep: 1 }
    agent: { adapter: ${adapter} }
    arms: { only: {} }
    sandbox: ${sandbox}
  verify-${name}:
    kind: verify
    tasks: *tasks
    needs: [materialize, environment, certify, ${name}]
    matrix: { task: [greet], arm: [only], rep: 1 }
    sandbox: ${sandbox}
`;
    rig.write(
      'bench.config.yaml',
      `steps:
  materialize: { kind: materialize, tasks: &tasks { dir: datasets/tasks, repo: datasets, commit: ${commit} }, matrix: ${m} }
  environment: { kind: environment, tasks: *tasks, needs: [materialize], matrix: ${m} }
  certify: { kind: certify, tasks: *tasks, needs: [materialize, environment], matrix: ${m}, sandbox: ${sandbox}, policy: { repeats: 2 } }
${attempts('oracle', 'oracle')}${attempts('nop', 'nop')}`,
    );
    const r = await rig.cli('run');
    expect(r.code, r.stderr + (await rig.cli('show', 'certify/greet', 'verifier-logs/oracle-1.log')).stdout).toBe(0);
    const image = await rig.outputJson('environment/greet', 'image.json');
    expect(image).toMatchObject({ workdir: '/app', network: 'none', base_images: { [baseTag]: base } });
    expect(image.image_id).toMatch(/^sha256:[0-9a-f]{64}$/);
    // The tree an attempt starts from is the image's WORKDIR (the Dockerfile is not in it).
    expect((await rig.cli('show', 'environment/greet', 'tree/greet.sh')).stdout).toBe('echo hi\n');
    const cert = await rig.outputJson('certify/greet', 'certification.json');
    expect(cert, JSON.stringify(cert.reasons)).toMatchObject({ verdict: 'certified', checks: { nop: [false, false], oracle: [true, true] } });
    const oracle = await rig.outputJson('verify-oracle/greet/only/1', 'verdict.json');
    expect(oracle).toMatchObject({ pass: true, reward: { reward: 1 }, reward_file: 'reward.txt', sandbox: { backend: 'docker', image_id: image.image_id } });
    // The hidden tests the verifier wrote into were a copy: the task's own stay as they were.
    expect(existsSync(join(rig.dir, 'datasets', 'tasks', 'greet', 'tests', 'probe'))).toBe(false);
    expect(await rig.outputJson('verify-nop/greet/only/1', 'verdict.json')).toMatchObject({ pass: false, reward: { reward: 0 } });
    // The attempt ran in the built image, at /app, with the task's resources.
    const result = await rig.outputJson('oracle/greet/only/1', 'result.json');
    expect(result.sandbox).toMatchObject({ backend: 'docker', image_id: image.image_id, egress_mode: 'none', resources: { cpus: 1, memory_mb: 512 } });
    // A second run builds nothing again.
    const again = JSON.parse((await rig.cli('run', '--json')).stdout);
    expect(again.summary.executed).toBe(0);
  });
});

describe.skipIf(!dockerUp && process.env['PAIRBENCH_REQUIRE_SANDBOXES'] !== '1')('a Harbor task that needs the network', () => {
  it('certify says so in its reason when the tests download under egress none', async () => {
    const base = await ensureTestImage();
    const baseTag = (await execa('docker', ['image', 'inspect', '--format', '{{index .RepoTags 0}}', base])).stdout.trim();
    const [commit] = makeRepo(join(rig.dir, 'datasets'), [
      {
        'tasks/fetch/instruction.md': 'Make /app/greet.sh print "hello".\n',
        'tasks/fetch/task.toml': '[environment]\nallow_internet = true\n',
        'tasks/fetch/environment/Dockerfile': `FROM ${baseTag}\nWORKDIR /app\nCOPY app/ /app/\n`,
        'tasks/fetch/environment/app/greet.sh': 'echo hi\n',
        // The tests install a tool from the network first, as many real test.sh files do.
        'tasks/fetch/tests/test.sh':
          '#!/bin/bash\nset -euo pipefail\nmkdir -p /logs/verifier\nwget -q -O /tmp/tool http://tools.example.com/tool\nif [[ "$(bash /app/greet.sh)" == hello ]]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi\n',
        'tasks/fetch/solution/solve.sh': '#!/bin/bash\necho "echo hello" > /app/greet.sh\n',
      },
    ]);
    const m = '{ task: [fetch] }';
    rig.write(
      'bench.config.yaml',
      `steps:
  materialize: { kind: materialize, tasks: &tasks { dir: datasets/tasks, repo: datasets, commit: ${commit} }, matrix: ${m} }
  environment: { kind: environment, tasks: *tasks, needs: [materialize], matrix: ${m} }
  certify: { kind: certify, tasks: *tasks, needs: [materialize, environment], matrix: ${m}, sandbox: { backend: docker, egress: none }, policy: { repeats: 1 } }
`,
    );
    const r = await rig.cli('run');
    const cert = await rig.outputJson('certify/fetch', 'certification.json');
    expect(cert.verdict).toBe('rejected');
    expect(cert.reasons.join('\n')).toMatch(
      /the verifier fails with the reference solution: 1 failed \(command verifier\) -- task\.toml gives the task the network \(network mode public\) and this step runs with egress none, and the output shows a network failure/,
    );
    expect(r.stderr).toMatch(/^rejected certify\/fetch /m);
    // What the verifier printed is kept: the reason can be checked.
    expect((await rig.cli('show', 'certify/fetch', 'verifier-logs/oracle-1.log')).stdout).toMatch(/wget: bad address 'tools\.example\.com'/);
  });
});

describe.skipIf(!dockerUp && process.env['PAIRBENCH_REQUIRE_SANDBOXES'] !== '1')('SWE-bench: an image per instance', () => {
  it('sandbox.image sweb-style template: each instance runs in its own local image, pinned by ID in the key and the receipt; a missing one is named', async () => {
    const base = await ensureTestImage();
    // Two instances; only the first has its image built locally (here: tagged from the test image).
    await execa('docker', ['tag', base, 'pairbench-swe.x86_64.acme__calc-1:latest']);
    try {
      const repo = join(rig.dir, 'repos', 'calc');
      const [commit] = makeRepo(repo, [
        {
          'src/add.mjs': 'export const add = (a, b) => a - b;\n',
          'package.json': '{"type": "module"}\n',
          'test/add.test.mjs':
            "import { test } from 'node:test';\nimport assert from 'node:assert/strict';\nimport { add } from '../src/add.mjs';\ntest('add sums', () => assert.equal(add(2, 3), 5));\n",
        },
      ]);
      const instance = (id: string) => ({
        repo: 'acme/calc',
        instance_id: id,
        base_commit: commit,
        patch: FIX_ADD_PATCH,
        test_patch: '',
        problem_statement: 'add subtracts',
        FAIL_TO_PASS: ['add sums'],
        PASS_TO_PASS: [],
      });
      writeFileSync(join(rig.dir, 'instances.json'), JSON.stringify([instance('acme__calc-1'), instance('acme__calc-2')]));
      const sandbox = '{ backend: docker, egress: none, image: "pairbench-swe.x86_64.{instance_id}" }';
      rig.write(
        'bench.config.yaml',
        `steps:
  materialize: { kind: materialize, tasks: &tasks { swebench: instances.json, repos: { acme/calc: repos/calc }, test_command: "node --test --test-name-pattern={test} test/" }, matrix: &t { task: [acme__calc-1, acme__calc-2] } }
  attempts: { kind: run, tasks: *tasks, needs: [materialize], matrix: &a { task: [acme__calc-1, acme__calc-2], arm: [only], rep: 1 }, agent: { adapter: oracle }, arms: { only: {} }, sandbox: ${sandbox} }
  verify: { kind: verify, tasks: *tasks, needs: [materialize, attempts], matrix: *a, sandbox: ${sandbox} }
`,
      );
      const doctor = JSON.parse((await rig.cli('doctor', '--json', '--skip-canary')).stdout) as { checks: { name: string; ok: boolean; detail: string }[] };
      const images = doctor.checks.find((c) => c.name.startsWith('docker images pairbench-swe.x86_64.{instance_id} (step attempts)'));
      expect(images).toMatchObject({ ok: false, detail: '1 of 2 are not in the engine: pairbench-swe.x86_64.acme__calc-2' });
      const r = await rig.cli('run');
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(
        'image pairbench-swe.x86_64.acme__calc-2 (from pairbench-swe.x86_64.{instance_id}) is not in the engine: build or load it locally',
      );
      const verdict = await rig.outputJson('verify/acme__calc-1/only/1', 'verdict.json');
      expect(verdict).toMatchObject({ pass: true, sandbox: { backend: 'docker', image_id: base } });
      expect((await rig.outputJson('attempts/acme__calc-1/only/1', 'result.json')).sandbox.image_id).toBe(base);
      // The resolved ID is in the node's key.
      const ex = JSON.parse((await rig.cli('explain', 'verify/acme__calc-1/only/1', '--json')).stdout);
      expect(ex.preimage.annotation).toEqual({ image: { name: 'pairbench-swe.x86_64.acme__calc-1', id: base } });
    } finally {
      await execa('docker', ['rmi', 'pairbench-swe.x86_64.acme__calc-1:latest'], { reject: false });
    }
  });
});

describe.skipIf(!bwrap.ok && process.env['PAIRBENCH_REQUIRE_SANDBOXES'] !== '1')('SWE-bench grading as the harness does it', () => {
  /** A Python package whose hidden test patch changes a helper the tests import (calc/checks.py) and adds tests. */
  function instanceWithHelper(): { gold: string } {
    const repo = join(rig.dir, 'repos', 'pycalc');
    const [base] = makeRepo(repo, [
      {
        'calc/__init__.py': '',
        'calc/ops.py': 'def add(a, b):\n    return a - b\n',
        'calc/checks.py': 'EXPECTED = {}\n',
        'tests/__init__.py': '',
        'tests/test_calc.py':
          'import unittest\n\nfrom calc import ops\n\n\nclass CalcTests(unittest.TestCase):\n    def test_exists(self):\n        self.assertTrue(callable(ops.add))\n',
      },
    ]);
    const testPatch = [
      'diff --git a/calc/checks.py b/calc/checks.py',
      '--- a/calc/checks.py',
      '+++ b/calc/checks.py',
      '@@ -1 +1 @@',
      '-EXPECTED = {}',
      '+EXPECTED = {(2, 3): 5, (4, 1): 5}',
      'diff --git a/tests/test_calc.py b/tests/test_calc.py',
      '--- a/tests/test_calc.py',
      '+++ b/tests/test_calc.py',
      '@@ -1,8 +1,13 @@',
      ' import unittest',
      ' ',
      ' from calc import ops',
      '+from calc.checks import EXPECTED',
      ' ',
      ' ',
      ' class CalcTests(unittest.TestCase):',
      '     def test_exists(self):',
      '         self.assertTrue(callable(ops.add))',
      '+',
      '+    def test_add(self):',
      '+        for (a, b), want in EXPECTED.items():',
      '+            self.assertEqual(ops.add(a, b), want)',
      '',
    ].join('\n');
    const gold = [
      'diff --git a/calc/ops.py b/calc/ops.py',
      '--- a/calc/ops.py',
      '+++ b/calc/ops.py',
      '@@ -1,2 +1,2 @@',
      ' def add(a, b):',
      '-    return a - b',
      '+    return a + b',
      '',
    ].join('\n');
    // Python 3.11's unittest names a test "test_add (tests.test_calc.CalcTests.test_add)": Django's runner prints the same shape.
    // Run from tests/ as Django's runtests.py is, the module is test_calc.
    const id = (name: string) =>
      spawnSync(
        'python3',
        ['-c', `import sys; v=sys.version_info; print("${name} (test_calc.CalcTests${'.'}${name})" if v >= (3, 11) else "${name} (test_calc.CalcTests)")`],
        { encoding: 'utf8' },
      ).stdout.trim();
    const instance = {
      repo: 'acme/pycalc',
      instance_id: 'acme__pycalc-9',
      base_commit: base,
      patch: gold,
      test_patch: testPatch,
      problem_statement: 'add subtracts',
      version: '1.0',
      environment_setup_commit: base,
      FAIL_TO_PASS: JSON.stringify([id('test_add')]),
      PASS_TO_PASS: null,
    };
    writeFileSync(join(rig.dir, 'instances.json'), JSON.stringify([instance]));
    return { gold };
  }

  it('an attempt that also edits a file the test patch changes: its edit is discarded (as SWE-bench resets it to base), and Django-style ids resolve through the Django parser', async () => {
    instanceWithHelper();
    // The agent fixes ops.add, and "helps" by rewriting the helper the hidden test patch changes.
    const agent = "sed -i 's/a - b/a + b/' calc/ops.py && echo 'EXPECTED = {(0, 0): 0}' > calc/checks.py";
    rig.write(
      'bench.config.yaml',
      `steps:
  materialize: { kind: materialize, tasks: &tasks { swebench: instances.json, repos: { acme/pycalc: repos/pycalc }, test_commands: { acme/pycalc: { command: "cd tests && PYTHONPATH=.. python3 -m unittest -v {test_modules}", report: django } } }, matrix: { task: [acme__pycalc-9] } }
  attempts: { kind: run, tasks: *tasks, needs: [materialize], matrix: &a { task: [acme__pycalc-9], arm: [only], rep: 1 }, agent: { adapter: command, command: "${agent}" }, arms: { only: {} }, sandbox: { backend: bubblewrap, egress: none } }
  verify: { kind: verify, tasks: *tasks, needs: [materialize, attempts], matrix: *a, sandbox: { backend: bubblewrap, egress: none } }
`,
    );
    const r = await rig.cli('run');
    expect(r.code, r.stderr).toBe(0);
    const verdict = await rig.outputJson('verify/acme__pycalc-9/only/1', 'verdict.json');
    // Resolved: the test patch applied on the base helper, the agent's version of it gone.
    expect(verdict.pass, await rig.outputText('verify/acme__pycalc-9/only/1', 'verifier.log')).toBe(true);
    const entries = Object.entries(verdict.fail_to_pass) as [string, string][];
    expect(entries).toHaveLength(1);
    expect(entries[0]![0]).toMatch(/^test_add \(test_calc\.CalcTests(\.test_add)?\)$/);
    expect(entries[0]![1]).toBe('pass');
    const log = await rig.outputText('verify/acme__pycalc-9/only/1', 'verifier.log');
    // The repository's own command, given the test patch's modules as SWE-bench's directives name them.
    expect(log).toContain('$ cd tests && PYTHONPATH=.. python3 -m unittest -v calc.checks test_calc');
  });
});

describe.skipIf(!dockerUp && process.env['PAIRBENCH_REQUIRE_SANDBOXES'] !== '1')("Harbor's verifier semantics", () => {
  it('partial credit scored by the configured threshold; an empty reward is a verifier error; a verifier that needs the network certifies with the allowlist naming its host', async () => {
    const base = await ensureTestImage();
    const baseTag = (await execa('docker', ['image', 'inspect', '--format', '{{index .RepoTags 0}}', base])).stdout.trim();
    // The "internet" the fetch task's verifier needs: a server on the host's loopback, reached only through the proxy.
    const server = createServer((_req, res) => res.end('tool-ok'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    try {
      const task = (name: string, toml: string, testSh: string, solve: string, run = '') => ({
        [`tasks/${name}/instruction.md`]: 'Make /app/greet.sh print "hello".\n',
        [`tasks/${name}/task.toml`]: toml,
        [`tasks/${name}/environment/Dockerfile`]: `FROM ${baseTag}\nWORKDIR /app\nCOPY app/ /app/\n${run}`,
        [`tasks/${name}/environment/app/greet.sh`]: 'echo hi\n',
        [`tasks/${name}/tests/test.sh`]: `#!/bin/bash\nset -euo pipefail\nmkdir -p /logs/verifier\n${testSh}\n`,
        [`tasks/${name}/solution/solve.sh`]: `#!/bin/bash\n${solve}\n`,
      });
      const [commit] = makeRepo(join(rig.dir, 'datasets'), [
        {
          // Two checks; the reference solution meets one: partial credit, written as reward.json.
          ...task(
            'partial',
            '[verifier]\ntimeout_sec = 60.0\n',
            'n=0\n[[ "$(bash /app/greet.sh)" == hello ]] && n=$((n + 1))\n[[ -f /app/extra.txt ]] && n=$((n + 1))\ncase $n in 2) r=1.0 ;; 1) r=0.5 ;; *) r=0.0 ;; esac\necho "{\\"reward\\": $r}" > /logs/verifier/reward.json',
            'echo "echo hello" > /app/greet.sh',
          ),
          // A verifier that writes an empty reward.
          ...task('empty', '[verifier]\ntimeout_sec = 60.0\n', ': > /logs/verifier/reward.txt', 'echo "echo hello" > /app/greet.sh'),
          // Harbor's default network (public): the tests fetch a tool before checking.
          ...task(
            'fetch',
            '[verifier]\ntimeout_sec = 60.0\n',
            `echo "verifier uid=$(id -u)"\ntool=$(NO_PROXY= no_proxy= wget -q -O- http://127.0.0.1:${port}/tool || true)\nif [[ "$tool" == tool-ok && "$(bash /app/greet.sh)" == hello ]]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi`,
            'echo "echo hello" > /app/greet.sh',
          ),
          // Verifiers that need what the solution left outside the workspace (in Harbor's live container they would pass).
          ...task(
            'state',
            '[verifier]\ntimeout_sec = 60.0\n',
            'if [[ -f /tmp/state-ready && "$(bash /app/greet.sh)" == hello ]]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi',
            'echo "echo hello" > /app/greet.sh\necho ready > /tmp/state-ready',
          ),
          ...task(
            'installs',
            '[verifier]\ntimeout_sec = 60.0\n',
            'if [[ -f /etc/tool && "$(bash /app/greet.sh)" == hello ]]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi',
            'echo "echo hello" > /app/greet.sh\necho tool > /etc/tool',
          ),
        },
      ]);
      const docker = '{ backend: docker, egress: none }';
      rig.write(
        'bench.config.yaml',
        `steps:
  materialize: { kind: materialize, tasks: &tasks { dir: datasets/tasks, repo: datasets, commit: ${commit} }, matrix: { task: [partial, empty, fetch, state, installs] } }
  environment: { kind: environment, tasks: *tasks, needs: [materialize], matrix: { task: [partial, empty, fetch, state, installs] } }
  certify:
    kind: certify
    tasks: *tasks
    needs: [materialize, environment]
    matrix: { task: [partial, fetch, state, installs] }
    sandbox: { backend: docker, egress: allowlist, allow: ["127.0.0.1:${port}"] }
    reward: { threshold: 0.5 }
    policy: { repeats: 1 }
  certify-strict:
    kind: certify
    tasks: *tasks
    needs: [materialize, environment]
    matrix: { task: [fetch] }
    sandbox: { backend: docker, egress: allowlist, allow: ["127.0.0.1:${port}"] }
    strict_verifier: true
    policy: { repeats: 1 }
  attempts: { kind: run, tasks: *tasks, needs: [materialize, environment], matrix: &a { task: [partial, empty], arm: [only], rep: 1 }, agent: { adapter: oracle }, arms: { only: {} }, sandbox: ${docker} }
  verify: { kind: verify, tasks: *tasks, needs: [materialize, environment, attempts], matrix: *a, sandbox: ${docker}, reward: { threshold: 0.5 } }
  verify-strict: { kind: verify, tasks: *tasks, needs: [materialize, environment, attempts], matrix: { task: [partial], arm: [only], rep: 1 }, sandbox: ${docker} }
`,
      );
      const r = await rig.cli('run');
      expect(r.code, r.stderr).toBe(0);
      // Partial credit: 0.5 passes at threshold 0.5, not at the default (all ones).
      expect(await rig.outputJson('verify/partial/only/1', 'verdict.json')).toMatchObject({ pass: true, reward: { reward: 0.5 } });
      expect(await rig.outputJson('verify-strict/partial/only/1', 'verdict.json')).toMatchObject({ pass: false, reward: { reward: 0.5 } });
      // An empty reward file is no verdict (the attempt would be excluded as a verifier fault), never a 0.
      expect(await rig.outputJson('verify/empty/only/1', 'verdict.json')).toMatchObject({ pass: null, reward: null });
      expect(await rig.outputText('verify/empty/only/1', 'verifier.log')).toContain('no verdict: reward.txt is empty');
      // The verifier that needs the network certifies under the cohort's allowlist naming its host.
      const fetch = await rig.outputJson('certify/fetch', 'certification.json');
      expect(fetch.verdict, fetch.reasons.join('; ')).toBe('certified');
      const oracleLog = (await rig.cli('show', 'certify/fetch', 'verifier-logs/oracle-1.log')).stdout;
      expect(oracleLog).not.toContain('bad address');
      expect(oracleLog).toContain('verifier uid=0'); // Harbor's default verifier user
      // The stricter mode, asked for explicitly: offline as uid 1000, so this task cannot certify.
      const strict = await rig.outputJson('certify-strict/fetch', 'certification.json');
      expect(strict.verdict).toBe('rejected');
      expect(strict.reasons.join('; ')).toMatch(
        /the verifier fails with the reference solution -- task.toml gives the task the network .* and this step runs with egress none/,
      );
      expect((await rig.cli('show', 'certify-strict/fetch', 'verifier-logs/oracle-1.log')).stdout).toContain('verifier uid=1000');
      // A verifier that depends on state the solution made outside the workspace is named.
      const state = await rig.outputJson('certify/state', 'certification.json');
      expect(state.verdict).toBe('rejected');
      expect(state.solution_outside_workspace, JSON.stringify(state.reasons)).toEqual(['/tmp/state-ready']);
      expect(state.reasons.join('; ')).toContain('the reference solution also changed /tmp/state-ready outside the workspace');
      const installs = await rig.outputJson('certify/installs', 'certification.json');
      expect(installs.verdict).toBe('rejected');
      expect(installs.reasons.join('; ')).toMatch(
        /oracle: the reference script exited 1: .*Read-only file system -- the reference solution writes outside the workspace/,
      );
      const partial = await rig.outputJson('certify/partial', 'certification.json');
      expect(partial.verdict, partial.reasons.join('; ')).toBe('certified');
      // The threshold is frozen with the cohort's verify step.
      const ex = JSON.parse((await rig.cli('explain', 'verify/partial/only/1', '--json')).stdout);
      expect(ex.preimage.config.scoring).toEqual({ rewardThreshold: 0.5 });
    } finally {
      server.close();
    }
  });
});
