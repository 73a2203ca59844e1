/**
 * materialize against `git archive | tar -x` of the same commit into the same file system,
 * measured in one run: a source tree of many small files, and a 1 GiB tree (which must
 * materialize at all: a buffered `git archive` failed past 100 MB).
 * Goal: materialize <= 2x the anchor on the source tree; the 1 GiB tree materializes.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { median, nodeDurations } from './measure.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const bin = join(root, 'bin', 'pairbench.js');
const NODES = 4; // the first also clones the store's mirror: its time is left out

const env = {
  PATH: process.env['PATH'],
  GIT_AUTHOR_NAME: 'b',
  GIT_AUTHOR_EMAIL: 'b@b',
  GIT_COMMITTER_NAME: 'b',
  GIT_COMMITTER_EMAIL: 'b@b',
  HOME: '/nonexistent',
};
const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, encoding: 'utf8', env, maxBuffer: 1 << 26 }).trim();

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

/** materialize of NODES tasks of the same commit, one at a time: durations of all but the first. */
function materialize(dir: string, commit: string): { ms: number[]; ok: boolean; error: string } {
  const ids = Array.from({ length: NODES }, (_, i) => `t${i}`);
  for (const id of ids) {
    mkdirSync(join(dir, 'tasks', id), { recursive: true });
    writeFileSync(
      join(dir, 'tasks', id, 'task.yaml'),
      `id: ${id}\nrepo: { path: ../../repo, commit: ${commit} }\nprompt: nothing\nverifier: { command: "true" }\n`,
    );
  }
  writeFileSync(
    join(dir, 'bench.config.yaml'),
    `concurrency: { global: 1 }\nsteps:\n  materialize: { kind: materialize, matrix: { task: [${ids.join(', ')}] } }\n`,
  );
  const r = spawnSync(process.execPath, [bin, 'run', '--progress', 'none', '--config', join(dir, 'bench.config.yaml')], { encoding: 'utf8' });
  if (r.status !== 0) return { ms: [], ok: false, error: r.stderr.slice(-800) };
  const byNode = nodeDurations(dir);
  return { ms: ids.slice(1).map((id) => byNode.get(`materialize/${id}`)!), ok: true, error: '' };
}

function anchor(dir: string, repo: string, commit: string): number {
  const times: number[] = [];
  for (let i = 0; i < NODES - 1; i++) {
    const dest = join(dir, `anchor-${i}`);
    mkdirSync(dest);
    const t = process.hrtime.bigint();
    const r = spawnSync('sh', ['-c', `git -C "$1" archive --format=tar "$2" | tar -x -C "$3" -f -`, 'sh', repo, commit, dest], { stdio: 'ignore' });
    if (r.status !== 0) throw new Error('git archive | tar -x failed');
    times.push(Number(process.hrtime.bigint() - t) / 1e6);
    rmSync(dest, { recursive: true, force: true });
  }
  return median(times);
}

let ok = true;
console.log('materialize benchmark: the pinned commit into the store, against git archive | tar -x of it (same file system, same run)\n');

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
  const a = anchor(small, repo, commit);
  const m = materialize(small, commit);
  if (!m.ok) throw new Error(`materialize failed: ${m.error}`);
  const x = median(m.ms) / a;
  ok &&= x <= 2;
  console.log(
    `  source tree (${FILES} files, ~16 MB, tmpfs) materialize ${median(m.ms).toFixed(0).padStart(5)} ms   git archive | tar -x ${a.toFixed(0).padStart(5)} ms   ${x.toFixed(2)}x   goal <= 2x ${x <= 2 ? 'PASS' : 'MISSED'}`,
  );
} finally {
  rmSync(small, { recursive: true, force: true });
}

const large = mkdtempSync(join(tmpdir(), 'pairbench-mat-1g-'));
try {
  const { repo, commit } = repository(large, (r) => {
    for (let i = 0; i < 64; i++) writeFileSync(join(r, `blob-${i}.bin`), randomBytes(16 << 20));
  });
  const a = anchor(large, repo, commit);
  const m = materialize(large, commit);
  ok &&= m.ok;
  console.log(
    m.ok
      ? `  1 GiB tree (64 x 16 MiB)             materialize ${median(m.ms).toFixed(0).padStart(5)} ms   git archive | tar -x ${a.toFixed(0).padStart(5)} ms   ${(median(m.ms) / a).toFixed(2)}x   goal: materializes PASS`
      : `  1 GiB tree: materialize FAILED: ${m.error}`,
  );
} finally {
  rmSync(large, { recursive: true, force: true });
}
process.exitCode = ok ? 0 : 1;
