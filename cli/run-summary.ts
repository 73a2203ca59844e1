/**
 * The end of `pairbench run`: one line per comparison of every cohort analysed --
 * verdict, effect, interval, n -- each headline warning, and where the report is.
 */
import type { EngineContext, NodeState } from '../pipeline/engine.js';
import type { Verdict } from '../stats/types.js';
import { pp, verdictWord } from '../report/report-format.js';
import { readJsonArtifact } from '../pipeline/artifact.js';
import { ANALYSIS, analyzeStep } from '../steps/analyze-step.js';
import { exportStep } from '../steps/export-step.js';

export interface ComparisonLine {
  cohort: string;
  control: string;
  treatment: string;
  verdict: Verdict;
  delta: number | null;
  ci: { low: number; high: number; confidence: number } | null;
  n_tasks: number;
  n_units: number | null;
  p_holm: number | null;
  /** The arms with an attempt that ran without isolation (any verdict). */
  unisolated_arms: string[];
  /** A sequential cohort: where it stopped (instead of the fixed-N p, which is not its test). */
  sequential?: string;
}

export interface RunOutcome {
  comparisons: ComparisonLine[];
  warnings: { cohort: string; message: string }[];
  /** Export nodes this run built or found cached, and the command that writes each report out. */
  reports: { node: string; command: string }[];
}

export function runOutcome(ctx: EngineContext, states: ReadonlyMap<string, NodeState>, configArg: string): RunOutcome {
  const out: RunOutcome = { comparisons: [], warnings: [], reports: [] };
  for (const node of ctx.graph.nodes) {
    const s = states.get(node.id);
    if (!s || (s.status !== 'executed' && s.status !== 'cached')) continue;
    if (node.kind === exportStep) {
      out.reports.push({ node: node.id, command: `pairbench export ${node.id}${configArg} --out DIR` });
      continue;
    }
    if (node.kind !== analyzeStep) continue;
    const read = readJsonArtifact(ANALYSIS, s.record.outputs, (d) => ctx.store.cas.read(d), node.id);
    if (!read) continue;
    if (!read.ok) {
      out.warnings.push({ cohort: node.step.name, message: `no verdicts: ${read.error}; 'pairbench fsck' checks the store` });
      continue;
    }
    const result = read.value;
    const seq = result.sequential;
    const stop = seq
      ? seq.stopped_at !== null
        ? `stopped at look ${seq.stopped_at} of ${seq.looks.length} (${seq.decision})${seq.attempts_not_run ? `, ${seq.attempts_not_run} attempts not run` : ''}`
        : `look ${seq.looks.length} of ${seq.looks.length}: ${seq.decision === 'continue' ? 'continues' : 'no boundary crossed'}`
      : undefined;
    result.comparisons.forEach((c, i) => {
      out.comparisons.push({
        cohort: node.step.name,
        control: c.control,
        treatment: c.treatment,
        verdict: c.verdict,
        delta: c.delta,
        ci: c.ci ? { low: c.ci.low, high: c.ci.high, confidence: c.ci.confidence } : null,
        n_tasks: c.n_tasks,
        n_units: c.test?.n_units ?? null,
        p_holm: c.test?.p_holm ?? null,
        unisolated_arms: c.unisolated_arms ?? [],
        ...(stop && i === 0 ? { sequential: stop } : {}),
      });
    });
    for (const w of result.warnings ?? []) out.warnings.push({ cohort: node.step.name, message: w.message });
  }
  return out;
}

export function formatRunOutcome(o: RunOutcome): string[] {
  const lines = o.comparisons.map(
    (c) =>
      `${c.cohort}: ${c.treatment} vs ${c.control}  ${verdictWord(c.verdict)}  ` +
      (c.delta === null
        ? 'no effect estimated'
        : `${pp(c.delta)}${c.ci ? ` ${Math.round(c.ci.confidence * 100)}% ${c.sequential ? 'repeated ' : ''}CI [${pp(c.ci.low)}, ${pp(c.ci.high)}]` : ''}`) +
      `  n = ${c.n_tasks} task${c.n_tasks === 1 ? '' : 's'}${c.n_units !== null && c.n_units !== c.n_tasks ? ` (${c.n_units} families)` : ''}` +
      (c.sequential ? `, ${c.sequential}` : c.p_holm !== null ? `, p (Holm) ${c.p_holm < 0.001 ? c.p_holm.toExponential(1) : c.p_holm.toFixed(3)}` : ''),
  );
  for (const w of o.warnings) lines.push(`warning: ${w.cohort}: ${w.message}`);
  for (const r of o.reports)
    lines.push(
      `report: ${o.reports.length === 1 ? r.command.replace(` ${r.node} `, ' ') : r.command} (writes report.md, report.html and the verifiable bundle)`,
    );
  return lines;
}
