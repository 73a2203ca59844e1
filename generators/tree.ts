import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { gitApply, HERMETIC_GIT_ENV as GIT_ENV } from '../sandboxes/git-apply.js';
import { loadExeca } from '../sandboxes/lazy-execa.js';

async function git(args: string[], options: { cwd?: string; input?: string; env?: Record<string, string> } = {}): Promise<string> {
  const r = await (
    await loadExeca()
  )('git', args, {
    cwd: options.cwd,
    env: { ...GIT_ENV, ...options.env },
    extendEnv: false,
    reject: false,
    stripFinalNewline: false,
    ...(options.input !== undefined ? { input: options.input } : {}),
  });
  if (r.exitCode !== 0) throw new Error(`git ${args.join(' ')}: ${String(r.stderr).trim() || `exit ${r.exitCode}`}`);
  return String(r.stdout);
}

/** The commit `rev` names in `repo` (full id), or null when there is none. */
export async function resolveCommit(repo: string, rev: string): Promise<string | null> {
  try {
    return (await git(['-C', repo, 'rev-parse', '--verify', '--quiet', `${rev}^{commit}`])).trim();
  } catch {
    return null;
  }
}

/** Writes the tree of `commit` into `dest` (`git archive | tar -x`): no .git, never the working tree. */
export async function exportCommit(repo: string, commit: string, dest: string): Promise<void> {
  mkdirSync(dest, { recursive: true });
  await (
    await loadExeca()
  )('git', ['-C', repo, 'archive', '--format=tar', commit], { env: GIT_ENV, extendEnv: false }).pipe('tar', ['-x', '-C', dest, '-f', '-']);
}

/** Regular files of a commit with their modes: path -> '100644' | '100755'. */
export async function listCommitFiles(repo: string, commit: string): Promise<Map<string, string>> {
  const out = await git(['-C', repo, 'ls-tree', '-r', '-z', '--full-tree', commit]);
  const files = new Map<string, string>();
  for (const rec of out.split('\0')) {
    const m = /^(\d+) blob [0-9a-f]+\t(.*)$/s.exec(rec);
    if (m && (m[1] === '100644' || m[1] === '100755')) files.set(m[2]!, m[1]!);
  }
  return files;
}

/** A file's text at a commit, or null when it does not exist there. */
export async function fileAt(repo: string, commit: string, path: string): Promise<string | null> {
  try {
    return await git(['-C', repo, 'cat-file', 'blob', `${commit}:${path}`]);
  } catch {
    return null;
  }
}

/** The most recent `n` commits reachable from `commit`, newest first. */
export async function recentCommits(repo: string, commit: string, n: number): Promise<string[]> {
  return (await git(['-C', repo, 'log', '--format=%H', '-n', String(n), commit])).split('\n').filter(Boolean);
}

export async function parentsOf(repo: string, commit: string): Promise<string[]> {
  return (await git(['-C', repo, 'rev-list', '--parents', '-n', '1', commit])).trim().split(' ').slice(1);
}

export async function subjectOf(repo: string, commit: string): Promise<string> {
  return (await git(['-C', repo, 'log', '-1', '--format=%s', commit])).trim();
}

/** Per-file added/deleted line counts between two commits (null counts: a binary file). */
export async function numstat(repo: string, from: string, to: string): Promise<{ path: string; added: number | null; deleted: number | null }[]> {
  const out = await git(['-C', repo, 'diff-tree', '-r', '--no-renames', '--numstat', '-z', from, to]);
  const rows: { path: string; added: number | null; deleted: number | null }[] = [];
  for (const rec of out.split('\0')) {
    const m = /^(-|\d+)\t(-|\d+)\t(.+)$/s.exec(rec);
    if (m) rows.push({ path: m[3]!, added: m[1] === '-' ? null : Number(m[1]), deleted: m[2] === '-' ? null : Number(m[2]) });
  }
  return rows;
}

/**
 * A unified diff of one file from `before` to `after` with a/ and b/ prefixes, as `git apply`
 * reads it (made by `git diff --no-index` between two temp files).
 */
export async function unifiedDiff(path: string, before: string, after: string, mode = '100644'): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'pairbench-diff-'));
  try {
    for (const [side, text] of [
      ['a', before],
      ['b', after],
    ] as const) {
      const p = join(dir, side, path);
      mkdirSync(dirname(p), { recursive: true });
      writeFileSync(p, text);
      chmodSync(p, mode === '100755' ? 0o755 : 0o644);
    }
    const r = await (
      await loadExeca()
    )('git', ['diff', '--no-index', '--no-prefix', '--no-color', '--no-ext-diff', '--no-textconv', `a/${path}`, `b/${path}`], {
      cwd: dir,
      env: GIT_ENV,
      extendEnv: false,
      reject: false,
      stripFinalNewline: false,
    });
    if (r.exitCode === 0) throw new Error(`no difference in ${path}`);
    if (r.exitCode !== 1) throw new Error(`git diff --no-index ${path}: ${String(r.stderr).trim()}`);
    return String(r.stdout);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * A binary-safe patch that turns the tree `before` into the tree `after` (paths relative to
 * each; symlinks and deletions included), as `git apply` reads it: both trees are staged into
 * a scratch repository (ignored files too) and compared there.
 */
export async function treeDiff(before: string, after: string): Promise<string> {
  const gitDir = mkdtempSync(join(tmpdir(), 'pairbench-treediff-'));
  try {
    await git(['init', '-q', '--bare', gitDir]);
    let trees = 0;
    const treeOf = async (workTree: string) => {
      const env = { GIT_DIR: gitDir, GIT_WORK_TREE: workTree, GIT_INDEX_FILE: join(gitDir, `index-${trees++}`) };
      await git(['add', '-A', '-f', '.'], { cwd: workTree, env });
      return (await git(['write-tree'], { cwd: workTree, env })).trim();
    };
    mkdirSync(before, { recursive: true });
    mkdirSync(after, { recursive: true });
    const [a, b] = [await treeOf(before), await treeOf(after)];
    return await git(['diff-tree', '-r', '-p', '--binary', '--full-index', '--no-renames', a, b], { env: { GIT_DIR: gitDir } });
  } finally {
    rmSync(gitDir, { recursive: true, force: true });
  }
}

/** Applies a patch to a plain (git-less) tree the way materialize does: `git apply`. */
export async function applyPatch(tree: string, patch: string): Promise<void> {
  const r = await gitApply(tree, patch);
  if (!r.ok) throw new Error(`git apply --whitespace=nowarn -: ${r.stderr || 'failed'}`);
}

/**
 * A copy of a tree at `to` (which must not exist), links kept as links, made by cp(1): a
 * repository with its node_modules (thousands of small files) copies in well under half the
 * time of fs.cpSync, without blocking the event loop, and as a reflink on a copy-on-write
 * filesystem (btrfs, XFS).
 */
export async function copyTree(from: string, to: string): Promise<void> {
  mkdirSync(dirname(to), { recursive: true });
  const r = await (await loadExeca())('cp', ['-a', '--reflink=auto', '-T', '--', from, to], { reject: false });
  if (r.exitCode !== 0) throw new Error(`cp -a ${from} ${to}: ${String(r.stderr).trim() || `exit ${r.exitCode}`}`);
}

/** Removes a tree made by copyTree: rm(1) unlinks thousands of files faster than fs.rmSync, off the event loop. */
export async function removeTree(dir: string): Promise<void> {
  const r = await (await loadExeca())('rm', ['-rf', '--', dir], { reject: false });
  if (r.exitCode !== 0) throw new Error(`rm -rf ${dir}: ${String(r.stderr).trim() || `exit ${r.exitCode}`}`);
}

/** Files under `root` (relative, '/'-separated, sorted), skipping node_modules, .git and other dot directories. */
export function walkFiles(root: string): string[] {
  const out: string[] = [];
  const walk = (rel: string) => {
    for (const e of readdirSync(join(root, rel), { withFileTypes: true })) {
      const p = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) {
        if (e.name === 'node_modules' || e.name.startsWith('.') || e.name === '__pycache__') continue;
        walk(p);
      } else if (e.isFile()) out.push(p);
    }
  };
  walk('');
  return out.sort();
}
