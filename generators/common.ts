import { execFileSync } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import pLimit from 'p-limit';
import { etaMs, shortDuration } from '../pipeline/progress.js';
import { err, ok, type Result } from '../pipeline/result.js';
import type { Surface } from '../steps/certify/scan.js';
import { compare, seededOrder } from './seeded-order.js';
import type { LanguageAdapter, ReportRunner, RunnerContext } from './language-adapter.js';
import { adapterFor, defaultTestCommand, jsRunnerOf, type JsRunner } from './test-suite.js';
import { discriminationFailure } from './discrimination.js';
import type { CandidateScanner } from './pre-certify.js';
import type { TaskFiles, VendoredRedaction } from './task-files.js';
import type { DroppedCandidate, GenerateOptions, SuiteResult } from './types.js';
import { interruptSignal } from './work-dir.js';

export const DEFAULT_REPEATS = 2;
export const DEFAULT_TIMEOUT_SEC = 600;
export const PASS_TO_PASS_MAX = 5;

export interface Setup {
  repo: string;
  commit: string;
  seed: number;
  count: number;
  repeats: number;
  timeoutSec: number;
  ctx: RunnerContext;
  adapter: LanguageAdapter;
  log: (line: string) => void;
  /** How many candidates are evaluated at once (their test processes share ctx.limit). */
  parallel: number;
}

/** The environment of test runs: enough to find the tools, nothing from the caller's session. */
export function defaultTestEnv(): Record<string, string> {
  const env: Record<string, string> = {
    PATH: process.env['PATH'] ?? '/usr/local/bin:/usr/bin:/bin',
    LANG: 'C.UTF-8',
    TZ: 'UTC',
    NO_COLOR: '1',
    PYTHONDONTWRITEBYTECODE: '1',
    PYTHONHASHSEED: '0',
  };
  for (const k of ['HOME', 'PYENV_ROOT', 'PYENV_VERSION', 'VIRTUAL_ENV']) {
    const v = process.env[k];
    if (v) env[k] = v;
  }
  return env;
}

export function checkOptions(kind: string, o: GenerateOptions): Result<Setup, string> {
  if (!/^[0-9a-f]{40}$/.test(o.commit)) return err(`${kind}: commit "${o.commit}" is not a full 40-hex commit id (git rev-parse <ref>)`);
  if (!Number.isSafeInteger(o.seed)) return err(`${kind}: seed must be an integer, got ${o.seed}`);
  if (!Number.isInteger(o.count) || o.count < 1) return err(`${kind}: count must be a positive integer, got ${o.count}`);
  const repeats = o.repeats ?? DEFAULT_REPEATS;
  if (!Number.isInteger(repeats) || repeats < 1) return err(`${kind}: repeats must be a positive integer, got ${repeats}`);
  const timeoutSec = o.timeoutSec ?? DEFAULT_TIMEOUT_SEC;
  if (!(timeoutSec > 0)) return err(`${kind}: timeoutSec must be positive, got ${timeoutSec}`);
  if (o.language !== 'js' && o.language !== 'python') return err(`${kind}: language must be 'js' or 'python', got "${String(o.language)}"`);
  if (o.testCommand !== undefined && !o.testCommand.trim()) return err(`${kind}: testCommand is empty`);
  // Without a test command: the repository's own (package.json scripts.test, or pytest).
  let runner: JsRunner = 'node-test';
  let testCommand = o.testCommand?.trim();
  if (testCommand === undefined) {
    const found = defaultTestCommand(o.language, packageJsonAt(o.repo, o.commit));
    if (!found.ok) return err(`${kind}: ${found.error}`);
    testCommand = found.value.command;
    if (found.value.runner !== 'pytest') runner = found.value.runner;
  } else if (o.language === 'js') runner = jsRunnerOf(testCommand) ?? 'node-test';
  const concurrency = o.concurrency ?? Math.max(1, Math.min(4, availableParallelism()));
  if (!Number.isInteger(concurrency) || concurrency < 1) return err(`${kind}: concurrency must be a positive integer, got ${concurrency}`);
  const ctx: RunnerContext = {
    testCommand,
    env: o.env ?? defaultTestEnv(),
    timeoutMs: timeoutSec * 1000,
    limit: pLimit(concurrency),
    signal: interruptSignal(),
  };
  return ok({
    repo: resolve(o.repo),
    commit: o.commit,
    seed: o.seed,
    count: o.count,
    repeats,
    timeoutSec,
    ctx,
    adapter: adapterFor(o.language, ctx, runner),
    log: o.log ?? (() => {}),
    parallel: concurrency,
  });
}

/** Up to PASS_TO_PASS_MAX tests that pass in both runs, chosen in seeded order, listed by id. */
export function choosePassToPass(seed: number, before: SuiteResult, after: SuiteResult, exclude: ReadonlySet<string>): string[] {
  const pool = [...before].filter(([id, t]) => t.status === 'pass' && after.get(id)?.status === 'pass' && !exclude.has(id)).map(([id]) => id);
  return seededOrder(seed, pool, (id) => id)
    .slice(0, PASS_TO_PASS_MAX)
    .sort(compare);
}

/**
 * Tests that pass in `good` and fail in `bad`, by id. A test `bad` does not report at all (its
 * file crashed before it ran) did not pass there: it fails, as SWE-bench grades a missing test.
 */
export function failToPass(good: SuiteResult, bad: SuiteResult): string[] {
  return [...good]
    .filter(([id, t]) => t.status === 'pass' && (bad.get(id)?.status ?? 'fail') === 'fail')
    .map(([id]) => id)
    .sort(compare);
}

/** The refusal when no valid task was found. */
export function refusal(kind: string, found: number, asked: number, dropped: DroppedCandidate[], where: string): string {
  const lines = [`${kind}: found ${found} valid task${found === 1 ? '' : 's'} (of up to ${asked} asked for) at ${where}`];
  // When every candidate fell for one reason, that is the cause: say it first.
  const reasons = new Set(dropped.map((d) => d.reason));
  if (dropped.length && reasons.size === 1) {
    const only = [...reasons][0]!;
    const cause =
      only === 'no test covers it'
        ? 'no function is covered by a failing test'
        : only === 'no test fails without the change'
          ? 'no change is covered by a failing test'
          : null;
    if (cause) lines.push(`cause: ${cause} (the suite ran; stubbing or reverting broke none of its tests)`);
  }
  if (dropped.length) {
    lines.push(`dropped ${dropped.length} candidate${dropped.length === 1 ? '' : 's'}:`);
    for (const d of dropped) lines.push(`  ${d.candidate}: ${d.reason}`);
  }
  return lines.join('\n');
}

/**
 * Evaluates candidates, up to `parallel` at once, in the given (seeded) order, until `count` are
 * valid: the result is the first `count` valid candidates in that order and the candidates before
 * the last of them that were dropped, exactly as one at a time would give (a candidate evaluated
 * past that point is discarded, never reported). Each start is logged with its place; each end
 * with how long it took, the time elapsed and the most the rest can take at the mean so far
 * (evaluation stops early once `count` are valid).
 */
export async function firstValid<C, T>(
  candidates: readonly C[],
  count: number,
  idOf: (c: C) => string,
  evaluate: (c: C, index: number) => Promise<{ ok: true; value: T } | { ok: false; error: string }>,
  log: (line: string) => void,
  parallel = 1,
): Promise<{ accepted: T[]; dropped: DroppedCandidate[] }> {
  const t0 = Date.now();
  const results: ({ ok: true; value: T } | { ok: false; error: string } | undefined)[] = [];
  const startedAt = new Map<number, number>();
  const tookMs: number[] = [];
  let launched = 0;
  /** The index of the count-th valid candidate once every one before it has ended, else null. */
  const decided = (): number | null => {
    let valid = 0;
    for (let i = 0; i < candidates.length; i++) {
      const r = results[i];
      if (!r) return null;
      if (r.ok && ++valid === count) return i;
    }
    return candidates.length - 1;
  };
  const accepted = () => results.filter((r) => r?.ok).length;
  await new Promise<void>((resolve, reject) => {
    const launch = (): void => {
      if (decided() !== null) {
        if (!startedAt.size) resolve();
        return;
      }
      // Once `count` have ended valid, no later candidate can be needed: only those running finish.
      while (startedAt.size < Math.max(1, parallel) && launched < candidates.length && accepted() < count) {
        const i = launched++;
        const c = candidates[i]!;
        startedAt.set(i, Date.now());
        log(`candidate ${i + 1} of ${candidates.length}: ${idOf(c)}`);
        evaluate(c, i).then((r) => ended(i, r), reject);
      }
      if (!startedAt.size) resolve();
    };
    const ended = (i: number, r: { ok: true; value: T } | { ok: false; error: string }): void => {
      const took = Date.now() - startedAt.get(i)!;
      startedAt.delete(i);
      tookMs.push(took);
      results[i] = r;
      const done = accepted() >= count;
      const eta = done
        ? null
        : etaMs({ finishedMs: tookMs, runningMs: [...startedAt.values()].map((s) => Date.now() - s), queued: candidates.length - launched });
      const timing = `${shortDuration(took)}; ${shortDuration(Date.now() - t0)} in all${eta === null ? '' : `; at most ${shortDuration(eta)} for the ${candidates.length - launched + startedAt.size} left`}`;
      const c = candidates[i]!;
      const validBefore = results.slice(0, i).filter((x) => x?.ok).length;
      if (r.ok && validBefore >= count) log(`not needed: ${idOf(c)} (${count} valid candidates come before it; ${timing})`);
      else if (r.ok) log(`accepted ${idOf(c)} (${accepted()} of up to ${count}; ${timing})`);
      else log(`dropped ${idOf(c)}: ${r.error} (${timing})`);
      launch();
    };
    launch();
  });
  const last = decided() ?? candidates.length - 1;
  const kept = results.slice(0, last + 1);
  return {
    accepted: kept.flatMap((r) => (r?.ok ? [r.value] : [])),
    dropped: kept.flatMap((r, i) => (r && !r.ok ? [{ candidate: idOf(candidates[i]!), reason: r.error }] : [])),
  };
}

/** package.json at the commit's root, or null when it has none. */
function packageJsonAt(repo: string, commit: string): string | null {
  try {
    return execFileSync('git', ['-C', resolve(repo), 'show', `${commit}:package.json`], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  } catch {
    return null;
  }
}

/** A task's verifier.runner: the runner's command for its tests' files. */
function runnerFor(runner: ReportRunner, files: readonly string[]): NonNullable<TaskFiles['runner']> {
  return { command: runner.command([...new Set(files)].sort(compare)), report: runner.report };
}

/**
 * The last checks of a candidate, the same for every generator: the task as it would be written
 * (its tests chosen, each with its command) is scanned again (a test's name in the prompt is a
 * verifier leak), then discrimination-checked on its trees.
 */
export async function checkedTask(
  s: Setup,
  scanner: CandidateScanner,
  draft: TaskFiles,
  scanned: { setupPatch: string; redactions: VendoredRedaction[]; tree: Surface },
  trees: { starting: string; solved: string },
  suite: SuiteResult,
  f2p: string[],
  p2p: string[],
): Promise<Result<TaskFiles, string>> {
  const command = (id: string) => s.adapter.commandFor(id, suite.get(id)!);
  const files: TaskFiles = {
    ...draft,
    failToPass: Object.fromEntries(f2p.map((t) => [t, command(t)])),
    passToPass: Object.fromEntries(p2p.map((t) => [t, command(t)])),
    setupPatch: scanned.setupPatch,
    ...(scanned.redactions.length ? { redactions: scanned.redactions } : {}),
    // One invocation of a report runner for every test, as the discrimination check below runs it.
    ...(s.adapter.reportRunner
      ? {
          runner: runnerFor(
            s.adapter.reportRunner,
            [...f2p, ...p2p].map((id) => suite.get(id)!.file),
          ),
        }
      : {}),
  };
  const rejected = scanner.check(files, scanned.tree);
  if (rejected) return err(rejected);
  const plan = {
    failToPass: new Map(f2p.map((id) => [id, suite.get(id)!])),
    passToPass: new Map(p2p.map((id) => [id, suite.get(id)!])),
  };
  const failure = await discriminationFailure(s.adapter, s.ctx, plan, trees, s.repeats);
  return failure ? err(failure) : ok(files);
}
