/**
 * Harness overhead per attempt (nop agent, trivial verifier) for each sandbox
 * backend, against the bare cost of starting that sandbox once, in the same run.
 * Goals per node (a run node, a verify node): bubblewrap <= 2x a bare bwrap start
 * from Node, docker <= 1.1x a bare `docker run`; local is shown as an anchor only.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { median, nodeDurations } from './measure.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const bin = join(root, 'bin', 'pairbench.js');
const REPS = 5;

function timeIt(argv: string[], n = 10): number {
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = process.hrtime.bigint();
    const r = spawnSync(argv[0]!, argv.slice(1), { stdio: 'ignore' });
    if (r.status !== 0) throw new Error(`${argv.join(' ')} failed`);
    times.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  return median(times);
}

const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', args, {
    cwd,
    encoding: 'utf8',
    env: {
      PATH: process.env['PATH'],
      GIT_AUTHOR_NAME: 'b',
      GIT_AUTHOR_EMAIL: 'b@b',
      GIT_COMMITTER_NAME: 'b',
      GIT_COMMITTER_EMAIL: 'b@b',
      GIT_AUTHOR_DATE: '2026-01-01T00:00:00Z',
      GIT_COMMITTER_DATE: '2026-01-01T00:00:00Z',
      HOME: '/nonexistent',
    },
  }).trim();

function project(backend: string, image: string | undefined): string {
  const dir = mkdtempSync(join(tmpdir(), `pairbench-bench-${backend}-`));
  const repo = join(dir, 'repo');
  mkdirSync(join(repo, 'src'), { recursive: true });
  writeFileSync(join(repo, 'src', 'a.txt'), 'a\n');
  git(repo, 'init', '-q');
  git(repo, 'add', '-A');
  git(repo, 'commit', '-qm', 'x');
  const commit = git(repo, 'rev-parse', 'HEAD');
  mkdirSync(join(dir, 'tasks', 't1'), { recursive: true });
  writeFileSync(
    join(dir, 'tasks', 't1', 'task.yaml'),
    `id: t1\nrepo: { path: ../../repo, commit: ${commit} }\nprompt: nothing\nverifier: { command: "true" }\n`,
  );
  const sandbox = backend === 'local' ? '{ backend: local, egress: open }' : `{ backend: ${backend}, egress: none${image ? `, image: "${image}"` : ''} }`;
  writeFileSync(
    join(dir, 'bench.config.yaml'),
    `concurrency: { global: 1 }
steps:
  materialize: { kind: materialize, matrix: { task: [t1] } }
  attempts:
    kind: run
    needs: [materialize]
    matrix: { task: [t1], arm: [control, treatment], rep: ${REPS} }
    agent: { adapter: nop }
    arms: { control: {}, treatment: {} }
    sandbox: ${sandbox}
  verify:
    kind: verify
    needs: [materialize, attempts]
    matrix: { task: [t1], arm: [control, treatment], rep: ${REPS} }
    sandbox: ${sandbox}
`,
  );
  return dir;
}

const bwrapBare = [
  'bwrap',
  '--unshare-all',
  '--unshare-user',
  '--uid',
  '1000',
  '--gid',
  '1000',
  '--cap-drop',
  'ALL',
  '--die-with-parent',
  '--ro-bind',
  '/usr',
  '/usr',
  '--symlink',
  'usr/bin',
  '/bin',
  '--symlink',
  'usr/lib',
  '/lib',
  '--symlink',
  'usr/lib64',
  '/lib64',
  '--proc',
  '/proc',
  '--dev',
  '/dev',
  'true',
];
const dockerImage = spawnSync('docker', ['images', '--no-trunc', '-q', 'pairbench-test'], { encoding: 'utf8' }).stdout?.trim().split('\n')[0] || undefined;
const backends: { name: string; bare: string[] | null; image?: string; skip?: string }[] = [
  { name: 'local', bare: ['sh', '-c', 'true'] },
  { name: 'bubblewrap', bare: spawnSync('bwrap', ['--version']).status === 0 ? bwrapBare : null },
  dockerImage
    ? { name: 'docker', bare: ['docker', 'run', '--rm', '--network', 'none', dockerImage, 'true'], image: dockerImage }
    : { name: 'docker', bare: null, skip: 'no engine or no pairbench-test image (run the docker tests once to build it)' },
];

// Per sandboxed node against one bare start of that sandbox (the issue's goals); local has none: it isolates nothing.
const GOALS: Record<string, number> = { bubblewrap: 2, docker: 1.1 };
let ok = true;
console.log(`execution benchmark: ${2 * REPS} attempts per backend (nop agent, verifier "true"), sequential\n`);
for (const b of backends) {
  if (!b.bare) {
    console.log(`  ${b.name.padEnd(10)} skipped: ${b.skip ?? 'not installed'}`);
    continue;
  }
  const bare = timeIt(b.bare, b.name === 'docker' ? 5 : 10);
  const dir = project(b.name, b.image);
  const r = spawnSync(process.execPath, [bin, 'run', '--progress', 'none', '--config', join(dir, 'bench.config.yaml')], { encoding: 'utf8' });
  if (r.status !== 0) {
    console.log(`  ${b.name.padEnd(10)} FAILED: ${r.stderr.slice(-500)}`);
    ok = false;
    continue;
  }
  const d = nodeDurations(dir);
  const runMs = median([...d].filter(([n]) => n.startsWith('attempts/')).map(([, v]) => v));
  const verifyMs = median([...d].filter(([n]) => n.startsWith('verify/')).map(([, v]) => v));
  const attempt = runMs + verifyMs;
  const goal = GOALS[b.name];
  const met = goal === undefined || Math.max(runMs, verifyMs) / bare <= goal;
  ok &&= met;
  console.log(
    `  ${b.name.padEnd(10)} bare start ${bare.toFixed(0).padStart(5)} ms | run node ${runMs.toFixed(0).padStart(5)} ms, verify node ${verifyMs.toFixed(0).padStart(5)} ms | ` +
      `per node ${(runMs / bare).toFixed(2)}x / ${(verifyMs / bare).toFixed(2)}x, per attempt (2 sandboxes) ${(attempt / bare).toFixed(2)}x of one bare start` +
      (goal === undefined ? ' (anchor only)' : `; goal per node <= ${goal}x ${met ? 'PASS' : 'MISSED'}`),
  );
  rmSync(dir, { recursive: true, force: true });
}
process.exitCode = ok ? 0 : 1;
