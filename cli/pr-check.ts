/**
 * `pairbench check`: the pull-request check over the head's bundles and the base's. The base
 * decides: its bundle's analysis carries the preregistered gate (or none: the default), and a
 * review (pairbench review) says what the pull request changed besides its treatment. Each
 * cohort is judged (stats/change-gate.ts) and the comment is written (report/pr-comment.ts).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Diagnostic } from '../pipeline/diagnostic.js';
import { err, errorMessage, ok, type Result } from '../pipeline/result.js';
import { judgeChange } from '../stats/change-gate.js';
import { diffRuns, type RunSide } from '../stats/run-diff.js';
import { alphaOf } from '../stats/inference.js';
import { isHeadVsBaseGate, parseFailOn, parseFailOnGates } from '../stats/verdicts.js';
import type { CheckedCohort, PrCheck } from '../report/pr-comment.js';
import { bundlesUnder, sideOf } from './bundle-side.js';

export interface CheckInput {
  head: string;
  base: string | undefined;
  /** Why there is no base bundle: its run did not end, the base branch has no config yet, or this is a push (the head is the base branch). */
  baseMissing: 'not-run' | 'no-config' | 'push';
  /** --fail-on: verdicts and gates the workflow adds to the base's gate. */
  failOn?: string;
  review: string | undefined;
  link: string | undefined;
  labels: { base: string; head: string };
}

type Review = NonNullable<PrCheck['review']>;

/** A review file (pairbench review --out), checked field by field. */
export function readReview(file: string): Result<Review, string> {
  let v: unknown;
  try {
    v = JSON.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    return err(`${file} is not a review (pairbench review --out): ${errorMessage(e)}`);
  }
  const r = v as Partial<{ schema_version: number; treatment: { changes: unknown }; protocol: unknown; refused: unknown }> | null;
  const lists = (x: unknown): x is Record<string, string[]> =>
    typeof x === 'object' && x !== null && !Array.isArray(x) && Object.values(x).every((l) => Array.isArray(l) && l.every((s) => typeof s === 'string'));
  if (
    !r ||
    r.schema_version !== 1 ||
    !lists(r.treatment?.changes) ||
    !lists(r.protocol) ||
    !Array.isArray(r.refused) ||
    !r.refused.every((s) => typeof s === 'string')
  )
    return err(`${file} is not a review written by pairbench review (schema_version 1, treatment.changes, protocol, refused)`);
  return ok({ treatment: r.treatment.changes, protocol: r.protocol, refused: r.refused });
}

/** The cohort's design as the planner sees it: its shared tasks, reps a side, and the base's per-task pass rates of the treatment. */
async function sizingOf(base: RunSide, check: ReturnType<typeof judgeChange>): Promise<CheckedCohort['sizing']> {
  const gates = check.gate.fail_on.filter(isHeadVsBaseGate);
  if (!gates.includes('regression') && !gates.includes('not-noninferior')) return null;
  const c = base.analysis.comparisons[0];
  const tasks = c?.outcomes?.tasks ?? [];
  if (!c || tasks.length < 2) return null;
  const reps = Math.max(1, ...tasks.map((t) => t.n_pairs));
  const { planGates } = await import('../stats/gate-planner.js');
  const plan = planGates({
    tasks: tasks.length,
    reps,
    alpha: alphaOf(base.analysis.spec.confidence),
    power: base.analysis.spec.power,
    baseline: tasks.map((t) => t.treatment_pass_rate),
    detect: check.gate.detect,
    ...(gates.includes('not-noninferior') && check.gate.noninferiority_margin !== null ? { margin: check.gate.noninferiority_margin } : {}),
    sims: 400,
    otherReps: false,
  });
  if (!gates.includes('regression')) plan.shortfalls = plan.shortfalls.filter((s) => !s.startsWith('regression'));
  return plan;
}

export async function prCheck(input: CheckInput): Promise<Result<PrCheck, Diagnostic[]>> {
  const review = input.review ? readReview(input.review) : undefined;
  if (review && !review.ok) return err([{ message: review.error, hint: 'give the file pairbench review --out wrote' }]);
  const nodes = bundlesUnder(input.head);
  if (!nodes.length)
    return err([
      { message: `${input.head} holds no bundle (no manifest.json in it or in its directories)`, hint: 'give the directory pairbench export --out wrote' },
    ]);
  const cohorts: CheckedCohort[] = [];
  const problems: Diagnostic[] = [];
  for (const node of nodes) {
    const h = await sideOf(join(input.head, node), 'head');
    if ('problem' in h) {
      problems.push(h.problem);
      continue;
    }
    const baseDir = input.base ? join(input.base, node) : undefined;
    const b = baseDir && existsSync(join(baseDir, 'manifest.json')) ? await sideOf(baseDir, 'base') : undefined;
    if (b && 'problem' in b) {
      problems.push(b.problem);
      continue;
    }
    const base = b?.side;
    const diff = base ? diffRuns(base, h.side) : null;
    // The base decides the gate; with no base, the head's own (a first run of a new cohort).
    const check = judgeChange({
      cohort: h.side.cohort,
      policy: (base ?? h.side).analysis.spec.gate,
      added: input.failOn ? [...parseFailOn(input.failOn), ...parseFailOnGates(input.failOn)] : [],
      head: h.side.analysis,
      diff,
      ...(base
        ? {}
        : {
            baseMissing:
              input.baseMissing === 'not-run'
                ? { reason: 'not-run' as const, detail: `the base has no bundle of ${node || 'this cohort'} (its run did not end: see the base step's log)` }
                : {
                    reason: 'no-config' as const,
                    detail:
                      input.baseMissing === 'push'
                        ? 'a push: the head is the base branch'
                        : 'the base branch has no config: there is nothing to compare with yet',
                  },
          }),
      protocolChanges: review?.ok ? (review.value.protocol[h.side.cohort] ?? []) : [],
    });
    cohorts.push({ node, check, diff, head: h.side.analysis, sizing: base ? await sizingOf(base, check) : null });
  }
  if (problems.length) return err(problems);
  const r = review?.ok ? review.value : null;
  const passed =
    cohorts.every((c) => c.check.failures.length === 0) &&
    !r?.refused.length &&
    !Object.keys(r?.protocol ?? {}).some((k) => !cohorts.some((c) => c.check.cohort === k));
  return ok({ cohorts, review: r, labels: input.labels, link: input.link ?? null, passed });
}
