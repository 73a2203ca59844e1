/**
 * `pairbench compare`'s report: two runs side by side, as Markdown (the pull-request comment)
 * and as a self-contained HTML page. Both render the same rows (diffRows), so the comment and
 * the page never disagree. Every string from a bundle passes through the escapers.
 */
import type { ComparisonDiff, RunDiff } from '../stats/run-diff.js';
import type { Interval } from '../stats/types.js';
import { escapeHtml, escapeMarkdown, NONE, pct, pp, ratio, verdictWord } from './report-format.js';

function ci(c: Interval | null | undefined): string {
  return c ? `${pp(c.low)} to ${pp(c.high)}` : 'no interval';
}

function side(f: ComparisonDiff['base']): string {
  return f ? `${verdictWord(f.verdict)} ${pp(f.delta)}` : 'not run';
}

function change(d: ComparisonDiff): string {
  if (!d.effect_change) return NONE;
  const e = d.effect_change;
  return `${pp(e.estimate)} (${e.ci ? `${Math.round(e.ci.confidence * 100)}% CI ${ci(e.ci)}` : 'no interval'}; ${e.n_tasks} tasks)`;
}

function costChange(d: ComparisonDiff): string {
  const parts = d.cost.filter((c) => c.ratio !== null).map((c) => `${c.arm} ${ratio(c.ratio)}`);
  return parts.length ? parts.join(', ') : NONE;
}

/** One row per comparison, in words: what both renderers show. */
export function diffRows(diff: RunDiff): { comparison: string; base: string; head: string; change: string; flipped: string; cost: string }[] {
  return diff.comparisons.map((d) => ({
    comparison: `${d.treatment} vs ${d.control}`,
    base: side(d.base),
    head: side(d.head),
    change: change(d),
    flipped: d.flipped.length ? d.flipped.map((f) => f.task).join(', ') : 'none',
    cost: costChange(d),
  }));
}

const HEADERS = ['comparison', 'base', 'head', 'effect change (head - base)', 'flipped tasks', 'cost per attempt (head / base)'];

/** Each flipped task in words (plain text: each renderer escapes it). */
function flippedText(d: ComparisonDiff): string[] {
  return d.flipped.map(
    (f) =>
      `${f.task}: ${d.control} ${pct(f.control.base)} → ${pct(f.control.head)}, ${d.treatment} ${pct(f.treatment.base)} → ${pct(f.treatment.head)} ` +
      `(pass rates; outcome ${f.base_class} → ${f.head_class})`,
  );
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
  for (const r of diffRows(diff)) out.push(`| ${[r.comparison, r.base, r.head, r.change, r.flipped, r.cost].map(escapeMarkdown).join(' | ')} |`);
  for (const d of diff.comparisons.filter((x) => x.flipped.length))
    out.push('', `Flipped in ${escapeMarkdown(`${d.treatment} vs ${d.control}`)}:`, ...flippedText(d).map((l) => `- ${escapeMarkdown(l)}`));
  out.push(
    '',
    `Base: ${escapeMarkdown(diff.base.label)}. Head: ${escapeMarkdown(diff.head.label)}. The effect change is paired by task over the tasks both runs share (cluster t over the task or family units).`,
  );
  return out.join('\n') + '\n';
}

export function runDiffHtml(diff: RunDiff): string {
  const cell = (s: string) => `<td>${escapeHtml(s)}</td>`;
  const rows = diffRows(diff)
    .map((r) => `<tr>${[r.comparison, r.base, r.head, r.change, r.flipped, r.cost].map(cell).join('')}</tr>`)
    .join('\n');
  const mismatches = diff.mismatches.length
    ? `<section class="warning"><p><strong>The runs differ</strong> (named, not averaged over):</p><ul>${diff.mismatches.map((m) => `<li>${escapeHtml(m)}</li>`).join('')}</ul></section>`
    : '';
  const flipped = diff.comparisons
    .filter((d) => d.flipped.length)
    .map(
      (d) =>
        `<h2>Flipped in ${escapeHtml(`${d.treatment} vs ${d.control}`)}</h2><ul>${flippedText(d)
          .map((l) => `<li>${escapeHtml(l)}</li>`)
          .join('')}</ul>`,
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
