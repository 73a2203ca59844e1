/**
 * Attempts that were preregistered not to run: a sequential cohort's stopping rule, or a stage
 * gate that closed. A look (analyze-step.ts) or a gate (gate.ts) passes its decision to the run
 * nodes after it; once one says stop they run nothing and output `not-run.json`, which verify
 * and audit pass on, and analyze counts (with why).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { OutputManifest } from '../pipeline/store/action-cache.js';
import type { ExecutionContext } from '../pipeline/step-kind.js';

export const NOT_RUN = 'not-run.json';
/** How the kinds whose nodes a stop skips (run, verify, audit) declare that output. */
export const NOT_RUN_OUTPUT = { [NOT_RUN]: "written instead of the rest when the cohort's stopping rule stopped it before this node" } as const;
export const LOOK_DECISION = 'decision.json';

interface LookDecision {
  cohort: string;
  stop: boolean;
  /** The look that stopped the cohort; null for a gate (its decision says it all). */
  stopped_at: number | null;
  decision: string;
}

/** Why an attempt was not run, from its not-run.json. */
export function notRunReason(text: string): string {
  const v = (JSON.parse(text) as { not_run?: unknown }).not_run;
  return typeof v === 'string' ? v : 'not run';
}

/** Why this attempt must not run (a look upstream stopped the cohort), or null. */
export function stoppedBy(ctx: ExecutionContext): string | null {
  for (const u of ctx.upstream) {
    const entry = u.outputs[LOOK_DECISION];
    if (!entry) continue;
    const d = JSON.parse(ctx.artifacts.read(entry.digest).toString('utf8')) as LookDecision;
    if (d.stop)
      return d.stopped_at === null ? d.decision : `cohort ${d.cohort} stopped at look ${d.stopped_at} (${d.decision}): its preregistered stopping rule`;
  }
  return null;
}

/** The output of an attempt that did not run. */
export function notRunOutputs(ctx: ExecutionContext, because: string): OutputManifest {
  const out = join(ctx.workDir, 'out');
  mkdirSync(out, { recursive: true });
  writeFileSync(join(out, NOT_RUN), JSON.stringify({ schema_version: 1, node: ctx.node.id, not_run: because }, null, 2) + '\n');
  writeFileSync(ctx.logFile, `${ctx.node.id}: not run: ${because}\n`, { flag: 'a' });
  ctx.outcome?.('not run', because);
  return { [NOT_RUN]: ctx.artifacts.putPath(join(out, NOT_RUN)) };
}

/** An upstream attempt that did not run: this node passes that on instead of doing its work. */
export function passedNotRun(ctx: ExecutionContext): OutputManifest | null {
  const u = ctx.upstream.find((x) => x.outputs[NOT_RUN]);
  if (!u) return null;
  ctx.outcome?.('not run', `${u.node} was not run`);
  return { [NOT_RUN]: u.outputs[NOT_RUN]! };
}
