import { createHash } from 'node:crypto';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { bySeverity } from '../steps/certify/policy.js';
import { scanSurfaces, type Finding, type Surface } from '../steps/certify/scan.js';
import { vendoredPackageDir } from '../steps/certify/vendored.js';
import { loadTask } from '../steps/task.js';
import { treeDiff } from './tree.js';
import { writeTaskDir, type TaskFiles, type VendoredRedaction } from './task-files.js';

/*
 * certify's static scan, run by a generator on each candidate before its expensive checks
 * and again before it is written: a generator never writes a task certify's scan would
 * reject. Only the findings a candidate causes count here (its solution or its tests seen by
 * the agent); findings about the repository as a whole (benchmark words, instruction files
 * materialize removes) are the same for every candidate and are reported once, not dropped.
 */

/** The classes of finding a candidate's own solution or verifier cause. */
const CANDIDATE_CLASSES: ReadonlySet<Finding['class']> = new Set(['solution-leak', 'verifier-leak']);

/** The tree an attempt would start from: `base` with some files replaced and some directories gone. */
export function startingSurface(base: Surface, changed: ReadonlyMap<string, string>, removedDirs: readonly string[] = []): Surface {
  const gone = (path: string) => removedDirs.some((d) => path.startsWith(d));
  const files = base.files.filter((f) => !changed.has(f.path) && !gone(f.path));
  for (const [path, text] of changed) files.push({ path, text });
  files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  const installed = base.installed?.filter((f) => !changed.has(f.path) && !gone(f.path));
  return { ...base, files, ...(installed ? { installed } : {}) };
}

/** Every finding of certify's scan on the task `files` would be written as, over `tree`. */
export function scanCandidate(files: TaskFiles, repo: string, tree: Surface): Finding[] {
  const dir = mkdtempSync(join(tmpdir(), 'pairbench-gen-scan-'));
  try {
    writeTaskDir(dir, repo, repo, files);
    const task = loadTask(dir, files.id);
    if (!task.ok) throw new Error(`the generated task does not load: ${task.error.map((d) => d.message).join('; ')}`);
    return scanSurfaces({ task: task.value, surfaces: [{ kind: 'prompt', name: 'prompt', files: [{ path: 'prompt', text: files.prompt }] }, tree] });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The findings that would reject this candidate (its own), most severe first. */
export function candidateFindings(findings: readonly Finding[]): Finding[] {
  return bySeverity(findings.filter((f) => CANDIDATE_CLASSES.has(f.class)));
}

/** Why a candidate is dropped: certify's own words for its first findings. */
export function rejection(findings: readonly Finding[]): string {
  const shown = findings.slice(0, 3).map((f) => `${f.class} in ${f.surface} ${f.path}:${f.line}`);
  return `certify would reject it: ${shown.join(', ')}${findings.length > 3 ? ` and ${findings.length - 3} more` : ''}`;
}

/**
 * The scans of one generate run. `prepare` runs before a candidate's test runs (its solution
 * is known, its tests are not yet): a vendored copy of the package under test is redacted by
 * the setup patch, any other leak drops the candidate. `check` runs on the task as it would
 * be written (its tests chosen), before the discrimination check. Findings that every task of
 * the repository shares are logged once, with what to do.
 */
export class CandidateScanner {
  private reportedShared = false;
  constructor(
    private readonly repo: string,
    private readonly log: (line: string) => void,
  ) {}

  async prepare(
    draft: TaskFiles,
    base: { dir: string; surface: Surface },
    changed: ReadonlyMap<string, string>,
    answer: Answer,
  ): Promise<{ ok: true; value: { setupPatch: string; redactions: VendoredRedaction[]; tree: Surface } } | { ok: false; error: string }> {
    const all = scanCandidate(draft, this.repo, startingSurface(base.surface, changed));
    this.reportShared(all);
    const own = candidateFindings(all);
    const { patch, redactions } = await redactVendoredSelf(base.dir, answer, own);
    const tree = startingSurface(
      base.surface,
      changed,
      redactions.map((r) => r.path),
    );
    const setupPatch = draft.setupPatch + patch;
    // With nothing redacted the first scan's findings stand; otherwise the redacted tree is scanned again.
    const left = redactions.length ? this.check({ ...draft, setupPatch, redactions }, tree) : own.length ? rejection(own) : null;
    if (left) return { ok: false, error: left };
    for (const r of redactions) this.log(`${draft.id}: redacting ${r.path} (${r.files.length} files): ${r.reason}`);
    return { ok: true, value: { setupPatch, redactions, tree } };
  }

  /** Why certify's scan would reject the task as it would be written, or null. */
  check(files: TaskFiles, tree: Surface): string | null {
    const found = candidateFindings(scanCandidate(files, this.repo, tree));
    return found.length ? rejection(found) : null;
  }

  private reportShared(findings: readonly Finding[]): void {
    if (this.reportedShared) return;
    this.reportedShared = true;
    const shared = findings.filter((f) => !CANDIDATE_CLASSES.has(f.class) && f.class !== 'instructions-survived');
    if (!shared.length) return;
    const where = [...new Set(shared.map((f) => `${f.class} in ${f.path}`))];
    this.log(
      `note: certify will also report ${shared.length} finding${shared.length === 1 ? '' : 's'} every task of this repository shares (${where.slice(0, 3).join(', ')}${where.length > 3 ? `, and ${where.length - 3} more` : ''}): remove them from the repository, or accept them in the certify step's policy.allow with a reason`,
    );
  }
}

/** The file a task asks for, as the reference solution leaves it. */
export interface Answer {
  path: string;
  text: string;
}

/**
 * The vendored copies of the package under test among `findings` (a `node_modules/<name>/`,
 * or any vendored directory, whose package.json names the repository's own package or that
 * holds the answer verbatim at the same path): each is replaced, by the task's
 * setup patch, with a symlink to the repository root, so that whatever requires the package
 * (the test runner, tape needing minimist) loads the code under test, and the answer is not in
 * the tree. Returns the setup patch's addition and a receipt per copy; copies of anything else
 * are left for the caller to refuse.
 */
export async function redactVendoredSelf(
  base: string,
  answer: Answer,
  findings: readonly Finding[],
): Promise<{ patch: string; redactions: VendoredRedaction[] }> {
  const packageName = packageNameAt(base);
  const isCopy = (d: string) => (packageName !== null && packageNameAt(join(base, d)) === packageName) || textAt(join(base, d, answer.path)) === answer.text;
  const dirs = new Map<string, Finding>();
  for (const f of findings) {
    const d = vendoredPackageDir(f.path);
    if (d && !dirs.has(d) && isCopy(d)) dirs.set(d, f);
  }
  if (!dirs.size) return { patch: '', redactions: [] };
  const scratch = mkdtempSync(join(tmpdir(), 'pairbench-gen-redact-'));
  try {
    const before = join(scratch, 'before');
    const after = join(scratch, 'after');
    const redactions: VendoredRedaction[] = [];
    for (const [d, f] of [...dirs].sort(([a], [b]) => (a < b ? -1 : 1))) {
      const path = d.slice(0, -1);
      cpSync(join(base, path), join(before, path), { recursive: true, verbatimSymlinks: true });
      mkdirSync(dirname(join(after, path)), { recursive: true });
      const target = relative(dirname(path), '.') || '.';
      symlinkSync(target, join(after, path));
      redactions.push({
        path: d,
        replaced_by: `a symlink to the repository root (${target})`,
        reason: `a vendored copy of the package under test${packageName ? ` (${packageName})` : ''}: certify finds its answer there (${f.class} at ${f.path}:${f.line})`,
        files: treeDigests(join(before, path), d),
      });
    }
    return { patch: await treeDiff(before, after), redactions };
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** The package's name in `dir/package.json`, or null. */
export function packageNameAt(dir: string): string | null {
  try {
    const name = (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: unknown }).name;
    return typeof name === 'string' ? name : null;
  } catch {
    return null;
  }
}

function textAt(file: string): string | null {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return null;
  }
}

/** What was removed: each file's path and sha256, so the receipt shows exactly what the task lacks. */
function treeDigests(dir: string, prefix: string): { path: string; sha256: string }[] {
  const out: { path: string; sha256: string }[] = [];
  const walk = (abs: string, rel: string): void => {
    for (const e of readdirSync(abs, { withFileTypes: true }).sort((x, y) => (x.name < y.name ? -1 : x.name > y.name ? 1 : 0))) {
      const a = join(abs, e.name);
      const r = `${rel}${e.name}`;
      if (e.isDirectory()) walk(a, `${r}/`);
      else if (e.isFile()) out.push({ path: r, sha256: createHash('sha256').update(readFileSync(a)).digest('hex') });
    }
  };
  walk(dir, prefix);
  return out;
}
