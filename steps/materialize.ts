import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, readlinkSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { loadExeca } from '../sandboxes/lazy-execa.js';
import picomatch from 'picomatch';
import { canonicalJson, type Json } from '../pipeline/canonical-json.js';
import { sha256 } from '../pipeline/digest.js';
import { err, errorMessage, ok } from '../pipeline/result.js';
import type { ExecutionContext, StepKind } from '../pipeline/step-kind.js';
import { artifact, jsonArtifact } from '../pipeline/artifact.js';
import type { StepConfig } from '../pipeline/config/load.js';
import { buildTree, Cas, type OutputEntry, type TreeItem } from '../pipeline/store/cas.js';
import { checkTasks, taskMatrixSource, taskOf } from './agent-step-config.js';
import { gitApply } from '../sandboxes/git-apply.js';
import { extractTree } from './git-archive.js';
import { listTree, readBlobs, runGit } from './git-objects.js';
import { specOf } from './step-spec.js';
import { stepOutputProblems } from './step-output-checks.js';

/** Auto-loaded agent instructions and bindings, removed identically for every arm. */
export const DEFAULT_REDACTION = [
  '**/CLAUDE.md',
  '**/AGENTS.md',
  '**/GEMINI.md',
  '**/.claude/**',
  '**/.cursor/**',
  '.cursorrules',
  '.windsurfrules',
  '.github/copilot-instructions.md',
  '.mcp.json',
  '.vscode/mcp.json',
];

/** Documentation (`remove_documentation: true`): removed for every arm alike, but never inside the task's allowed paths. */
export const DEFAULT_DOCUMENTATION = ['**/README*', '**/readme*', '**/docs/**', '**/doc/**', '**/*.md', '**/*.rst', '**/*.adoc', '**/*.txt'];

export interface RedactionReceipt {
  schema_version: 1;
  task: string;
  commit: string;
  policy: string[];
  source_tree_digest: string;
  redacted_tree_digest: string;
  /** Documentation globs (remove_documentation), when set; applied outside the task's allowed paths. */
  documentation_policy?: string[];
  /**
   * A removed symlink is recorded with its target (its bytes and digest are the target's text).
   * `class`: instructions (restorable to an arm with `restore: redacted`) or documentation (gone for every arm).
   */
  removed: { path: string; bytes: number; sha256: string; symlink_target?: string; class?: 'instructions' | 'documentation' }[];
  /** SHA-256 of the canonical JSON of every other field: the seal. */
  receipt_digest: string;
}

function policyOf(step: StepConfig): string[] {
  return specOf(step, 'materialize').redact ?? DEFAULT_REDACTION;
}

function documentationOf(step: StepConfig): string[] | null {
  const d = specOf(step, 'materialize').remove_documentation;
  return d === true ? DEFAULT_DOCUMENTATION : Array.isArray(d) && d.length ? d : null;
}

/** Every entry under `root` that is not a directory (symlinks listed, never followed), relative paths with '/', sorted. */
export function* treeEntries(root: string): Generator<string> {
  for (const f of treeFiles(root)) yield f.path;
}

/**
 * The same, with whether each is a symlink: from the directory listing's entry types, not a stat
 * per entry (16,000 stats of an 8,000-file tree were a fifth of materialize's CPU).
 */
function* treeFiles(root: string, rel = ''): Generator<{ path: string; link: boolean }> {
  const entries = readdirSync(join(root, rel), { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const e of entries) {
    const p = rel ? `${rel}/${e.name}` : e.name;
    if (e.isDirectory()) yield* treeFiles(root, p);
    else yield { path: p, link: e.isSymbolicLink() };
  }
}

/** A bare mirror of the task's repository inside the store: materialize never reads a working tree. */
export async function ensureMirror(mirror: string, source: string, commit: string): Promise<string> {
  mkdirSync(dirname(mirror), { recursive: true });
  if (!existsSync(mirror)) {
    // Unique per call: two tasks of one repository may clone it at once in one process.
    const tmp = `${mirror}.tmp-${process.pid}-${randomBytes(6).toString('hex')}`;
    // --no-local: a repository on this machine is copied as a pack, not as its loose objects (hard
    // links to one file per object): reading 8,000 files' blobs from a pack took 0.02 s of git's
    // CPU, from loose objects 0.2 s, at every materialize of every task of the repository.
    await (
      await loadExeca()
    )('git', ['clone', '--quiet', '--mirror', '--no-local', source, tmp]);
    try {
      renameSync(tmp, mirror);
    } catch {
      rmSync(tmp, { recursive: true, force: true }); // another run made it first
    }
  }
  // The tree is the commit's bytes as they are: no export-ignore, no export-subst (which
  // would expand refs the mirror happens to hold, so the same commit could give other bytes).
  writeFileSync(join(mirror, 'info', 'attributes'), '* -export-ignore -export-subst\n');
  const has = async () => (await runGit(mirror, ['cat-file', '-e', `${commit}^{commit}`])).code === 0;
  let fetchError = '';
  // Two tasks of one repository may fetch into the mirror at once: git's ref locks make one fail; try again.
  let present = await has();
  for (let attempt = 0; attempt < 3 && !present; attempt++) {
    const f = await (await loadExeca())('git', ['-C', mirror, 'fetch', '--quiet', '--prune', 'origin', '+refs/*:refs/*'], { reject: false });
    fetchError = f.exitCode === 0 ? '' : String(f.stderr).trim();
    if (f.exitCode !== 0) await new Promise((r) => setTimeout(r, 200 * (attempt + 1)));
    present = await has();
  }
  if (!present) throw new Error(`commit ${commit} is not in ${source}${fetchError ? ` (fetching it failed: ${fetchError.split('\n')[0]})` : ''}`);
  return mirror;
}

/** A task's starting tree (an environment step's tree, its WORKDIR's contents, has the same name and meaning). */
export const TREE = artifact('tree', "the task's starting tree (the commit, its setup patch applied, instruction files redacted as configured)");
export const REDACTION_RECEIPT = jsonArtifact<RedactionReceipt, 'redaction.json'>(
  'redaction.json',
  'what was redacted from the tree, with digests',
  stepOutputProblems('RedactionReceipt'),
);
export const REDACTED = artifact('redacted', 'the redacted instruction files, kept for an arm that restores them');

/**
 * `materialize` (per task): the pinned commit, read from git objects of a mirror in
 * the store, written as a git-less tree; auto-loaded instruction files removed by
 * policy and recorded in a sealed redaction receipt.
 */
export const materializeStep: StepKind = {
  name: 'materialize',
  matrixSource: taskMatrixSource,
  title: { one: 'task tree', many: 'task trees' },
  outputs: () => [TREE, REDACTION_RECEIPT, REDACTED],
  // Loaded by doctor only: a run never pays for it.
  preflight: async (steps, ctx) => (await import('./materialize-preflight.js')).materializePreflight(steps, ctx),
  // 3: the removed instruction files kept as an output (`redacted`, for an arm that restores them); documentation removal.
  // 2: redaction of directories with several files, at any depth, and of symlinked instruction directories.
  version: 3,
  check: (step) => checkTasks(step),
  keyConfig(node): Json {
    const task = taskOf(node);
    const docs = documentationOf(node.step);
    return {
      commit: task.repo.commit,
      subdir: task.repo.subdir ?? null,
      setup_patch: task.repo.setupPatch ?? null,
      redact: policyOf(node.step),
      ...(docs ? { documentation: docs, allowed_paths: task.allowedPaths } : {}),
    };
  },
  fileInputs: () => [],
  describeConfigField: (path) =>
    ({ commit: 'repo commit', subdir: 'repo subdirectory', setup_patch: 'setup patch', redact: 'redaction policy', documentation: 'documentation removal' })[
      path[0] ?? ''
    ],

  async execute(ctx: ExecutionContext) {
    const task = taskOf(ctx.node);
    const policy = policyOf(ctx.node.step);
    const docs = documentationOf(ctx.node.step);
    const redaction = redactionOf(policy, docs, task.allowedPaths);
    let made: Materialized;
    try {
      const mirror = await ensureMirror(ctx.mirrorOf(task.repo.source), task.repo.source, task.repo.commit);
      const treeish = task.repo.subdir ? `${task.repo.commit}:${task.repo.subdir}` : task.repo.commit;
      // From the mirror's objects when they are the bytes an archive would hold; a setup patch needs the files.
      made =
        (!task.repo.setupPatch && (await fromObjects(ctx, mirror, treeish, redaction))) ||
        (await fromArchive(ctx, mirror, treeish, task.repo.setupPatch ?? undefined, redaction));
    } catch (e) {
      ctx.log(errorMessage(e));
      return err({
        reason: 'refused',
        message: `task ${task.id}: cannot materialize ${task.repo.source}@${task.repo.commit.slice(0, 12)}: ${errorMessage(e).split('\n')[0]}`,
      });
    }
    const body = {
      schema_version: 1 as const,
      task: task.id,
      commit: task.repo.commit,
      policy,
      ...(docs ? { documentation_policy: docs } : {}),
      source_tree_digest: made.sourceDigest,
      redacted_tree_digest: made.tree.digest,
      removed: made.removed,
    };
    const receipt: RedactionReceipt = { ...body, receipt_digest: sha256(canonicalJson(body)) };
    const receiptFile = join(ctx.workDir, 'redaction.json');
    writeFileSync(receiptFile, JSON.stringify(receipt, null, 2) + '\n');
    ctx.log(`materialized ${task.id} at ${task.repo.commit}; redacted ${made.removed.length} file(s)`);
    return ok({ [TREE.name]: made.tree, [REDACTION_RECEIPT.name]: ctx.artifacts.putPath(receiptFile), [REDACTED.name]: made.kept });
  },
};

/** What materialize stores: the redacted tree, the removed instruction files, and what the receipt says. */
interface Materialized {
  tree: OutputEntry;
  kept: OutputEntry;
  /** The tree as checked out (the stored tree's digest when nothing was removed). */
  sourceDigest: string;
  removed: RedactionReceipt['removed'];
}

type RemovalClass = 'instructions' | 'documentation';

/** Which class of removal a path falls in (a symlink may stand for a redacted directory), and how a receipt names it. */
interface Redaction {
  classify(path: string, link: boolean): RemovalClass | undefined;
  /** A removed entry's receipt line. */
  line(path: string, bytes: Buffer, cls: RemovalClass, symlinkTarget?: string): RedactionReceipt['removed'][number];
}

function redactionOf(policy: string[], docs: string[] | null, allowedPaths: string[]): Redaction {
  const isRedacted = picomatch(policy, { dot: true });
  const isDoc = docs ? picomatch(docs, { dot: true }) : () => false;
  const isAllowed = picomatch(allowedPaths, { dot: true });
  return {
    classify(p, link) {
      // A symlink may stand for a redacted directory (`.cursor -> config/cursor`): the agent would load through it.
      if (isRedacted(p) || (link && isRedacted(`${p}/x`))) return 'instructions';
      return isDoc(p) && !isAllowed(p) ? 'documentation' : undefined;
    },
    line: (path, bytes, cls, symlinkTarget) => ({
      path,
      bytes: bytes.length,
      sha256: sha256(bytes),
      ...(symlinkTarget !== undefined ? { symlink_target: symlinkTarget } : {}),
      ...(docs ? { class: cls } : {}),
    }),
  };
}

/** Entries whose mode says they are files (their executable bit), symlinks, or gitlinks (empty directories, as an archive writes them). */
const FILE_MODES: Record<string, 'file' | 'executable' | 'symlink' | 'gitlink'> = {
  '100644': 'file',
  '100755': 'executable',
  '120000': 'symlink',
  '160000': 'gitlink',
};
/** A blob larger than this is not held in memory: the tree is extracted instead. */
const LARGEST_BLOB_IN_MEMORY = 64 << 20;

/**
 * The tree from the mirror's objects (git-objects.ts): every blob hashed as git streams it and
 * stored once, nothing written to disk but new blobs. Undefined when those bytes might not be
 * what `git archive | tar -x` writes (the tree it was stored as until now, whose digests every
 * downstream key holds): a .gitattributes (eol, ident, filters), core.autocrlf, a path that is not
 * UTF-8, a mode git archive writes otherwise, a blob too large to hold.
 */
async function fromObjects(ctx: ExecutionContext, mirror: string, treeish: string, redaction: Redaction): Promise<Materialized | undefined> {
  const [entries, autocrlf] = await Promise.all([listTree(mirror, treeish), gitConfig(mirror, 'core.autocrlf')]);
  if (!entries || (autocrlf !== undefined && autocrlf !== 'false')) return undefined;
  if (entries.some((e) => !FILE_MODES[e.mode] || e.size > LARGEST_BLOB_IN_MEMORY || e.path.split('/').pop() === '.gitattributes')) return undefined;
  const blobs = entries.filter((e) => FILE_MODES[e.mode] !== 'gitlink');
  const kept: TreeItem[] = [];
  const tree: TreeItem[] = [];
  const all: TreeItem[] = [];
  const removed: RedactionReceipt['removed'] = [];
  // Gitlinks: empty directories, never removed (an archive's directory is not a file the policy names).
  for (const e of entries.filter((x) => FILE_MODES[x.mode] === 'gitlink')) {
    tree.push({ path: e.path, entry: 'empty-dir' });
    all.push({ path: e.path, entry: 'empty-dir' });
  }
  await readBlobs(
    mirror,
    blobs.map((b) => b.oid),
    (i, bytes) => {
      const { path, mode } = blobs[i]!;
      const link = FILE_MODES[mode] === 'symlink';
      const entry: TreeItem['entry'] = link
        ? // As readlink reads it from an extracted tree: UTF-8, what cannot be decoded as U+FFFD.
          { type: 'symlink', target: bytes.toString('utf8') }
        : { type: 'file', digest: ctx.artifacts.putBytes(bytes), size: bytes.length, executable: FILE_MODES[mode] === 'executable' };
      all.push({ path, entry });
      const cls = redaction.classify(path, link);
      if (!cls) return tree.push({ path, entry });
      removed.push(redaction.line(path, bytes, cls, link ? bytes.toString('utf8') : undefined));
      if (cls === 'instructions') kept.push({ path, entry });
    },
  );
  // In the order a walk of the extracted tree finds them (names sorted in each directory).
  removed.sort((a, b) => walkOrder(a.path, b.path));
  const stored = buildTree(tree, (items) => ctx.artifacts.putTree(items));
  return {
    tree: stored,
    kept: buildTree(kept, (items) => ctx.artifacts.putTree(items)),
    sourceDigest: removed.length ? buildTree(all, (items) => Cas.hashTree(items)).digest : stored.digest,
    removed,
  };
}

/** Compares two paths as a depth-first walk with each directory's names sorted meets them ("a/b" before "a.txt"). */
function walkOrder(a: string, b: string): number {
  const x = a.split('/');
  const y = b.split('/');
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i]! < y[i]! ? -1 : 1;
  return x.length - y.length;
}

/** A git config value as the mirror sees it (its own, the user's, the system's); undefined when unset. */
async function gitConfig(repo: string, key: string): Promise<string | undefined> {
  const r = await runGit(repo, ['config', '--get', key]);
  return r.code === 0 ? r.stdout.toString('utf8').trim().toLowerCase() : undefined;
}

/** The tree extracted with `git archive | tar -x` (and its setup patch applied), redacted on disk, then stored. */
async function fromArchive(
  ctx: ExecutionContext,
  mirror: string,
  treeish: string,
  setupPatch: string | undefined,
  redaction: Redaction,
): Promise<Materialized> {
  const tree = join(ctx.workDir, 'tree');
  mkdirSync(tree, { recursive: true });
  await extractTree(mirror, treeish, tree);
  // The starting state of a generated task (e.g. a stubbed function) is a patch on the pinned commit.
  if (setupPatch) {
    const applied = await gitApply(tree, setupPatch);
    if (!applied.ok) throw new Error(`the setup patch does not apply: ${applied.stderr}`);
  }
  const removed: RedactionReceipt['removed'] = [];
  // The instruction files removed, kept at their paths: an arm with `restore: redacted` gets exactly these bytes back.
  const kept = join(ctx.workDir, 'redacted');
  mkdirSync(kept, { recursive: true });
  const toRemove: { p: string; link: boolean; cls: RemovalClass }[] = [];
  for (const { path: p, link } of treeFiles(tree)) {
    const cls = redaction.classify(p, link);
    if (cls) toRemove.push({ p, link, cls });
  }
  // The tree as checked out is hashed apart only when redaction changes it (otherwise it is the stored tree's digest).
  const sourceDigest = toRemove.length ? Cas.hashPath(tree).digest : undefined;
  for (const { p, link, cls } of toRemove) {
    if (link) {
      const target = readlinkSync(join(tree, p));
      removed.push(redaction.line(p, Buffer.from(target), cls, target));
    } else removed.push(redaction.line(p, readFileSync(join(tree, p)), cls));
    if (cls === 'instructions') {
      mkdirSync(dirname(join(kept, p)), { recursive: true });
      renameSync(join(tree, p), join(kept, p));
    } else rmSync(join(tree, p), { force: true });
  }
  // Directories the removal left empty (e.g. .claude/) go too, deepest first.
  const parents = new Set<string>();
  for (const r of removed) {
    const parts = r.path.split('/');
    for (let i = parts.length - 1; i > 0; i--) parents.add(parts.slice(0, i).join('/'));
  }
  for (const dir of [...parents].sort((a, b) => b.split('/').length - a.split('/').length || (a < b ? 1 : -1))) {
    const abs = join(tree, dir);
    if (existsSync(abs) && readdirSync(abs).length === 0) rmSync(abs, { recursive: true });
  }
  // Stored once, hashed as it is copied in: its digest is the redacted tree's.
  const stored = ctx.artifacts.putPath(tree);
  return { tree: stored, kept: ctx.artifacts.putPath(kept), sourceDigest: sourceDigest ?? stored.digest, removed };
}
