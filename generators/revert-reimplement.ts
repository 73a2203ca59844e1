import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { err, errorMessage, ok, type Result } from '../pipeline/result.js';
import { checkedTask, checkOptions, choosePassToPass, failToPass, firstValid, refusal, type Setup } from './common.js';
import { seededOrder } from './seeded-order.js';
import { prepareTrees } from './stub-function.js';
import { surfaceFromDir } from '../steps/certify/scan.js';
import { CandidateScanner } from './pre-certify.js';
import { scratchDir } from './work-dir.js';
import { writeTaskDir, type TaskFiles } from './task-files.js';
import { exportCommit, fileAt, listCommitFiles, numstat, parentsOf, recentCommits, removeTree, resolveCommit, subjectOf, unifiedDiff } from './tree.js';
import type { GenerateOptions, GenerateReport, RevertTaskReport } from './types.js';

export interface RevertOptions extends GenerateOptions {
  /** How many commits back from `commit` to look; default 50. */
  history?: number;
  /** The most lines (added + deleted) the source file's change may have; default 40. */
  maxChangedLines?: number;
}

const KIND = 'revert_reimplement';

/**
 * Tasks that undo one recent commit's change to a single source file and ask for it back,
 * verified by the tests that the change makes pass. A candidate is a commit C among the last
 * `history` commits that changes exactly one non-test source file by at most `maxChangedLines`
 * lines (test and other files may change too). The task is based on C; setup.patch puts the
 * file back at C's parent; solution.patch is C's change to it. Same determinism and refusal
 * rules as stub_function, with candidates ordered by sha256(`${seed}:${commit}`).
 */
export async function generateRevertTasks(options: RevertOptions): Promise<Result<GenerateReport<RevertTaskReport>, string>> {
  const checked = checkOptions(KIND, options);
  if (!checked.ok) return checked;
  const s = checked.value;
  const scratch = scratchDir('pairbench-gen-revert-');
  const work = scratch.dir;
  try {
    const where = `${s.repo}@${s.commit.slice(0, 12)}`;
    if ((await resolveCommit(s.repo, s.commit)) !== s.commit) return err(`${KIND}: ${s.commit} is not a commit of ${s.repo}`);
    const commits = await recentCommits(s.repo, s.commit, options.history ?? 50);
    const ordered = seededOrder(s.seed, commits, (c) => c);
    const scanner = new CandidateScanner(s.repo, s.log);
    const { accepted, dropped } = await firstValid(
      ordered,
      s.count,
      (c) => c,
      (c, i) => evaluate(s, options, c, scanner, join(work, `c${i}`)),
      s.log,
      s.parallel,
    );
    if (!accepted.length) return err(refusal(KIND, accepted.length, s.count, dropped, where));
    const tasks = accepted.map(({ task, files }) => ({ ...task, dir: writeTaskDir(options.outDir, s.repo, options.taskRepoPath, files) }));
    return ok({ tasks, dropped });
  } catch (e) {
    return err(`${KIND}: ${errorMessage(e)}`);
  } finally {
    scratch.dispose();
  }
}

type Evaluated = { task: Omit<RevertTaskReport, 'dir'>; files: TaskFiles };

async function evaluate(s: Setup, o: RevertOptions, commit: string, scanner: CandidateScanner, dir: string): Promise<Result<Evaluated, string>> {
  const maxLines = o.maxChangedLines ?? 40;
  try {
    const parents = await parentsOf(s.repo, commit);
    if (parents.length !== 1) return err(parents.length ? `a merge commit (${parents.length} parents)` : 'the root commit has no parent');
    const parent = parents[0]!;
    const changed = await numstat(s.repo, parent, commit);
    const sources = changed.filter((f) => s.adapter.isSourceFile(f.path));
    if (sources.length !== 1) return err(`changes ${sources.length} non-test source files (wants exactly 1)`);
    const src = sources[0]!;
    if (src.added === null || src.deleted === null) return err(`${src.path} is binary`);
    const lines = src.added + src.deleted;
    if (lines > maxLines) return err(`changes ${lines} lines of ${src.path} (limit ${maxLines})`);
    const before = await fileAt(s.repo, parent, src.path);
    const after = await fileAt(s.repo, commit, src.path);
    if (before === null) return err(`${src.path} is new in this commit`);
    if (after === null) return err(`${src.path} is deleted in this commit`);
    const mode = (await listCommitFiles(s.repo, commit)).get(src.path) ?? '100644';
    const base = join(dir, 'base');
    await exportCommit(s.repo, commit, base);
    if (readFileSync(join(base, src.path), 'utf8') !== after) return err(`${src.path} differs in git archive (export-subst?)`);
    const solutionPatch = await unifiedDiff(src.path, before, after, mode);
    const id = `revert-${commit.slice(0, 12)}`;
    const subject = await subjectOf(s.repo, commit);
    // The prompt names no test: the tests that decide the task are the verifier's, and
    // naming them would be verifier leakage (certify rejects it).
    const prompt = [
      `\`${src.path}\` is missing a change that the repository's tests expect (the change's commit message: "${subject}").`,
      `Make that change in \`${src.path}\`, without breaking the other tests.`,
    ].join('\n');
    const draft: TaskFiles = {
      id,
      family: src.path,
      category: KIND,
      commit,
      prompt,
      allowedPaths: [src.path],
      failToPass: {},
      passToPass: {},
      timeoutSec: s.timeoutSec,
      setupPatch: await unifiedDiff(src.path, after, before, mode),
      solutionPatch,
    };
    // certify's static scan before any test runs: a vendored copy of the answer is redacted, any other leak drops it.
    const scanned = await scanner.prepare(
      draft,
      { dir: base, surface: surfaceFromDir('tree', 'tree', base, { installed: true }) },
      new Map([[src.path, before]]),
      {
        path: src.path,
        text: after,
      },
    );
    if (!scanned.ok) return scanned;
    const trees = await prepareTrees(base, dir, scanned.value.setupPatch, solutionPatch);
    const atCommit = await s.adapter.runSuite(base);
    if (!atCommit.ok) return err(`the suite does not run at the commit: ${atCommit.error}`);
    const reverted = await s.adapter.runSuite(trees.suite);
    if (!reverted.ok) return err(`the suite does not run with the change reverted: ${reverted.error}`);
    const f2p = failToPass(atCommit.value, reverted.value);
    if (!f2p.length) return err('no test fails without the change');
    const p2p = choosePassToPass(s.seed, atCommit.value, reverted.value, new Set(f2p));
    const files = await checkedTask(s, scanner, draft, scanned.value, trees, atCommit.value, f2p, p2p);
    if (!files.ok) return files;
    return ok({ task: { id, commit, file: src.path, covering: f2p }, files: files.value });
  } catch (e) {
    return err(`cannot be evaluated: ${errorMessage(e).split('\n')[0]}`);
  } finally {
    await removeTree(dir);
  }
}
