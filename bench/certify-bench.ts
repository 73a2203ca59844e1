/**
 * certify's scan of a checkout with its dependencies installed (10,000 files under node_modules,
 * every one full of benchmark words), against ripgrep over the same tree with the same patterns,
 * A/B in pairs in one run. The scan is what certify does before its discrimination check: the
 * stored tree read (verified, on threads), third-party files kept only when they hold an anchor
 * of a needle, every surface searched. Goal: the scan's median wall <= 2x ripgrep's; the task
 * certifies. The whole certify node (its verifier runs on six copies of the tree) is shown too.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Sha256 } from '../pipeline/digest.js';
import { Store } from '../pipeline/store/store.js';
import { DEFAULT_BENCHMARK_WORDS, installedAnchors, scanSurfaces, surfaceFromDir, surfaceFromStoredTree } from '../steps/certify/scan.js';
import { TREE } from '../steps/materialize.js';
import { loadTask } from '../steps/task.js';
import { FILES_PER_PACKAGE, installDependencies } from './dependency-tree.js';
import { git, median, must, nodeDurations, pairedRatios, spread, timed, type Timing } from './measure.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const bin = join(root, 'bin', 'pairbench.js');
const PACKAGES = 1000;
const ROUNDS = 7;
const CANARY = 'canary-3c9e1f52-4b7a-4d08-a6e2-1f0b9d8c7e65';
const SOLUTION = `diff --git a/src/add.mjs b/src/add.mjs
--- a/src/add.mjs
+++ b/src/add.mjs
@@ -1 +1 @@
-export const add = (left, right) => left - right;
+export const add = (left, right) => left + right;
`;

function project(dir: string): void {
  const repo = join(dir, 'repo');
  mkdirSync(join(repo, 'src'), { recursive: true });
  writeFileSync(join(repo, 'package.json'), JSON.stringify({ name: 'calc', version: '1.0.0', type: 'module' }, null, 2));
  writeFileSync(join(repo, 'src', 'add.mjs'), 'export const add = (left, right) => left - right;\n');
  installDependencies(repo, { packages: PACKAGES, packageName: 'calc', testName: 'add_works' });
  git(repo, 'init', '-q', '-b', 'main');
  git(repo, 'add', '-A');
  git(repo, 'commit', '-q', '-m', 'npm install');
  const task = join(dir, 'tasks', 'fix-add');
  mkdirSync(join(task, 'verifier'), { recursive: true });
  writeFileSync(
    join(task, 'task.yaml'),
    `id: fix-add
family: arithmetic
category: bugfix
repo: { path: ../../repo, commit: ${git(repo, 'rev-parse', 'HEAD')} }
prompt: "add(left, right) in src/add.mjs returns the wrong result. Fix it."
allowed_paths: ["src/**"]
canary: ${CANARY}
verifier:
  fail_to_pass: { add_works: node "$VERIFIER_DIR/test_add.mjs" }
  timeout: 60
solution: { patch: solution.patch }
`,
  );
  writeFileSync(join(task, 'solution.patch'), SOLUTION);
  writeFileSync(
    join(task, 'verifier', 'test_add.mjs'),
    "const { add } = await import(process.cwd() + '/src/add.mjs');\nif (add(2, 3) !== 5) process.exit(1);\n",
  );
  writeFileSync(
    join(dir, 'bench.config.yaml'),
    `steps:
  materialize: { kind: materialize, matrix: { task: [fix-add] } }
  certify:
    kind: certify
    needs: [materialize]
    matrix: { task: [fix-add] }
    sandbox: { backend: local, egress: open }
`,
  );
}

/** The patterns certify searches for, as ripgrep takes them: the solution's lines, the canary, the test name, the benchmark words. */
function patterns(): string {
  const solution = SOLUTION.split('\n')
    .filter((l) => /^[+-][^+-]/.test(l))
    .map((l) => l.slice(1).trim());
  return [...solution, CANARY, 'add_works', ...DEFAULT_BENCHMARK_WORDS].join('\n') + '\n';
}

let ok = true;
console.log(
  `certify benchmark: the static scan of a checkout with ${PACKAGES * FILES_PER_PACKAGE} installed files, against ripgrep over the same tree (A/B in pairs)\n`,
);
const rg = spawnSync('rg', ['--version'], { encoding: 'utf8' });
if (rg.status !== 0) {
  console.log('  ripgrep is not installed (Debian: apt-get install ripgrep): no anchor to measure against; MISSED');
  process.exit(1);
}
// On tmpfs: the disk's own cost (large and variable on a busy machine) stays out of both sides.
const dir = mkdtempSync(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'pairbench-certify-bench-'));
try {
  project(dir);
  const run = timed(() => spawnSync(process.execPath, [bin, 'run', '--progress', 'none', '--config', join(dir, 'bench.config.yaml')], { encoding: 'utf8' }));
  must(run.value, 'pairbench run (materialize, certify)');
  const certifyMs = nodeDurations(dir).get('certify/fix-add')!;

  const store = new Store(join(dir, '.pairbench'));
  const materialized = [...store.actions.list()].flatMap((r) => {
    const found = store.actions.get(r.key);
    return found.status === 'hit' && found.record.node === 'materialize/fix-add' ? [found.record.outputs[TREE.name]!.digest as Sha256] : [];
  });
  const treeDigest = materialized[0]!;
  const onDisk = join(dir, 'tree');
  store.cas.materialize({ type: 'dir', digest: treeDigest }, onDisk);
  writeFileSync(join(dir, 'patterns.txt'), patterns());

  const loaded = loadTask(join(dir, 'tasks'), 'fix-add');
  if (!loaded.ok) throw new Error(`the bench's task does not load: ${JSON.stringify(loaded.error)}`);
  const task = loaded.value;
  const verifierFiles = surfaceFromDir('tree', 'verifier', join(dir, 'tasks', 'fix-add', 'verifier')).files;
  const scan: Timing[] = [];
  const anchor: Timing[] = [];
  let findings = -1;
  for (let i = 0; i < ROUNDS; i++) {
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    const tree = await surfaceFromStoredTree('tree', treeDigest, store.cas, { anchors: installedAnchors(task, verifierFiles) });
    findings = scanSurfaces({
      task,
      surfaces: [{ kind: 'prompt', name: 'prompt', files: [{ path: 'prompt', text: task.prompt }] }, tree],
      verifierFiles,
    }).length;
    const cpu = process.cpuUsage(cpu0);
    scan.push({ wallMs: performance.now() - t0, cpuMs: (cpu.user + cpu.system) / 1000 });
    const r = timed(() =>
      spawnSync('rg', ['--no-ignore', '--hidden', '-F', '-i', '-c', '-f', join(dir, 'patterns.txt'), onDisk], { encoding: 'utf8', maxBuffer: 1 << 26 }),
    );
    if (r.value.status !== 0) throw new Error(`rg exited ${r.value.status}: ${r.value.stderr}`);
    anchor.push(r.timing);
  }
  const p = pairedRatios(scan, anchor);
  const wallX = median(p.wall);
  const pass = wallX <= 2 && findings === 0;
  ok &&= pass;
  console.log(
    `  scan wall ${spread(scan.map((t) => t.wallMs))} ms, CPU ${spread(scan.map((t) => t.cpuMs))} ms (the first round starts its threads); ` +
      `rg --no-ignore --hidden -F -i -c -f (${patterns().split('\n').length - 1} patterns) wall ${spread(anchor.map((t) => t.wallMs))} ms, CPU ${spread(anchor.map((t) => t.cpuMs))} ms; ` +
      `paired x${ROUNDS}: wall ${spread(p.wall, 2)}x, CPU ${spread(p.cpu, 2)}x; findings ${findings}; goal <= 2x wall (median), no finding ${pass ? 'PASS' : 'MISSED'}`,
  );
  console.log(
    `  the whole certify node (the scan, then the tree written out for the discrimination check: nop and oracle, 3 times each): ${(certifyMs / 1000).toFixed(1)} s; materialize + certify run ${(run.timing.wallMs / 1000).toFixed(1)} s`,
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
process.exitCode = ok ? 0 : 1;
