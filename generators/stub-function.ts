import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { err, errorMessage, ok, type Result } from '../pipeline/result.js';
import { checkedTask, checkOptions, choosePassToPass, failToPass, firstValid, refusal, type Setup } from './common.js';
import { surfaceFromDir, type Surface } from '../steps/certify/scan.js';
import { CandidateScanner } from './pre-certify.js';
import { applyStub, type FunctionSpan } from './js-functions.js';
import { seededOrder, shortHash } from './seeded-order.js';
import { scratchDir } from './work-dir.js';
import { writeTaskDir, type TaskFiles } from './task-files.js';
import { applyPatch, copyTree, exportCommit, listCommitFiles, removeTree, resolveCommit, unifiedDiff } from './tree.js';
import type { GenerateOptions, GenerateReport, StubTaskReport, SuiteResult } from './types.js';

export type StubFunctionOptions = GenerateOptions;

interface Candidate {
  /** `file#name`: what the seed orders by and what a dropped entry names. */
  id: string;
  file: string;
  mode: string;
  span: FunctionSpan;
}

const KIND = 'stub_function';

/**
 * Tasks that stub one exported function of the repo (its body throws / raises) and ask for it
 * back, verified by the repo's own tests that the stub breaks. Deterministic for (commit, seed):
 * candidates are tried in sha256(`${seed}:${file}#${name}`) order and every file written depends
 * only on the repo's content and the options. `count` is an upper bound: what was found is
 * written, with why each other candidate was dropped; none found is an error.
 */
export async function generateStubFunctionTasks(options: StubFunctionOptions): Promise<Result<GenerateReport<StubTaskReport>, string>> {
  const checked = checkOptions(KIND, options);
  if (!checked.ok) return checked;
  const s = checked.value;
  const scratch = scratchDir('pairbench-gen-stub-');
  const work = scratch.dir;
  try {
    return await generate(s, options, work);
  } catch (e) {
    return err(`${KIND}: ${errorMessage(e)}`);
  } finally {
    scratch.dispose();
  }
}

async function generate(s: Setup, options: StubFunctionOptions, work: string): Promise<Result<GenerateReport<StubTaskReport>, string>> {
  const where = `${s.repo}@${s.commit.slice(0, 12)}`;
  if ((await resolveCommit(s.repo, s.commit)) !== s.commit) return err(`${KIND}: ${s.commit} is not a commit of ${s.repo}`);
  const base = join(work, 'base');
  await exportCommit(s.repo, s.commit, base);
  // The tree every candidate starts from, as certify's scan reads it (before a test run writes into it): walked once.
  const tree = { dir: base, surface: surfaceFromDir('tree', 'tree', base, { installed: true }) };
  s.log(`running the suite at ${where}`);
  const baseline = await s.adapter.runSuite(base);
  if (!baseline.ok) return err(`${KIND}: ${where}: ${baseline.error}`);
  if (![...baseline.value.values()].some((t) => t.status === 'pass')) {
    return err(`${KIND}: ${where}: no test passes on the untouched commit (${baseline.value.size} reported); check testCommand`);
  }
  const files = await listCommitFiles(s.repo, s.commit);
  // The files the runner itself ran as tests (its own discovery: vitest's or jest's config) are no source to stub.
  const testFiles = new Set([...baseline.value.values()].map((t) => t.file));
  const candidates: Candidate[] = [];
  for (const [file, mode] of files) {
    if (!s.adapter.isSourceFile(file) || testFiles.has(file)) continue;
    let text: string;
    try {
      text = readFileSync(join(base, file), 'utf8');
    } catch {
      continue; // export-ignore'd
    }
    for (const span of s.adapter.findFunctions(text, file)) candidates.push({ id: `${file}#${span.name}`, file, mode, span });
  }
  if (!candidates.length) return err(`${KIND}: ${where}: no exported functions in its source files`);
  const ordered = seededOrder(s.seed, candidates, (c) => c.id);
  const scanner = new CandidateScanner(s.repo, s.log);
  const { accepted, dropped } = await firstValid(
    ordered,
    s.count,
    (c) => c.id,
    (c, i) => evaluate(s, c, tree, scanner, baseline.value, join(work, `c${i}`)),
    s.log,
    s.parallel,
  );
  if (!accepted.length) return err(refusal(KIND, accepted.length, s.count, dropped, where));
  const tasks = accepted.map(({ task, files: f }) => ({ ...task, dir: writeTaskDir(options.outDir, s.repo, options.taskRepoPath, f) }));
  return ok({ tasks, dropped });
}

type Evaluated = { task: Omit<StubTaskReport, 'dir'>; files: TaskFiles };

async function evaluate(
  s: Setup,
  c: Candidate,
  base: { dir: string; surface: Surface },
  scanner: CandidateScanner,
  baseline: SuiteResult,
  dir: string,
): Promise<Result<Evaluated, string>> {
  try {
    const original = readFileSync(join(base.dir, c.file), 'utf8');
    const stubbed = applyStub(original, c.span);
    if (stubbed === original) return err('it is already a stub');
    const solutionPatch = await unifiedDiff(c.file, stubbed, original, c.mode);
    const id = `stub-${c.span.name.replace(/[^A-Za-z0-9_.-]/g, '_')}-${shortHash(`${s.commit}:${c.file}:${c.span.name}`)}`;
    const draft: TaskFiles = {
      id,
      family: c.file,
      category: KIND,
      commit: s.commit,
      prompt: `Implement \`${c.span.name}\` in ${c.file}: ${s.adapter.stubBehaviour}. Keep its signature.`,
      allowedPaths: [c.file],
      failToPass: {},
      passToPass: {},
      timeoutSec: s.timeoutSec,
      setupPatch: await unifiedDiff(c.file, original, stubbed, c.mode),
      solutionPatch,
    };
    // certify's static scan before any test runs: a vendored copy of the answer is redacted, any other leak drops it.
    const scanned = await scanner.prepare(draft, base, new Map([[c.file, stubbed]]), { path: c.file, text: original });
    if (!scanned.ok) return scanned;
    const trees = await prepareTrees(base.dir, dir, scanned.value.setupPatch, solutionPatch);
    if (readFileSync(join(trees.solved, c.file), 'utf8') !== original) return err('solution.patch does not restore the file');
    const syntax = await s.adapter.syntaxError(trees.suite, c.file);
    if (syntax) return err(`the stubbed file does not parse: ${syntax}`);
    const after = await s.adapter.runSuite(trees.suite);
    if (!after.ok) return err(`the suite does not run with the stub: ${after.error}`);
    const covering = failToPass(baseline, after.value);
    if (!covering.length) return err('no test covers it');
    const p2p = choosePassToPass(s.seed, baseline, after.value, new Set(covering));
    const files = await checkedTask(s, scanner, draft, scanned.value, trees, baseline, covering, p2p);
    if (!files.ok) return files;
    return ok({ task: { id, function: c.span.name, file: c.file, covering }, files: files.value });
  } catch (e) {
    return err(`cannot be evaluated: ${errorMessage(e).split('\n')[0]}`);
  } finally {
    await removeTree(dir);
  }
}

/**
 * Three copies of the commit's tree: one to run the suite on with setup.patch applied, and fresh
 * ones for the discrimination check (setup.patch; setup.patch then solution.patch), each made
 * with `git apply` as materialize makes a task's tree.
 */
export async function prepareTrees(
  base: string,
  dir: string,
  setupPatch: string,
  solutionPatch: string,
): Promise<{ suite: string; starting: string; solved: string }> {
  const trees = { suite: join(dir, 'suite'), starting: join(dir, 'starting'), solved: join(dir, 'solved') };
  // Settled, all three: a failed copy is reported only once no other is still writing (the caller then removes them).
  const made = await Promise.allSettled(
    Object.values(trees).map(async (t) => {
      await copyTree(base, t);
      await applyPatch(t, setupPatch);
    }),
  );
  for (const m of made) if (m.status === 'rejected') throw m.reason;
  await applyPatch(trees.solved, solutionPatch);
  return trees;
}
