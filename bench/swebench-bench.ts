/**
 * SWE-bench at a real size: verifying a Python instance of 150 listed tests (2
 * FAIL_TO_PASS, 148 PASS_TO_PASS) against one plain pytest run of those same tests
 * in the same tree, measured side by side in this run. The verification is the
 * verify node of a passing attempt (oracle) with certify upstream, so its canary runs
 * too: the sandbox, the test runner once over every test, and the canary's run of
 * the FAIL_TO_PASS tests. Goal: at most 1.5x the plain run.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { git, median, nodeDurations } from './measure.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const bin = join(root, 'bin', 'pairbench.js');
const P2P = 148;
const PLAIN_RUNS = 5;

if (spawnSync('python3', ['-m', 'pytest', '--version']).status !== 0 || spawnSync('bwrap', ['--version']).status !== 0) {
  console.log('swebench benchmark: skipped (needs python3 with pytest, and bwrap)');
  process.exit(0);
}

const dir = mkdtempSync(join(tmpdir(), 'pairbench-bench-swebench-'));
try {
  // Each test does a little real work (a few ms), as a real suite's do.
  const repo = join(dir, 'repo');
  mkdirSync(join(repo, 'tests'), { recursive: true });
  writeFileSync(join(repo, 'calc.py'), 'def add(a, b):\n    return a - b\n\n\ndef work(n):\n    return sum(i * i for i in range(n))\n');
  writeFileSync(join(repo, 'tests', '__init__.py'), '');
  writeFileSync(
    join(repo, 'tests', 'test_work.py'),
    `import calc\n\n${Array.from({ length: P2P }, (_, i) => `def test_work_${i}():\n    assert calc.work(20000 + ${i}) > 0\n`).join('\n')}`,
  );
  git(repo, 'init', '-q');
  git(repo, 'add', '-A');
  git(repo, 'commit', '-qm', 'base');
  const base = git(repo, 'rev-parse', 'HEAD');
  const testPatch = [
    'diff --git a/tests/test_add.py b/tests/test_add.py',
    'new file mode 100644',
    '--- /dev/null',
    '+++ b/tests/test_add.py',
    '@@ -0,0 +1,7 @@',
    '+import calc',
    '+',
    '+',
    '+def test_add():',
    '+    assert calc.add(2, 3) == 5',
    '+def test_add_zero():',
    '+    assert calc.add(0, 3) == 3',
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
  const f2p = ['tests/test_add.py::test_add', 'tests/test_add.py::test_add_zero'];
  const p2p = Array.from({ length: P2P }, (_, i) => `tests/test_work.py::test_work_${i}`);
  const instance = {
    repo: 'acme/calc',
    instance_id: 'acme__calc-1',
    base_commit: base,
    patch: gold,
    test_patch: testPatch,
    problem_statement: 'add subtracts',
    FAIL_TO_PASS: JSON.stringify(f2p),
    PASS_TO_PASS: JSON.stringify(p2p),
  };
  writeFileSync(join(dir, 'instances.json'), JSON.stringify([instance], null, 2));
  const runner = 'python3 -m pytest -rA -p no:cacheprovider {tests}';
  const sandbox = '{ backend: bubblewrap, egress: none }';
  writeFileSync(
    join(dir, 'bench.config.yaml'),
    `steps:
  materialize: { kind: materialize, tasks: &tasks { swebench: instances.json, repos: { acme/calc: repo }, test_command: "${runner}" }, matrix: { task: [acme__calc-1] } }
  certify: { kind: certify, tasks: *tasks, needs: [materialize], matrix: { task: [acme__calc-1] }, sandbox: ${sandbox}, policy: { repeats: 1 } }
  attempts: { kind: run, tasks: *tasks, needs: [materialize, certify], matrix: { task: [acme__calc-1], arm: [only], rep: 3 }, agent: { adapter: oracle }, arms: { only: {} }, sandbox: ${sandbox} }
  verify: { kind: verify, tasks: *tasks, needs: [materialize, certify, attempts], matrix: { task: [acme__calc-1], arm: [only], rep: 3 }, sandbox: ${sandbox} }
`,
  );
  // The plain run: the same tree (gold and test patch applied), the same ids, one pytest, no sandbox.
  const plain = join(dir, 'plain');
  execFileSync('git', ['clone', '-q', repo, plain]);
  writeFileSync(join(plain, 'gold.patch'), gold);
  writeFileSync(join(plain, 'test.patch'), testPatch);
  git(plain, 'apply', 'gold.patch');
  git(plain, 'apply', 'test.patch');
  const plainMs: number[] = [];
  const plainRuns = (n: number) => {
    for (let i = 0; i < n; i++) {
      const t = process.hrtime.bigint();
      const p = spawnSync('python3', ['-m', 'pytest', '-rA', '-p', 'no:cacheprovider', ...f2p, ...p2p], { cwd: plain, stdio: 'ignore' });
      if (p.status !== 0) throw new Error('the plain pytest run failed');
      plainMs.push(Number(process.hrtime.bigint() - t) / 1e6);
    }
  };
  // Plain runs before and after the verifications, so both see the same machine.
  plainRuns(PLAIN_RUNS);
  const r = spawnSync(process.execPath, [bin, 'run', '--progress', 'none', '--jobs', '1', '--config', join(dir, 'bench.config.yaml')], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`the run failed: ${r.stderr.slice(-800)}`);
  plainRuns(PLAIN_RUNS);
  const verifyMs = [...nodeDurations(dir)].filter(([node]) => node.startsWith('verify/')).map(([, ms]) => ms);

  const v = median(verifyMs);
  const p = median(plainMs);
  const ratio = v / p;
  console.log(`swebench benchmark: one instance of ${f2p.length + p2p.length} listed tests (JSON array, pytest -rA runner, bubblewrap, canary included)\n`);
  const row = (label: string, value: string) => console.log(`  ${label.padEnd(36)}${value}`);
  row(`verify node (median of ${verifyMs.length})`, `${v.toFixed(0).padStart(6)} ms`);
  row(`plain pytest run (median of ${plainMs.length})`, `${p.toFixed(0).padStart(6)} ms   (the anchor, same run)`);
  row('ratio', `${ratio.toFixed(2).padStart(6)}x    goal <= 1.50x   ${ratio <= 1.5 ? 'ok' : 'MISSED'}`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
