/**
 * `pairbench compare`'s report: two runs side by side, as Markdown (the pull-request comment)
 * and as a self-contained HTML page. Both render the same rows (diffRows), so the comment and
 * the page never disagree. Every string from a bundle passes through the escapers.
 */
import type { ComparisonDiff, RunDiff } from '../stats/run-diff.js';
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

const HEADERS = ['comparison', 'base', 'head', 'effect change (head - base)', 'flipped tasks', 'cost per attempt (head / base)'];

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
  for (const r of diffRows(diff)) out.push(`| ${r.map(escapeMarkdown).join(' | ')} |`);
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
    .map((r) => `<tr>${r.map(cell).join('')}</tr>`)
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
