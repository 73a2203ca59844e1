/**
 * `pairbench compare`'s report: two runs side by side, as Markdown (the pull-request comment)
 * and as a self-contained HTML page. Both render the same rows (diffRows), so the comment and
 * the page never disagree. Every string from a bundle passes through the escapers.
 */
import type { ComparisonDiff, FlippedTask, RunDiff } from '../stats/run-diff.js';
import { escapeHtml, escapeMarkdown, NONE, pct, pp, ratio, verdictWord } from './report-format.js';

function side(f: ComparisonDiff['base']): string {
  return f ? `${verdictWord(f.verdict)} ${pp(f.delta)}` : 'not run';
}

function change(d: ComparisonDiff): string {
  if (!d.effect_change) return NONE;
  const e = d.effect_change;
  return `${pp(e.estimate)} (${e.ci ? `${Math.round(e.ci.confidence * 100)}% CI ${pp(e.ci.low)} to ${pp(e.ci.high)}` : 'no interval'}; ${e.n_tasks} tasks)`;
}

function costChange(d: ComparisonDiff): string {
  const parts = d.cost.filter((c) => c.ratio !== null).map((c) => `${c.arm} ${ratio(c.ratio)}`);
  return parts.length ? parts.join(', ') : NONE;
}

const HEADERS = ['comparison', 'base', 'head', 'effect change (head - base)', 'flipped beyond noise', 'cost per attempt (head / base)'];

/** One row per comparison, its cells in words in the order of HEADERS: what both renderers show. */
function diffRows(diff: RunDiff): string[][] {
  return diff.comparisons.map((d) => [
    `${d.treatment} vs ${d.control}`,
    side(d.base),
    side(d.head),
    change(d),
    d.flipped.length ? d.flipped.map((f) => f.task).join(', ') : 'none',
    costChange(d),
  ]);
}

/** A task's change in words (plain text: each renderer escapes it). */
const taskLine = (d: ComparisonDiff, f: FlippedTask) =>
  `${f.task}: ${d.control} ${pct(f.control.base)} → ${pct(f.control.head)}, ${d.treatment} ${pct(f.treatment.base)} → ${pct(f.treatment.head)} ` +
  `(pass rates; outcome ${f.base_class} → ${f.head_class}; p ${f.p.toPrecision(2)})`;

/**
 * The tasks of a comparison in words: those beyond noise on their own, headed by how many a change
 * that does nothing would list at this size, and those that moved within it.
 */
function tasksText(d: ComparisonDiff): { head: string; flipped: string[]; moved: string[] } | null {
  if (d.flips_expected_no_change === null) return null;
  const noise = `a change that does nothing would list about ${d.flips_expected_no_change.toFixed(1)} at this size`;
  const head = d.flipped.length
    ? `Flipped beyond noise in ${d.treatment} vs ${d.control} (${noise}):`
    : `No task of ${d.treatment} vs ${d.control} changed beyond noise on its own (${noise}; a task needs ${d.reps_for_one_task_flip} reps a side to show a flip alone)${d.moved.length ? '. Moved within noise:' : '.'}`;
  return { head, flipped: d.flipped.map((f) => taskLine(d, f)), moved: d.moved.map((f) => taskLine(d, f)) };
}

function title(diff: RunDiff): string {
  const v = (s: RunDiff['base']) => `${s.cohort}${s.version === null ? '' : ` v${s.version}`}`;
  return `${v(diff.base)} (base) vs ${v(diff.head)} (head)`;
}

export function runDiffMarkdown(diff: RunDiff): string {
  const out = [`## pairbench compare: ${escapeMarkdown(title(diff))}`, ''];
  if (diff.mismatches.length) {
    out.push(`⚠ **The runs differ** (named, not averaged over):`, ...diff.mismatches.map((m) => `- ${escapeMarkdown(m)}`), '');
  }
  out.push(`| ${HEADERS.join(' | ')} |`, `|${HEADERS.map(() => '---').join('|')}|`);
  for (const r of diffRows(diff)) out.push(`| ${r.map(escapeMarkdown).join(' | ')} |`);
  for (const d of diff.comparisons) {
    const t = tasksText(d);
    if (t && (t.flipped.length || t.moved.length))
      out.push('', escapeMarkdown(t.head), ...[...t.flipped, ...(t.flipped.length ? [] : t.moved)].map((l) => `- ${escapeMarkdown(l)}`));
  }
  out.push(
    '',
    `Base: ${escapeMarkdown(diff.base.label)}. Head: ${escapeMarkdown(diff.head.label)}. The effect change is paired by task over the tasks both runs share (cluster t over the task or family units).`,
  );
  return out.join('\n') + '\n';
}

export function runDiffHtml(diff: RunDiff): string {
  const cell = (s: string) => `<td>${escapeHtml(s)}</td>`;
  const rows = diffRows(diff)
    .map((r) => `<tr>${r.map(cell).join('')}</tr>`)
    .join('\n');
  const mismatches = diff.mismatches.length
    ? `<section class="warning"><p><strong>The runs differ</strong> (named, not averaged over):</p><ul>${diff.mismatches.map((m) => `<li>${escapeHtml(m)}</li>`).join('')}</ul></section>`
    : '';
  const flipped = diff.comparisons
    .map(tasksText)
    .filter((t) => t !== null && (t.flipped.length || t.moved.length))
    .map(
      (t) =>
        `<h2>${escapeHtml(t!.head)}</h2><ul>${[...t!.flipped, ...(t!.flipped.length ? [] : t!.moved)].map((l) => `<li>${escapeHtml(l)}</li>`).join('')}</ul>`,
    )
    .join('\n');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>pairbench compare: ${escapeHtml(title(diff))}</title>
<style>body{font-family:system-ui,sans-serif;margin:2rem;max-width:70rem}table{border-collapse:collapse}td,th{border:1px solid #bbb;padding:.3rem .6rem;text-align:left}.warning{border-left:4px solid #c60;padding-left:1rem}</style>
</head><body>
<h1>pairbench compare: ${escapeHtml(title(diff))}</h1>
${mismatches}
<table><thead><tr>${HEADERS.map((h) => `<th>${escapeHtml(h)}</th>`).join('')}</tr></thead><tbody>
${rows}
</tbody></table>
${flipped}
<p>Base: ${escapeHtml(diff.base.label)}. Head: ${escapeHtml(diff.head.label)}.</p>
</body></html>
`;
}
