/**
 * Attempts that were preregistered not to run: a sequential cohort's stopping rule, or a stage
 * gate that closed. A look (analyze-step.ts) or a gate (gate.ts) passes its decision to the run
 * nodes after it; once one says stop they run nothing and output `not-run.json`, which verify
 * and audit pass on, and analyze counts (with why).
 */
import type { OutputManifest } from '../pipeline/store/action-cache.js';
import type { ExecutionContext } from '../pipeline/step-kind.js';
import { jsonArtifact, parseJsonArtifact, putFileOutput, readJsonArtifact } from '../pipeline/artifact.js';
import type { Result } from '../pipeline/result.js';
import { stepOutputProblems } from './step-output-checks.js';

export const NOT_RUN = jsonArtifact<NotRunRecord, 'not-run.json'>(
  'not-run.json',
  "written instead of the rest when the cohort's stopping rule stopped it before this node",
  stepOutputProblems('NotRunRecord'),
);
/** A look's or a gate's decision (both kinds write it; the run nodes after them read it). */
export const LOOK_DECISION = jsonArtifact<LookDecision, 'decision.json'>('decision.json', 'stop or continue, and why', stepOutputProblems('LookDecision'));

/** A look's or a gate's decision.json: whether the nodes after it run. */
export interface LookDecision {
  schema_version: 1;
  cohort: string;
  stop: boolean;
  /** The look that stopped the cohort; null for a gate (its decision says it all). */
  stopped_at: number | null;
  decision: string;
}

/** An attempt's not-run.json. */
export interface NotRunRecord {
  schema_version: 1;
  node: string;
  not_run: string;
}

/** Why an attempt was not run, from the text of `node`'s not-run.json. */
export function notRunReason(text: string, node: string): Result<string, string> {
  const r = parseJsonArtifact(NOT_RUN, text, node);
  return r.ok ? { ok: true, value: r.value.not_run } : r;
}

/** Why this attempt must not run (a look upstream stopped the cohort), or null. */
export function stoppedBy(ctx: ExecutionContext): string | null {
  for (const u of ctx.upstream) {
    const read = readJsonArtifact(LOOK_DECISION, u.outputs, (digest) => ctx.artifacts.read(digest), u.node);
    if (!read) continue;
    // A decision that cannot be read stops the attempt: running it could break the preregistered rule.
    if (!read.ok) return `the decision before it cannot be read (${read.error})`;
    const d = read.value;
    if (d.stop)
      return d.stopped_at === null ? d.decision : `cohort ${d.cohort} stopped at look ${d.stopped_at} (${d.decision}): its preregistered stopping rule`;
  }
  return null;
}

/** The output of an attempt that did not run. */
export function notRunOutputs(ctx: ExecutionContext, because: string): OutputManifest {
  const record: NotRunRecord = { schema_version: 1, node: ctx.node.id, not_run: because };
  ctx.log(`${ctx.node.id}: not run: ${because}`);
  ctx.outcome?.('not run', because);
  return { [NOT_RUN.name]: putFileOutput(ctx.artifacts, JSON.stringify(record, null, 2) + '\n') };
}

/** An upstream attempt that did not run: this node passes that on instead of doing its work. */
export function passedNotRun(ctx: ExecutionContext): OutputManifest | null {
  const u = ctx.upstream.find((x) => x.outputs[NOT_RUN.name]);
  if (!u) return null;
  ctx.outcome?.('not run', `${u.node} was not run`);
  return { [NOT_RUN.name]: u.outputs[NOT_RUN.name]! };
}
