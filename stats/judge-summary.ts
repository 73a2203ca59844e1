/** A judge's (a)/(b)/(c) beside the verifier's, per task, with their agreement and the seeds' red flags. */
import type { Comparison, HeadlineWarning, JudgeSummary, JudgementRecord } from './types.js';

export function judgeSummary(
  step: string,
  judgements: readonly JudgementRecord[],
  comparisons: readonly Comparison[],
): { summary: JudgeSummary; warnings: HeadlineWarning[] } {
  const first = judgements[0];
  const control = first?.control ?? '';
  const treatment = first?.treatment ?? '';
  const comparison = comparisons.find((c) => c.control === control && c.treatment === treatment);
  const verifierOf = new Map((comparison?.outcomes?.tasks ?? []).map((t) => [t.task, t.class]));
  const rows = [...judgements]
    .sort((a, b) => (a.task < b.task ? -1 : a.task > b.task ? 1 : 0))
    .map((j) => ({ task: j.task, category: j.category, judge: j.classification, reason: j.reason, verifier: verifierOf.get(j.task) ?? null }));
  const judgeCounts = { a: 0, b: 0, c: 0, unclassified: 0 };
  for (const r of rows) judgeCounts[r.judge ?? 'unclassified']++;
  const both = rows.filter((r) => r.judge !== null && r.verifier !== null && r.verifier !== 'no-answer');
  const agree = both.filter((r) => r.judge === r.verifier).length;
  const summary: JudgeSummary = {
    step,
    control,
    treatment,
    model: first?.model ?? null,
    model_source: first?.model_source ?? null,
    rubric_digest: first?.rubric_digest ?? null,
    rows,
    counts: { judge: judgeCounts, verifier: comparison?.outcomes?.counts ?? null },
    agreement: { compared: both.length, agree, rate: both.length ? agree / both.length : null },
  };
  const warnings: HeadlineWarning[] = [];
  if (rows.length && judgeCounts.c === 0) {
    warnings.push({
      kind: 'zero-hurt',
      arm: treatment,
      message: `the judge classified no task (c) hurt (${treatment} vs ${control}, ${rows.length} tasks): a treatment that never hurts is a red flag; read the (b) rows and the rubric before the headline.`,
    });
  }
  // The verifier's own zero-(c) flag is raised by the analysis, judge or not.
  if (first?.model_source === 'scripted') {
    warnings.push({
      kind: 'scripted',
      arm: null,
      message: `the judge's classifications were scripted (pairbench's fake model answered ${judgements.length} judge call(s)): the agreement figure proves the machinery, not any judge.`,
    });
  }
  return { summary, warnings };
}
