/**
 * materialize against `git archive | tar -x` of the same commit into the same file system,
 * measured in one run: a source tree of many small files, and a 1 GiB tree (which must
 * materialize at all: a buffered `git archive` failed past 100 MB).
 * Goal: materialize <= 2x the anchor on the source tree; the 1 GiB tree materializes.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { git, median, nodeDurations, pairedRatios, spread, timed, type Timing } from './measure.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const bin = join(root, 'bin', 'pairbench.js');
/** Paired rounds per tree (each a materialize node and an anchor); a first node, which clones the mirror, is left out. */
const ROUNDS = 3;

/** A committed repository: `files(repo)` writes its tree. Stored without compression (the bench measures trees, not zlib). */
function repository(dir: string, files: (repo: string) => void): { repo: string; commit: string } {
  const repo = join(dir, 'repo');
  mkdirSync(repo, { recursive: true });
  files(repo);
  git(repo, 'init', '-q', '-b', 'main');
  git(repo, 'config', 'core.compression', '0');
  git(repo, 'add', '-A');
  git(repo, 'commit', '-q', '-m', 'tree');
  return { repo, commit: git(repo, 'rev-parse', 'HEAD') };
}

/**
 * materialize of ROUNDS tasks of the same commit beside `git archive | tar -x` of it, A/B per
 * round (each pair under the same load): the anchor's wall and CPU, the node's wall (its record)
 * and CPU (its run's less a no-op run's made in full, without the memo: start-up and planning). A first task clones the store's
 * mirror, unmeasured. On a failure, the node's own log is kept in the message.
 */
function pairedRounds(dir: string, repo: string, commit: string): { anchor: Timing[]; mirrorAnchor: Timing[]; node: Timing[] } | string {
  const ids = Array.from({ length: ROUNDS + 1 }, (_, i) => `t${i}`);
  for (const id of ids) {
    mkdirSync(join(dir, 'tasks', id), { recursive: true });
    writeFileSync(
      join(dir, 'tasks', id, 'task.yaml'),
      `id: ${id}\nrepo: { path: ../../repo, commit: ${commit} }\nprompt: nothing\nverifier: { command: "true" }\n`,
    );
  }
  const config = join(dir, 'bench.config.yaml');
  writeFileSync(config, `concurrency: { global: 1 }\nsteps:\n  materialize: { kind: materialize, matrix: { task: [${ids.join(', ')}] } }\n`);
  const pb = (...args: string[]) => timed(() => spawnSync(process.execPath, [bin, ...args, '--config', config], { encoding: 'utf8', maxBuffer: 1 << 26 }));
  // The baseline is a no-op made in full (the planning every run that builds pays), not a memo's replay.
  const planned = (...args: string[]) =>
    timed(() => spawnSync(process.execPath, [bin, ...args, '--config', config], { encoding: 'utf8', env: { ...process.env, PAIRBENCH_MEMO: '0' } }));
  const failure = (node: string, r: { stderr: string }) =>
    `${node}: ${r.stderr.slice(-800)}\n${node}'s log:\n${pb('show', node, 'log').value.stdout.slice(-2000)}`;
  const first = pb('run', '--progress', 'none', 'materialize/t0').value;
  if (first.status !== 0) return failure('materialize/t0', first);
  const anchor: Timing[] = [];
  const mirrorAnchor: Timing[] = [];
  const node: Timing[] = [];
  // pairbench's own mirror of the repository (a pack: see ensureMirror), archived the same way.
  const mirrors = join(dir, '.pairbench', 'mirrors');
  const mirror = join(
    mirrors,
    readdirSync(mirrors).find((n) => n.endsWith('.git'))!,
  );
  const archive = (from: string, id: string): Timing => {
    const dest = join(dir, `anchor-${id}`);
    mkdirSync(dest);
    const a = timed(() =>
      spawnSync('sh', ['-c', 'git -C "$1" archive --format=tar "$2" | tar -x -C "$3" -f -', 'sh', from, commit, dest], { stdio: 'ignore' }),
    );
    if (a.value.status !== 0) throw new Error('git archive | tar -x failed');
    rmSync(dest, { recursive: true, force: true });
    return a.timing;
  };
  for (const id of ids.slice(1)) {
    const fromRepo = archive(repo, id);
    mirrorAnchor.push(archive(mirror, id));
    const run = pb('run', '--progress', 'none', `materialize/${id}`);
    if (run.value.status !== 0) return failure(`materialize/${id}`, run.value);
    const noop = planned('run', '--progress', 'none', `materialize/${id}`);
    anchor.push(fromRepo);
    node.push({ wallMs: nodeDurations(dir).get(`materialize/${id}`)!, cpuMs: Math.max(0, run.timing.cpuMs - noop.timing.cpuMs) });
  }
  return { anchor, mirrorAnchor, node };
}

/** "materialize W ms ... git archive | tar -x ... ratio" for a tree, paired. */
function report(tree: string, r: { anchor: Timing[]; mirrorAnchor: Timing[]; node: Timing[] }): { wallX: number; cpuX: number; line: string } {
  const p = pairedRatios(r.node, r.anchor);
  const m = pairedRatios(r.node, r.mirrorAnchor);
  const wallX = median(p.wall);
  const cpuX = median(p.cpu);
  return {
    wallX,
    cpuX,
    line:
      `  ${tree}: materialize wall ${spread(r.node.map((t) => t.wallMs))} ms, CPU ${spread(r.node.map((t) => t.cpuMs))} ms; ` +
      `git archive | tar -x wall ${spread(r.anchor.map((t) => t.wallMs))} ms, CPU ${spread(r.anchor.map((t) => t.cpuMs))} ms; ` +
      `paired x${r.node.length}: wall ${spread(p.wall, 2)}x, CPU ${spread(p.cpu, 2)}x ` +
      `(against the same from pairbench's mirror, a pack: wall ${spread(r.mirrorAnchor.map((t) => t.wallMs))} ms, CPU ${spread(r.mirrorAnchor.map((t) => t.cpuMs))} ms; ` +
      `${spread(m.wall, 2)}x, ${spread(m.cpu, 2)}x)`,
  };
}

let ok = true;
console.log('materialize benchmark: the pinned commit into the store, against git archive | tar -x of it (same file system, A/B in pairs)\n');
// On tmpfs (as the issue measured): the file system's own cost, large and variable on a busy disk, stays out of the ratio.
const small = mkdtempSync(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'pairbench-mat-src-'));
try {
  const FILES = 8000;
  const { repo, commit } = repository(small, (r) => {
    for (let i = 0; i < FILES; i++) {
      const d = join(r, 'src', `m${i % 200}`);
      mkdirSync(d, { recursive: true });
      writeFileSync(join(d, `f${i}.ts`), `export const v${i} = ${JSON.stringify(randomBytes(1500).toString('base64'))};\n`);
    }
  });
  const rounds = pairedRounds(small, repo, commit);
  if (typeof rounds === 'string') throw new Error(`materialize failed: ${rounds}`);
  const r = report(`source tree (${FILES} files, ~16 MB, tmpfs)`, rounds);
  const pass = r.wallX <= 2 && r.cpuX <= 2;
  ok &&= pass;
  console.log(`${r.line}; goal <= 2x both ${pass ? 'PASS' : 'MISSED'}`);
} finally {
  rmSync(small, { recursive: true, force: true });
}
const large = mkdtempSync(join(tmpdir(), 'pairbench-mat-1g-'));
try {
  const { repo, commit } = repository(large, (r) => {
    for (let i = 0; i < 64; i++) writeFileSync(join(r, `blob-${i}.bin`), randomBytes(16 << 20));
  });
  const rounds = pairedRounds(large, repo, commit);
  ok &&= typeof rounds !== 'string';
  console.log(
    typeof rounds === 'string' ? `  1 GiB tree: materialize FAILED: ${rounds}` : `${report('1 GiB tree (64 x 16 MiB)', rounds).line}; goal: materializes PASS`,
  );
} finally {
  rmSync(large, { recursive: true, force: true });
}
process.exitCode = ok ? 0 : 1;
