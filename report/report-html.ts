/**
 * The HTML report: ONE self-contained page. No script, no external style, font or
 * image; CSS is inline and the plots are inline SVG. A Content-Security-Policy
 * meta tag forbids every fetch, so opening the file cannot touch the network.
 * Every string that comes from the data passes through escapeHtml.
 */
import type { AnalysisResult, ArmMetrics, Comparison, ConfigField, FactorialResult, JudgeSummary, SequentialResult, TaskOutcome } from '../stats/types.js';
import type { ReportContext, ReportHistory } from './report-context.js';
import { recordStatus } from './report-format.js';
import { PRIVATE_NOTICE } from './public-bundle.js';
import { infraCauses } from '../stats/arm-metrics.js';
import {
  armText,
  timesText,
  INTEGRITY_INTRO,
  lostTasksText,
  mdeText,
  testText,
  worstCaseText,
  isolationText,
  scriptedText,
  integrityCaveat,
  integritySummary,
  integrityCounts,
  NONE,
  anyWithoutDelta,
  comparisonTitle,
  egressEnforced,
  recordedOtherwise,
  mechanismText,
  comparisonMechanismText,
  outcomesByCategory,
  judgeClassText,
  passAtKText,
  EFFECT_MEANING,
  EXCLUDED_MEANING,
  descriptiveArmsText,
  pairsText,
  agreementText,
  judgeCountsText,
  factorialCells,
  crossedGrid,
  type CrossedGrid,
  relativeMetricsText,
  envelopeFormulas,
  escapeHtml as esc,
  interval,
  intervalMethod,
  methodsUsed,
  num,
  outcomeName,
  pct,
  pp,
  ppWidth,
  problemText,
  pValue,
  ratio,
  scopeStatement,
  atAGlance,
  counted,
  sequentialTable,
  seconds,
  spread,
  totalExcluded,
  usd,
  comparisonMeaning,
  verdictWord,
} from './report-format.js';

const CSP = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'";

const CSS = `
:root { --amber: #ffbf00; --ok: #1e6b3a; --ink: #1b1f24; --muted: #5b6570; --line: #d5dbe1; --bg: #ffffff; --panel: #f5f7f9;
  --a: #1e6b3a; --b: #6b7580; --c: #b42318; --na: #8a5a00; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; color: var(--ink); background: var(--bg); }
code, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace; font-size: 12px; overflow-wrap: anywhere; }
.status-bar { display: flex; flex-wrap: wrap; gap: 6px 18px; align-items: center; padding: 8px 16px; border-bottom: 3px solid var(--line); }
.status-bar.egress-open { background: var(--amber); color: #1a1200; border-bottom-color: #b38600; }
.status-bar.egress-enforced { background: var(--ok); color: #ffffff; border-bottom-color: #12401f; }
.status-bar .item { white-space: nowrap; }
@media (max-width: 640px) { .status-bar .item { white-space: normal; overflow-wrap: anywhere; } dl.facts { grid-template-columns: minmax(0, 1fr); } }
dl.facts dd, .reasons li, .caveat { min-width: 0; overflow-wrap: anywhere; }
svg .summary-mark { fill: #1b1f24; }
svg .interaction-line { stroke-width: 2; fill: none; } svg .interaction-line.level-0 { stroke: #8c96a0; } svg .interaction-line.level-1 { stroke: #1f6feb; }
svg .interaction-cell.level-0 { fill: #8c96a0; } svg .interaction-cell.level-1 { fill: #1f6feb; } svg .arm-point { fill: #1f6feb; }
.status-bar .k { text-transform: uppercase; font-size: 11px; letter-spacing: .04em; opacity: .8; margin-right: 4px; }
.status-bar .egress-chip { font-weight: 700; }
.status-bar .recorded { font-weight: 700; }
main { max-width: 1040px; margin: 0 auto; padding: 8px 20px 40px; }
h1 { font-size: 22px; margin: 16px 0 4px; }
h2 { font-size: 18px; margin: 28px 0 8px; border-bottom: 1px solid var(--line); padding-bottom: 4px; }
h3 { font-size: 15px; margin: 18px 0 6px; }
.sub { color: var(--muted); margin: 0 0 8px; }
.warnings { border-left: 4px solid var(--c); background: #fdecea; padding: 4px 12px; margin: 12px 0; }
.warnings ul { margin: 4px 0; padding-left: 4px; list-style: none; }
.status-bar .scripted .v { font-weight: 700; }
.fixture-note { border-left: 4px solid var(--amber); background: #fff8e1; padding: 8px 12px; margin: 12px 0; }
.comparison { border: 1px solid var(--line); border-radius: 6px; padding: 12px 16px; margin: 12px 0; }
.verdict { font-size: 16px; margin: 4px 0 10px; }
.verdict-word { display: inline-block; font-weight: 800; letter-spacing: .03em; padding: 2px 8px; border-radius: 4px; margin-right: 8px; color: #fff; background: var(--b); }
.verdict-positive .verdict-word { background: var(--a); }
.verdict-negative .verdict-word { background: var(--c); }
.verdict-refused .verdict-word, .verdict-invalid .verdict-word { background: #3d4650; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 2px 14px; margin: 6px 0; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; }
.reasons { color: var(--c); }
table { border-collapse: collapse; margin: 8px 0; width: 100%; }
th, td { border-bottom: 1px solid var(--line); padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: var(--panel); font-weight: 600; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
.outcome-a { color: var(--a); } .outcome-b { color: var(--b); } .outcome-c { color: var(--c); } .outcome-no-answer { color: var(--na); }
svg { display: block; max-width: 100%; height: auto; font-family: inherit; }
svg text { fill: var(--ink); font-size: 11px; }
svg .axis { stroke: #8c96a0; stroke-width: 1; }
svg .grid { stroke: var(--line); stroke-width: 1; }
svg .envelope-band { fill: #e9edf1; }
svg .zero { stroke: #39424c; stroke-width: 1.2; }
svg .forest-task.outcome-a { fill: var(--a); } svg .forest-task.outcome-b { fill: var(--b); }
svg .forest-task.outcome-c { fill: var(--c); } svg .forest-task.outcome-no-answer { fill: var(--na); }
svg .forest-effect { fill: #1b1f24; } svg .ci { stroke: #1b1f24; stroke-width: 2; }
svg .bar { fill: #5b7ea4; } svg .whisker { stroke: #1b1f24; stroke-width: 1.5; }
svg .muted { fill: var(--muted); }
.charts { display: flex; flex-direction: column; gap: 4px; }
.bar-chart { margin: 6px 0; max-width: 620px; }
.abc-counts { display: flex; flex-wrap: wrap; gap: 6px 22px; font-weight: 700; margin: 10px 0 4px; }
/* A plot scales to the width it has (viewBox, max-width 100%): on a phone every mark stays on screen. */
.plot-wrap { max-width: 100%; }
/* A table wider than its box scrolls inside it, with a shadow on each side that has more columns
   (the covers scroll with the content; the shadows stay at the box's edges). */
.table-wrap { overflow-x: auto;
  background: linear-gradient(to right, var(--bg) 30%, rgba(255,255,255,0)) left / 24px 100% no-repeat local,
    linear-gradient(to left, var(--bg) 30%, rgba(255,255,255,0)) right / 24px 100% no-repeat local,
    radial-gradient(farthest-side at 0 50%, rgba(0,0,0,.28), rgba(0,0,0,0)) left / 10px 100% no-repeat scroll,
    radial-gradient(farthest-side at 100% 50%, rgba(0,0,0,.28), rgba(0,0,0,0)) right / 10px 100% no-repeat scroll; }
.table-wrap table { background: transparent; }
@media (max-width: 640px) { main { padding: 8px 10px 32px; } th, td { padding: 3px 5px; } }
svg .summary-label { font-size: 14px; }
svg .abc-segment.outcome-a { fill: var(--a); } svg .abc-segment.outcome-b { fill: #c3cad1; }
svg .abc-segment.outcome-c { fill: var(--c); } svg .abc-segment.outcome-no-answer { fill: var(--na); }
.overhead { border-top: 1px dashed var(--line); padding-top: 6px; }
.methods-panel { background: var(--panel); border: 1px solid var(--line); border-radius: 6px; padding: 4px 16px 12px; margin-top: 28px; }
.methods-panel h2 { border-bottom: none; }
.scope { margin-top: 28px; color: var(--muted); }
.scope strong { color: var(--ink); }
`;

export function renderHtml(result: AnalysisResult, ctx: ReportContext): string {
  const scope = scopeStatement(result, ctx);
  const body = [
    statusBar(result, ctx),
    '<main>',
    `<h1>pairbench: ${esc(ctx.cohort)}</h1>`,
    `<p class="sub">${esc(timesText(ctx.times))} · freeze <code>${esc(ctx.freeze_digest)}</code> · report schema_version ${result.schema_version}</p>`,
    ctx.fixture_note ? `<p class="fixture-note" role="note"><strong>Note:</strong> ${esc(ctx.fixture_note)}</p>` : '',
    // Which form of the bundle this is: the public form replaces this text (public-bundle.ts).
    `<p class="visibility" role="note">${PRIVATE_NOTICE}</p>`,
    warnings(result),
    summaryPlot(result),
    '<section id="verdicts">',
    '<h2>Verdicts</h2>',
    result.comparisons.length === 0 ? '<p>No comparison was analysed.</p>' : '',
    ...result.comparisons.map((c, i) => comparison(c, i, integrityCaveat(result, c))),
    '</section>',
    result.sequential ? sequentialSection(result.sequential) : '',
    result.factorial ? factorial(result.factorial, result.arms) : '',
    crossedSection(crossedGrid(result)),
    result.judge ? judgeSection(result.judge) : '',
    ctx.history ? historySection(ctx.history) : '',
    arms(result, ctx),
    costs(result),
    infra(result),
    methods(result, ctx),
    `<footer class="scope"><p><strong>What these numbers are:</strong> ${esc(scope.are)}</p>`,
    `<p><strong>What they are not:</strong> ${esc(scope.areNot)}</p></footer>`,
    '</main>',
  ];
  return [
    '<!doctype html>',
    '<html lang="en">',
    '<head>',
    '<meta charset="utf-8">',
    `<meta http-equiv="Content-Security-Policy" content="${esc(CSP)}">`,
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    '<meta name="generator" content="pairbench">',
    `<title>pairbench: ${esc(ctx.cohort)}</title>`,
    `<style>${CSS}</style>`,
    '</head>',
    '<body>',
    ...body.filter((s) => s !== '').map(wrapTables),
    '</body>',
    '</html>',
    '',
  ].join('\n');
}

/**
 * Every table and plot in a wrapper, so a narrow screen never scrolls the page: a table wider
 * than the screen scrolls inside its own box (with a shadow as the cue), a plot scales to fit.
 */
function wrapTables(html: string): string {
  return html
    .replace(/<table\b/g, '<div class="table-wrap"><table')
    .replace(/<\/table>/g, '</table></div>')
    .replace(/<svg\b/g, '<div class="plot-wrap"><svg')
    .replace(/<\/svg>/g, '</svg></div>');
}

/**
 * The report's first picture: every comparison (and factorial effect) as its effect and
 * interval on one axis, with its verdict, so the one claim is not a screen down.
 */
function summaryPlot(result: AnalysisResult): string {
  const rows = atAGlance(result);
  if (rows.length === 0) return '';
  // Each row: its label, verdict and effect on one line, its interval on the axis below; narrow
  // enough for a phone (the axis takes the whole width, no label column beside it).
  const W = 520;
  const L = 14;
  const R = W - 14;
  const rowH = 44;
  const top = 24;
  const H = top + rows.length * rowH + 4;
  const x = (d: number): number => round(L + ((clamp(d, -1, 1) + 1) / 2) * (R - L));
  const parts = [
    '<section id="summary">',
    '<h2>At a glance</h2>',
    `<svg class="summary-plot" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" role="img" aria-label="Every comparison: effect and interval">`,
    '<title>Every comparison: effect (pass-rate delta) and its interval, with the verdict</title>',
  ];
  for (const t of [-1, -0.5, 0, 0.5, 1]) {
    parts.push(`<line class="${t === 0 ? 'zero' : 'grid'}" x1="${x(t)}" x2="${x(t)}" y1="${top - 4}" y2="${H - 4}"/>`);
    parts.push(`<text class="muted" x="${x(t)}" y="${top - 10}" text-anchor="${t === -1 ? 'start' : t === 1 ? 'end' : 'middle'}">${esc(pp(t))}</text>`);
  }
  rows.forEach((g, i) => {
    const y = top + i * rowH + 16;
    const effect = g.effect === null ? 'delta: null' : pp(g.effect);
    parts.push(
      `<text class="summary-label" x="${L}" y="${y}"><tspan font-weight="700">${esc(g.verdict)}</tspan> ${esc(truncate(g.label, 44))} · ${esc(effect)}<title>${esc(g.label)}</title></text>`,
    );
    const ly = y + 14;
    if (g.interval) parts.push(`<line class="ci" x1="${x(g.interval.low)}" x2="${x(g.interval.high)}" y1="${ly}" y2="${ly}"/>`);
    if (g.effect !== null) {
      const cx = x(g.effect);
      parts.push(
        `<polygon class="summary-mark" data-verdict="${esc(g.verdict)}" points="${cx - 6},${ly} ${cx},${ly - 6} ${cx + 6},${ly} ${cx},${ly + 6}"><title>${esc(`${g.label}: ${g.verdict}, effect ${effect}${g.interval ? `, interval [${pp(g.interval.low)}, ${pp(g.interval.high)}]` : ''}`)}</title></polygon>`,
      );
    }
  });
  parts.push('</svg>', '</section>');
  return parts.join('\n');
}

/** The headline warnings, before any verdict. */
function warnings(result: AnalysisResult): string {
  if (result.warnings.length === 0) return '';
  return [
    '<section class="warnings" role="alert" aria-label="Warnings">',
    '<ul>',
    ...result.warnings.map((w) => `<li class="warning warning-${esc(w.kind)}" data-kind="${esc(w.kind)}">⚠ ${esc(w.message)}</li>`),
    '</ul>',
    '</section>',
  ].join('\n');
}

function statusBar(result: AnalysisResult, ctx: ReportContext): string {
  const enforced = egressEnforced(result, ctx);
  const isolation = isolationText(result, ctx);
  const item = (k: string, v: string, cls = ''): string =>
    `<span class="item${cls ? ` ${cls}` : ''}"><span class="k">${esc(k)}</span><span class="v">${v}</span></span>`;
  // What the attempts recorded, when it is not what the cohort config claims.
  const recorded = (field: ConfigField, claimed: string): string => {
    const values = recordedOtherwise(result, field, claimed);
    return values.length === 0 ? '' : ` <span class="recorded">(recorded: ${values.map(esc).join(', ')})</span>`;
  };
  const egressRecorded = result.arms.flatMap((a) => a.config.egress_enforced);
  const egressNote =
    ctx.sandbox.egress_enforced && !enforced ? ` (not in every attempt: recorded ${[...new Set(egressRecorded)].sort().map(esc).join(', ')})` : '';
  return [
    `<header class="status-bar ${enforced ? 'egress-enforced' : 'egress-open'}" role="status" aria-label="Instrument status" data-egress-enforced="${enforced}">`,
    item(
      'agent',
      `${esc(ctx.agent.adapter)} ${esc(ctx.agent.version)}${recorded('adapter', ctx.agent.adapter)}${recorded('adapter_version', ctx.agent.version)}`,
    ),
    item(
      'model',
      `${esc(ctx.agent.model)}${recorded('model', ctx.agent.model)}${scriptedText(result) ? ` · ⚠ ${esc(scriptedText(result)!)}` : ''}`,
      scriptedText(result) ? 'scripted' : '',
    ),
    item('image', `${ctx.sandbox.image_id ? `<code>${esc(ctx.sandbox.image_id)}</code>` : 'none'}${recorded('image_id', ctx.sandbox.image_id ?? 'none')}`),
    item(
      'sandbox',
      `${esc(ctx.sandbox.backend)}${ctx.sandbox.isolation ? ` (isolation ${esc(ctx.sandbox.isolation)})` : ''}${recorded('sandbox_backend', ctx.sandbox.backend)}`,
    ),
    item(
      'egress',
      `<span class="egress-chip">${esc(ctx.sandbox.egress_mode)} · ${enforced ? 'enforced' : `⚠ NOT enforced${esc(egressNote)}`}</span>${recorded('egress_mode', ctx.sandbox.egress_mode)}`,
      'egress',
    ),
    item('isolation', isolation.isolated ? esc(isolation.text) : `⚠ ${esc(isolation.text)}`, isolation.isolated ? 'isolated' : 'unisolated'),
    ...(ctx.verifier_environment
      ? [
          ctx.verifier_environment.pinned
            ? item('verifier', esc(ctx.verifier_environment.text))
            : item('verifier', `⚠ ${esc(ctx.verifier_environment.text)}`, 'unpinned'),
        ]
      : []),
    item('design', `${ctx.tasks.length} tasks x ${ctx.reps} reps`),
    ...(ctx.history ? [recordItem(ctx.history, item)] : []),
    '</header>',
  ].join('\n');
}

/** The record in one item: a first registration, the draws that were not first, analyses another cohort made first. */
function recordItem(h: ReportHistory, item: (k: string, v: string, cls?: string) => string): string {
  const r = recordStatus(h);
  return r.warn ? item('record', `⚠ ${esc(r.text)}`, 'record-warn') : item('record', esc(r.text));
}

function comparison(c: Comparison, index: number, caveat: string | null): string {
  const facts: Array<[string, string]> = [];
  facts.push([
    'delta',
    c.delta === null
      ? '<span class="delta">delta: null</span>'
      : `<span class="delta">${esc(pp(c.delta))}</span> ${EFFECT_MEANING}${c.directional ? ' · <strong>directional</strong> (smaller than the minimum detectable effect)' : ''}`,
  ]);
  facts.push(['CI', c.ci ? `${esc(interval(c.ci))} <span class="sub">(${esc(intervalMethod(c.ci))})</span>` : NONE]);
  facts.push([
    'noise envelope',
    c.envelope
      ? `${esc(ppWidth(c.envelope.value))} <span class="sub">(floor ${esc(ppWidth(c.envelope.floor))}, spread term ${esc(ppWidth(c.envelope.spread_term))}; formula in Methods)</span>`
      : NONE,
  ]);
  if (c.test) facts.push(['test', esc(testText(c.test))]);
  if (c.mde) facts.push(['minimum detectable effect', esc(mdeText(c.mde))]);
  for (const [k, t] of [
    ['lost tasks', lostTasksText(c)],
    ['exclusions', worstCaseText(c)],
  ] as const)
    if (t) facts.push([k, esc(t)]);
  if (c.mcnemar) facts.push(['McNemar exact', `b=${c.mcnemar.b}, c=${c.mcnemar.c}, p=${esc(pValue(c.mcnemar.p))}, Holm p=${esc(pValue(c.mcnemar.p_holm))}`]);
  for (const t of relativeMetricsText(c)) {
    const [k, ...v] = t.split(': ');
    facts.push([k!, esc(v.join(': '))]);
  }
  const mechanism = comparisonMechanismText(c);
  if (mechanism) facts.push(['mechanism', esc(mechanism)]);
  const categories = outcomesByCategory(c);
  if (categories.length > 1)
    facts.push([
      'by category',
      categories.map((k) => `${esc(k.category)}: (a) ${k.a} · (b) ${k.b} · (c) ${k.c}${k.no_answer ? ` · no answer ${k.no_answer}` : ''}`).join('<br>'),
    ]);
  facts.push(['pairs', `${pairsText(c)} · ${counted(c.n_tasks, 'task')} in ${counted(c.n_families, 'family', 'families')}`]);

  return [
    `<article class="comparison verdict-${esc(c.verdict)}" data-verdict="${esc(c.verdict)}" id="comparison-${index}">`,
    `<h3>${esc(comparisonTitle(c))}</h3>`,
    `<p class="verdict"><span class="verdict-word">${verdictWord(c.verdict)}</span>${esc(comparisonMeaning(c))}</p>`,
    c.problems.length > 0 ? `<ul class="reasons">${c.problems.map((p) => `<li>${esc(problemText(p))}</li>`).join('')}</ul>` : '',
    caveat ? `<p class="caveat">⚠ ${esc(caveat)}</p>` : '',
    `<dl class="facts">${facts.map(([k, v]) => `<dt>${esc(k)}</dt><dd>${v}</dd>`).join('')}</dl>`,
    forestPlot(c),
    outcomeTable(c),
    '</article>',
  ]
    .filter((s) => s !== '')
    .join('\n');
}

// ---------------------------------------------------------------- forest plot

function forestPlot(c: Comparison): string {
  const tasks = c.outcomes?.tasks ?? [];
  if (tasks.length === 0) {
    return `<p class="sub forest-none">No forest plot: ${esc(verdictWord(c.verdict).toLowerCase())}${c.delta === null ? ', delta: null' : ''}.</p>`;
  }
  const W = 760;
  const labelW = 210;
  const L = labelW + 14;
  const R = W - 84;
  const rowH = 22;
  const top = 30;
  const x = (d: number): number => round(L + ((clamp(d, -1, 1) + 1) / 2) * (R - L));
  const effectY = top + tasks.length * rowH + rowH;
  const H = effectY + rowH;
  const parts: string[] = [];
  parts.push(
    `<svg class="forest-plot" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" role="img" aria-label="${esc(`Forest plot: per-task pass-rate delta, ${comparisonTitle(c)}`)}">`,
  );
  parts.push(`<title>${esc(`Per-task deltas (treatment - control pass rate): ${comparisonTitle(c)}`)}</title>`);
  if (c.envelope) {
    const e = Math.abs(c.envelope.value);
    parts.push(
      `<rect class="envelope-band" x="${x(-e)}" y="${top - 6}" width="${round(x(e) - x(-e))}" height="${effectY - top + 4}"><title>${esc(`noise envelope ${ppWidth(e)}`)}</title></rect>`,
    );
  }
  for (const t of [-1, -0.5, 0, 0.5, 1]) {
    parts.push(`<line class="${t === 0 ? 'zero' : 'grid'}" x1="${x(t)}" x2="${x(t)}" y1="${top - 6}" y2="${effectY + rowH / 2}"/>`);
    parts.push(`<text class="muted" x="${x(t)}" y="${top - 12}" text-anchor="middle">${esc(pp(t))}</text>`);
  }
  tasks.forEach((t, i) => {
    const y = top + i * rowH + rowH / 2;
    parts.push(`<text x="${labelW}" y="${y + 4}" text-anchor="end">${esc(truncate(t.task, 32))}<title>${esc(t.task)}</title></text>`);
    parts.push(
      `<circle class="forest-mark forest-task outcome-${t.class}" data-task="${esc(t.task)}" cx="${x(t.delta)}" cy="${y}" r="5"><title>${esc(taskTitle(t))}</title></circle>`,
    );
    parts.push(`<text class="muted" x="${R + 10}" y="${y + 4}">${esc(pp(t.delta))}</text>`);
  });
  const sepY = top + tasks.length * rowH + rowH / 4;
  parts.push(`<line class="axis" x1="${L}" x2="${R}" y1="${sepY}" y2="${sepY}"/>`);
  parts.push(`<text x="${labelW}" y="${effectY + 4}" text-anchor="end" font-weight="700">effect (mean of tasks)</text>`);
  if (c.delta !== null) {
    if (c.ci)
      parts.push(
        `<line class="ci" x1="${x(c.ci.low)}" x2="${x(c.ci.high)}" y1="${effectY}" y2="${effectY}"><title>${esc(`CI ${interval(c.ci)}`)}</title></line>`,
      );
    const cx = x(c.delta);
    parts.push(
      `<polygon class="forest-effect" points="${cx - 7},${effectY} ${cx},${effectY - 7} ${cx + 7},${effectY} ${cx},${effectY + 7}"><title>${esc(`effect ${pp(c.delta)}, CI ${interval(c.ci)}`)}</title></polygon>`,
    );
    parts.push(`<text x="${R + 10}" y="${effectY + 4}" font-weight="700">${esc(pp(c.delta))}</text>`);
  } else {
    parts.push(`<text x="${x(0) + 8}" y="${effectY + 4}">delta: null</text>`);
  }
  parts.push('</svg>');
  return parts.join('\n');
}

function taskTitle(t: TaskOutcome): string {
  return `${t.task}: ${outcomeName(t.class)}, delta ${pp(t.delta)} (control ${pct(t.control_pass_rate)}, treatment ${pct(t.treatment_pass_rate)}, ${t.n_pairs} pairs), ${t.label}`;
}

/** (a)/(b)/(c)/no answer as one stacked bar: the share of tasks each class holds. */
function abcBar(counts: NonNullable<Comparison['outcomes']>['counts']): string {
  const classes = [
    ['a', '(a) helped', counts.a],
    ['b', '(b) no difference', counts.b],
    ['c', '(c) hurt', counts.c],
    ['no-answer', 'no answer', counts.no_answer],
  ] as const;
  const total = classes.reduce((n, [, , k]) => n + k, 0);
  if (total === 0) return '';
  const W = 520;
  const H = 22;
  let x = 0;
  const parts = [
    `<svg class="abc-bar" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" role="img" aria-label="Share of tasks per outcome">`,
  ];
  for (const [cls, name, k] of classes) {
    if (k === 0) continue;
    const w = round((k / total) * W);
    parts.push(
      `<rect class="abc-segment outcome-${cls}" data-outcome="${cls}" x="${x}" y="0" width="${w}" height="${H}"><title>${esc(`${name}: ${k} of ${total} tasks`)}</title></rect>`,
    );
    x += w;
  }
  parts.push('</svg>');
  return parts.join('');
}

function outcomeTable(c: Comparison): string {
  const counts = c.outcomes?.counts;
  const n = (k: 'a' | 'b' | 'c' | 'no_answer'): string => (counts ? String(counts[k]) : NONE);
  const rows = (c.outcomes?.tasks ?? []).map(
    (t) =>
      `<tr class="outcome-row" data-outcome="${t.class}"><td>${esc(t.task)}</td><td>${esc(t.family)}</td><td class="outcome-${t.class}">${esc(outcomeName(t.class))}</td>` +
      `<td class="n">${esc(pct(t.control_pass_rate))}</td><td class="n">${esc(pct(t.treatment_pass_rate))}</td><td class="n">${esc(pp(t.delta))}</td>` +
      `<td class="n">${t.n_pairs}</td><td class="n">${esc(ratio(t.cost_ratio))}</td><td>${esc(t.label)}</td></tr>`,
  );
  return [
    `<div class="abc-counts"><span class="outcome-a">(a) helped: <span data-count="a">${n('a')}</span></span>` +
      `<span class="outcome-b">(b) no difference: <span data-count="b">${n('b')}</span></span>` +
      `<span class="outcome-c">(c) hurt: <span data-count="c">${n('c')}</span></span>` +
      `<span class="outcome-no-answer">no answer: <span data-count="no-answer">${n('no_answer')}</span></span>` +
      `${counts ? '' : `<span class="sub">(not computed: ${esc(c.verdict)})</span>`}</div>`,
    counts ? abcBar(counts) : '',
    '<table class="abc">',
    '<caption class="sub">Per-task outcomes: (a) helped, (b) no difference, (c) hurt; an over-budget attempt is "no answer", never (c)</caption>',
    rows.length > 0
      ? '<tr><th>task</th><th>family</th><th>outcome</th><th class="n">control pass</th><th class="n">treatment pass</th><th class="n">delta</th><th class="n">pairs</th><th class="n">cost ratio</th><th>label</th></tr>'
      : '',
    ...rows,
    '</table>',
  ]
    .filter((s) => s !== '')
    .join('\n');
}

function sequentialSection(seq: SequentialResult): string {
  const t = sequentialTable(seq);
  return [
    '<section id="sequential">',
    '<h2>Sequential stopping (preregistered)</h2>',
    `<p>${esc(t.summary)}</p>`,
    '<table>',
    `<thead><tr>${t.header.map((h) => `<th>${esc(h)}</th>`).join('')}</tr></thead>`,
    `<tbody>${t.rows.map((r) => `<tr>${r.map((c) => `<td>${esc(c)}</td>`).join('')}</tr>`).join('')}</tbody>`,
    '</table>',
    ...seq.notes.map((n) => `<p class="note">${esc(n)}</p>`),
    '</section>',
  ].join('\n');
}

function judgeSection(j: JudgeSummary): string {
  const v = j.counts.verifier;
  const rows = j.rows.map((r) => {
    const agree = r.judge === null || r.verifier === null || r.verifier === 'no-answer' ? NONE : r.judge === r.verifier ? 'yes' : '<strong>no</strong>';
    return `<tr><td>${esc(r.task)}</td><td>${esc(r.category)}</td><td>${esc(judgeClassText(r.judge))}</td><td>${esc(judgeClassText(r.verifier))}</td><td>${agree}</td><td>${esc(r.reason.split('\n')[0] ?? '')}</td></tr>`;
  });
  return [
    '<section id="judge">',
    `<h2>Judge and verifier: ${esc(j.treatment)} vs ${esc(j.control)}</h2>`,
    `<p>Judge ${esc(j.step)} (model ${esc(j.model ?? NONE)}${j.model_source === 'scripted' ? ', <strong>scripted</strong>' : ''}, rubric <code>${esc(j.rubric_digest ?? NONE)}</code>), blind to the verifier. ${esc(agreementText(j))}</p>`,
    `<p>judge: ${esc(judgeCountsText(j))}<br>verifier: ${v ? `(a) ${v.a} · (b) ${v.b} · (c) ${v.c} · no answer ${v.no_answer}` : NONE}</p>`,
    "<table><thead><tr><th>task</th><th>category</th><th>judge</th><th>verifier</th><th>agree</th><th>judge's reason</th></tr></thead><tbody>",
    ...rows,
    '</tbody></table>',
    '</section>',
  ].join('\n');
}

function crossedSection(g: CrossedGrid | null): string {
  if (!g) return '';
  return [
    '<section id="crossed">',
    `<h2>By ${esc(g.by)}</h2>`,
    `<table class="crossed"><tr><th>${esc(g.by)}</th>${g.arms.map((a) => `<th class="n">${esc(a)}</th>`).join('')}${g.treatments.map((t) => `<th>effect of ${esc(t)}</th>`).join('')}</tr>`,
    ...g.rows.map(
      (r) =>
        `<tr><td>${esc(r.level)}</td>${r.rates.map((x) => `<td class="n">${esc(pct(x))}</td>`).join('')}` +
        `${r.effects.map((e) => `<td><strong>${esc(e.verdict)}</strong> ${esc(e.effect === null ? NONE : pp(e.effect))} ${esc(e.interval)}</td>`).join('')}</tr>`,
    ),
    '</table>',
    `<ul class="crossed-effects">${g.lines.map((l) => `<li>${esc(l.label)}: ${l.verdict ? `<strong>${esc(l.verdict)}</strong> ` : ''}${esc(l.text)}</li>`).join('')}</ul>`,
    '</section>',
  ].join('\n');
}

function factorial(f: FactorialResult, armMetrics: readonly ArmMetrics[]): string {
  const effects = [...f.main_effects, ...(f.interaction ? [f.interaction] : [])];
  return [
    '<section id="factorial">',
    `<h2>Factorial: ${f.factors.map(esc).join(' x ')}${f.status === 'ok' ? '' : ` (${esc(f.status)})`}</h2>`,
    f.problems.length > 0 ? `<ul class="reasons">${f.problems.map((p) => `<li>${esc(problemText(p))}</li>`).join('')}</ul>` : '',
    '<table><tr><th>effect</th><th>verdict</th><th class="n">estimate</th><th class="n">CI</th><th class="n">tasks</th><th class="n">Holm p</th><th>formula</th></tr>',
    ...effects.map(
      (e) =>
        `<tr><td>${esc(e.name)}</td><td>${esc(verdictWord(e.verdict))}</td><td class="n">${esc(pp(e.estimate))}</td><td class="n">${esc(interval(e.ci))}</td><td class="n">${e.n_tasks}</td>` +
        `<td class="n">${e.test ? esc(pValue(e.test.p_holm)) : NONE}</td><td><code>${esc(e.formula)}</code></td></tr>`,
    ),
    '</table>',
    interactionPlot(f, armMetrics),
    '</section>',
  ]
    .filter((s) => s !== '')
    .join('\n');
}

/**
 * A W x H plot whose vertical axis is a pass rate: its right edge and the bottom of its plotting
 * area (margins from the edges), the y of a rate, and the 0/50/100% gridlines with both axes.
 */
function rateFrame(W: number, H: number, L: number, rightMargin: number, bottomMargin: number) {
  const R = W - rightMargin;
  const top = 14;
  const bottom = H - bottomMargin;
  const y = (v: number) => round(bottom - clamp(v, 0, 1) * (bottom - top));
  const axes = [
    ...[0, 0.5, 1].map(
      (v) => `<line class="grid" x1="${L}" x2="${R}" y1="${y(v)}" y2="${y(v)}"/><text x="${L - 6}" y="${y(v) + 4}" text-anchor="end">${v * 100}%</text>`,
    ),
    `<line class="axis" x1="${L}" x2="${L}" y1="${top}" y2="${bottom}"/><line class="axis" x1="${L}" x2="${R}" y1="${bottom}" y2="${bottom}"/>`,
  ];
  return { R, bottom, y, axes };
}

/**
 * The 2x2 interaction plot: pass rate of each cell, the first factor across, one line per level
 * of the second. Parallel lines: the levers add up; lines that converge or cross: they interact.
 */
function interactionPlot(f: FactorialResult, armMetrics: readonly ArmMetrics[]): string {
  const cells = factorialCells(f, armMetrics);
  if (!cells) return '';
  const { a, b } = cells;
  const W = 420;
  const H = 230;
  const L = 48;
  const { R, bottom, y, axes } = rateFrame(W, H, L, 130, 40);
  const x = (la: 0 | 1) => (la === 0 ? L + 30 : R - 30);
  const parts = [
    `<figure class="interaction-plot"><figcaption><strong>Interaction: ${esc(a)} x ${esc(b)}</strong> <span class="sub">pass rate per cell (every accepted attempt of its arm); parallel lines: the levers add up, converging or crossing lines: they interact. The interaction's estimate and interval, paired over the tasks every cell ran, are in the table.</span></figcaption>`,
    `<svg class="interaction-plot" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" role="img" aria-label="${esc(`Interaction plot: pass rate by ${a} and ${b}`)}">`,
  ];
  parts.push(...axes);
  for (const la of [0, 1] as const) parts.push(`<text x="${x(la)}" y="${bottom + 16}" text-anchor="middle">${esc(`${a} ${la === 0 ? 'off' : 'on'}`)}</text>`);
  for (const lb of [0, 1] as const) {
    const ends = ([0, 1] as const).map((la) => {
      const c = cells.at(la, lb);
      return c ? { la, arm: c.arm, v: c.rate } : null;
    });
    const points = ends.filter((p): p is { la: 0 | 1; arm: string; v: number } => p !== null && p.v !== null);
    if (points.length === 2)
      parts.push(`<line class="interaction-line level-${lb}" x1="${x(0)}" y1="${y(points[0]!.v)}" x2="${x(1)}" y2="${y(points[1]!.v)}"/>`);
    for (const p of points)
      parts.push(
        `<circle class="interaction-cell level-${lb}" data-arm="${esc(p.arm)}" data-rate="${p.v}" cx="${x(p.la)}" cy="${y(p.v)}" r="4.5"><title>${esc(`${p.arm} (${a} ${p.la === 0 ? 'off' : 'on'}, ${b} ${lb === 0 ? 'off' : 'on'}): ${pct(p.v)}`)}</title></circle>`,
      );
    const last = points.find((p) => p.la === 1);
    if (last) parts.push(`<text class="interaction-label level-${lb}" x="${x(1) + 10}" y="${y(last.v) + 4}">${esc(`${b} ${lb === 0 ? 'off' : 'on'}`)}</text>`);
  }
  parts.push('</svg></figure>');
  return parts.join('\n');
}

/**
 * Cost against pass rate, one point per arm: up and to the left is better. The cost is the mean
 * USD per accepted attempt when every arm is priced, else the mean weighted token cost (said so).
 */
function costVsPassPlot(armMetrics: readonly ArmMetrics[]): string {
  const priced = armMetrics.every((m) => m.cost_usd.mean !== null);
  const points = armMetrics
    .map((m) => ({ arm: m.arm, cost: priced ? m.cost_usd.mean : m.weighted_cost.mean, rate: m.completion_rate }))
    .filter((p): p is { arm: string; cost: number; rate: number } => p.cost !== null && p.rate !== null);
  if (points.length < 2) return '';
  const unit = priced ? 'mean USD per accepted attempt' : 'mean weighted tokens per accepted attempt (no USD: not every arm is priced)';
  const W = 460;
  const H = 240;
  const L = 52;
  const { R, bottom, y, axes } = rateFrame(W, H, L, 120, 42);
  const max = Math.max(...points.map((p) => p.cost)) * 1.1 || 1;
  const x = (c: number) => round(L + clamp(c / max, 0, 1) * (R - L));
  const parts = [
    `<figure class="cost-vs-pass"><figcaption><strong>Cost against pass rate</strong> <span class="sub">one point per arm; up and to the left is better. Across: ${esc(unit)}.</span></figcaption>`,
    `<svg class="cost-vs-pass" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" role="img" aria-label="Cost against pass rate per arm">`,
  ];
  parts.push(...axes);
  parts.push(`<text x="${L}" y="${bottom + 16}">0</text><text x="${R}" y="${bottom + 16}" text-anchor="end">${esc(priced ? usd(max) : num(max, 0))}</text>`);
  parts.push(
    `<text class="muted" x="${(L + R) / 2}" y="${bottom + 32}" text-anchor="middle">${esc(priced ? 'USD per attempt' : 'weighted tokens per attempt')}</text>`,
  );
  // Labels of points close together are moved apart, so each stays readable.
  const placed: { x: number; y: number }[] = [];
  for (const p of [...points].sort((a, b) => b.rate - a.rate)) {
    let ly = y(p.rate) + 4;
    while (placed.some((q) => Math.abs(q.x - x(p.cost)) < 70 && Math.abs(q.y - ly) < 12)) ly += 12;
    placed.push({ x: x(p.cost), y: ly });
    parts.push(
      `<circle class="arm-point" data-arm="${esc(p.arm)}" data-cost="${p.cost}" data-rate="${p.rate}" cx="${x(p.cost)}" cy="${y(p.rate)}" r="4.5"><title>${esc(`${p.arm}: ${pct(p.rate)} at ${priced ? usd(p.cost) : num(p.cost, 0)}`)}</title></circle>` +
        `<text x="${x(p.cost) + 8}" y="${ly}">${esc(truncate(p.arm, 16))}</text>`,
    );
  }
  parts.push('</svg></figure>');
  return parts.join('\n');
}

// ---------------------------------------------------------------- arms

interface BarRow {
  label: string;
  value: number | null;
  lo: number | null;
  hi: number | null;
  text: string;
}

function arms(result: AnalysisResult, ctx: ReportContext): string {
  const taskRates = perTaskPassRates(result);
  const completion: BarRow[] = result.arms.map((a) => {
    const rates = taskRates.get(a.arm) ?? [];
    return {
      label: a.arm,
      value: a.completion_rate,
      lo: rates.length > 0 ? Math.min(...rates) : null,
      hi: rates.length > 0 ? Math.max(...rates) : null,
      text: `${pct(a.completion_rate)} (${a.n_passed}/${a.n_scored})`,
    };
  });
  const fromSpread = (pick: (a: ArmMetrics) => { median: number | null; min: number | null; max: number | null }, f: (x: number | null) => string) =>
    result.arms.map((a): BarRow => {
      const s = pick(a);
      return { label: a.arm, value: s.median, lo: s.min, hi: s.max, text: s.median === null ? NONE : `${f(s.median)} (${f(s.min)}–${f(s.max)})` };
    });
  const rows = result.arms.map(
    (a) =>
      `<tr><td>${esc(a.arm)}</td><td>${esc(armText(ctx, a.arm))}</td><td class="n">${a.n_attempts}</td><td class="n">${a.n_accepted}</td>` +
      `<td class="n">${a.n_excluded}</td><td class="n">${esc(pct(a.completion_rate))}</td><td class="n">${esc(spread(a.tokens))}</td>` +
      `<td class="n">${esc(spread(a.weighted_cost, (x) => num(x, 0)))}</td><td class="n">${esc(spread(a.wall_ms, seconds))}</td><td class="n">${esc(a.harness_ms?.median == null ? NONE : seconds(a.harness_ms.median))}</td><td class="n">${esc(spread(a.turns))}</td>` +
      `<td class="n">${esc(num(a.quality_per_dollar, 2))}</td><td class="n">${esc(num(a.quality_per_million_weighted, 2))}</td><td class="n">${esc(num(a.completions_per_million_tokens, 2))}</td><td>${esc(passAtKText(a))}</td>` +
      `<td class="n">${esc(mechanismText(a))}</td><td>${esc(integritySummary(a))}</td></tr>`,
  );
  return [
    '<section id="arms">',
    '<h2>Arms</h2>',
    anyWithoutDelta(result) ? `<p class="sub arms-descriptive">${esc(descriptiveArmsText('below'))}</p>` : '',
    '<div class="charts">',
    barChart('completion rate', 'whiskers: min–max of per-task pass rate', completion, 1),
    barChart(
      'weighted cost per attempt',
      'bar: median; whiskers: min–max',
      fromSpread(
        (a) => a.weighted_cost,
        (x) => num(x, 0),
      ),
      null,
    ),
    barChart(
      'agent time per attempt',
      'bar: median; whiskers: min–max',
      fromSpread((a) => a.wall_ms, seconds),
      null,
    ),
    '</div>',
    '<table class="arms">',
    '<tr><th>arm</th><th>treatment</th><th class="n">attempts</th><th class="n">accepted</th><th class="n">excluded</th><th class="n">completion</th>' +
      '<th class="n">tokens median (min–max)</th><th class="n">weighted cost median (min–max)</th><th class="n">agent time median (min–max)</th><th class="n">harness time median</th>' +
      '<th class="n">turns median (min–max)</th><th class="n">quality / $</th><th class="n">quality / M weighted</th><th class="n">completions / M tokens</th><th>pass@k</th><th class="n">delivered / used</th><th>integrity</th></tr>',
    ...rows,
    '</table>',
    '</section>',
  ].join('\n');
}

/** Per arm, the per-task pass rates the comparisons report (control rates counted once per task). */
function perTaskPassRates(result: AnalysisResult): Map<string, number[]> {
  const byArm = new Map<string, Map<string, number>>();
  const put = (arm: string, task: string, rate: number): void => {
    if (!byArm.has(arm)) byArm.set(arm, new Map());
    byArm.get(arm)!.set(task, rate);
  };
  for (const c of result.comparisons) {
    for (const t of c.outcomes?.tasks ?? []) {
      put(c.control, t.task, t.control_pass_rate);
      put(c.treatment, t.task, t.treatment_pass_rate);
    }
  }
  return new Map([...byArm].map(([arm, m]) => [arm, [...m.values()]]));
}

function barChart(title: string, note: string, rows: BarRow[], fixedMax: number | null): string {
  const W = 460;
  const labelW = 120;
  const L = labelW + 8;
  const R = W - 150;
  const rowH = 26;
  const top = 8;
  const H = top + rows.length * rowH + 8;
  const values = rows.flatMap((r) => [r.value, r.hi]).filter((v): v is number => v !== null && Number.isFinite(v));
  const max = fixedMax ?? (values.length > 0 ? Math.max(...values) : 0);
  const x = (v: number): number => round(L + (max > 0 ? clamp(v / max, 0, 1) : 0) * (R - L));
  const parts = [
    `<figure class="bar-chart"><figcaption><strong>${esc(title)}</strong> <span class="sub">${esc(note)}</span></figcaption>`,
    `<svg class="arm-bars" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" role="img" aria-label="${esc(`${title} per arm`)}">`,
    `<line class="axis" x1="${L}" x2="${L}" y1="${top}" y2="${H - 8}"/>`,
  ];
  rows.forEach((r, i) => {
    const y = top + i * rowH;
    const mid = y + rowH / 2;
    parts.push(`<text x="${labelW}" y="${mid + 4}" text-anchor="end">${esc(truncate(r.label, 18))}<title>${esc(r.label)}</title></text>`);
    if (r.value !== null) {
      parts.push(
        `<rect class="bar" data-arm="${esc(r.label)}" x="${L}" y="${y + 5}" width="${round(x(r.value) - L)}" height="${rowH - 10}"><title>${esc(`${r.label}: ${r.text}`)}</title></rect>`,
      );
    }
    if (r.lo !== null && r.hi !== null) {
      parts.push(`<line class="whisker" x1="${x(r.lo)}" x2="${x(r.hi)}" y1="${mid}" y2="${mid}"/>`);
      parts.push(`<line class="whisker" x1="${x(r.lo)}" x2="${x(r.lo)}" y1="${mid - 5}" y2="${mid + 5}"/>`);
      parts.push(`<line class="whisker" x1="${x(r.hi)}" x2="${x(r.hi)}" y1="${mid - 5}" y2="${mid + 5}"/>`);
    }
    parts.push(`<text class="muted" x="${R + 8}" y="${mid + 4}">${esc(r.value === null ? NONE : r.text)}</text>`);
  });
  parts.push('</svg></figure>');
  return parts.join('\n');
}

// ---------------------------------------------------------------- cost, infra, methods

function costs(result: AnalysisResult): string {
  const o = result.cost_streams.overhead;
  return [
    '<section id="cost">',
    '<h2>Cost</h2>',
    '<p class="sub">Eval cost per arm, over every attempt (accepted or excluded). Overhead is a separate stream below and is never added to it.</p>',
    '<table class="eval-cost"><tr><th>arm</th><th class="n">eval cost (USD)</th><th>confidence</th><th class="n">attempts without a cost</th><th class="n">tokens</th><th class="n">weighted cost</th></tr>',
    ...result.cost_streams.eval.map(
      (e) =>
        `<tr><td>${esc(e.arm)}</td><td class="n">${esc(usd(e.cost_usd))}</td><td>${esc(e.cost_confidence ?? NONE)}</td><td class="n">${e.n_missing_cost}</td>` +
        `<td class="n">${e.tokens}</td><td class="n">${esc(num(e.weighted_cost, 1))}</td></tr>`,
    ),
    '</table>',
    costVsPassPlot(result.arms),
    o
      ? `<p class="overhead"><strong>Overhead</strong> (separate stream, never added to eval cost): ${o.usd === null && o.model_source === 'scripted' ? 'unpriced (its model was scripted)' : esc(usd(o.usd))}${o.tokens !== null ? `, ${o.tokens} tokens` : ''} — ${esc(o.source)}</p>`
      : '<p class="overhead"><strong>Overhead</strong> (separate stream, never added to eval cost): none recorded.</p>',
    '</section>',
  ].join('\n');
}

function infra(result: AnalysisResult): string {
  return [
    '<section id="infra">',
    '<h2>Infrastructure errors and exclusions</h2>',
    `<p>Excluded attempts: <strong class="excluded-count">${totalExcluded(result)}</strong> — ${EXCLUDED_MEANING}.</p>`,
    '<table><tr><th>arm</th><th class="n">infra-error rate</th><th class="n">infra errors</th><th class="n">tries</th><th class="n">attempts</th><th class="n">excluded</th><th>exclusion reasons</th><th class="n">no answer (over budget)</th><th>ran from</th><th>to</th></tr>',
    ...result.arms.map((a) => {
      const reasons = Object.entries(a.exclusions)
        .sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0))
        .map(([k, v]) => `${esc(k)}: ${v}`)
        .join(', ');
      return (
        `<tr><td>${esc(a.arm)}</td><td class="n">${esc(pct(a.infra_error_rate))}</td><td class="n">${a.n_infra_errors}</td><td class="n">${a.n_tries}</td><td class="n">${a.n_attempts}</td>` +
        `<td class="n">${a.n_excluded}</td><td>${reasons || NONE}</td><td class="n">${a.n_no_answer}</td><td>${esc(a.window.started_at ?? NONE)}</td><td>${esc(a.window.ended_at ?? NONE)}</td></tr>`
      );
    }),
    '</table>',
    ...(result.arms.some((a) => infraCauses(a).length)
      ? [
          '<h3>What failed</h3>',
          '<ul class="infra-causes">',
          ...result.arms.flatMap((a) => infraCauses(a).map(([cause, n]) => `<li>${esc(a.arm)}: ${n} x <code>${esc(cause)}</code></li>`)),
          '</ul>',
        ]
      : []),
    '<h3>Integrity</h3>',
    `<p>${esc(INTEGRITY_INTRO)}</p>`,
    '<ul class="integrity">',
    ...result.arms.map((a) => `<li>${esc(a.arm)}: ${esc(integrityCounts(a))}</li>`),
    '</ul>',
    '</section>',
  ].join('\n');
}

function methods(result: AnalysisResult, ctx: ReportContext): string {
  const s = result.spec;
  const lim = ctx.limits;
  const limits = [
    `turns ${lim.turns ?? 'no cap'}`,
    `wall time ${lim.wall_seconds !== null ? `${lim.wall_seconds}s` : 'no cap'}`,
    `tokens ${lim.tokens ?? 'no cap'}`,
    `cost ${lim.cost_usd !== null ? usd(lim.cost_usd) : 'no cap'}`,
  ].join(' · ');
  const taskItems = ctx.tasks.map((t) => {
    const where = t.repo ? ` — ${esc(t.repo)}${t.commit ? ` @ <code>${esc(t.commit)}</code>` : ''}` : t.commit ? ` — <code>${esc(t.commit)}</code>` : '';
    const fam = [t.family, t.category]
      .filter((v): v is string => !!v)
      .map(esc)
      .join(' / ');
    return `<li><code>${esc(t.id)}</code>${fam ? ` (${fam})` : ''}${where}</li>`;
  });
  const armItems = Object.keys(ctx.arms)
    .sort((a, b) => (a === s.control ? -1 : b === s.control ? 1 : a < b ? -1 : a > b ? 1 : 0))
    .map(
      (name) => `<li><strong>${esc(name)}</strong>${ctx.arms[name]!.role ? ` (${esc(ctx.arms[name]!.role!)})` : ''}: ${esc(ctx.arms[name]!.treatment)}</li>`,
    );
  const analysis = [
    `control ${esc(s.control)} vs ${s.treatments.map(esc).join(', ')}`,
    `paired per-task deltas (same task, same rep), effect = mean of task deltas`,
    ...methodsUsed(result).map(esc),
    `power ${esc(pct(s.power))} for the minimum detectable effect`,
    `validity floor ${esc(pct(s.validity_floor))} accepted per arm`,
    `refused when infra-error rates differ by more than ${esc(ppWidth(s.infra_error_threshold))} or the arms differ in model, provider, isolation, egress or resources`,
    `weighted cost = ${s.weights.input} x input + ${s.weights.cache_write} x cache write + ${s.weights.cache_read} x cache read + ${s.weights.output} x output`,
    ...envelopeFormulas(result).map((f) => `noise envelope: <code>${esc(f)}</code>`),
    ...(s.factorial ? [`factorial over ${s.factorial.factors.map(esc).join(', ')}: main effects and interaction`] : []),
    ...(s.overhead ? [`overhead stream: ${esc(s.overhead.source)}`] : []),
  ];
  const facts: Array<[string, string]> = [
    ['cohort', esc(ctx.cohort)],
    ['config digest', `<code>${esc(ctx.config_digest)}</code>`],
    ['freeze digest', `<code>${esc(ctx.freeze_digest)}</code>`],
    ['tasks', `${ctx.tasks.length}<ul>${taskItems.join('')}</ul>`],
    ['arms', `<ul>${armItems.join('')}</ul>`],
    ['repetitions', `${ctx.reps} per task per arm`],
    ['limits', esc(limits)],
    ['agent', `${esc(ctx.agent.adapter)} ${esc(ctx.agent.version)}, model ${esc(ctx.agent.model)}`],
    [
      'sandbox',
      `${esc(ctx.sandbox.backend)}${ctx.sandbox.isolation ? `, isolation ${esc(ctx.sandbox.isolation)}` : ''}, egress ${esc(ctx.sandbox.egress_mode)} (${egressEnforced(result, ctx) ? 'enforced' : 'NOT enforced'}), image ${ctx.sandbox.image_id ? `<code>${esc(ctx.sandbox.image_id)}</code>` : 'none'}`,
    ],
    ['verifier', esc(ctx.verifier_kind)],
    ...(ctx.verifier_environment ? ([['verifier environment', esc(ctx.verifier_environment.text)]] as [string, string][]) : []),
    ['analysis', `<ul>${analysis.map((a) => `<li>${a}</li>`).join('')}</ul>`],
    ['exported', esc(ctx.times.exported_at)],
    ['first attempt', esc(ctx.times.first_attempt_at ?? NONE)],
    ['last attempt', esc(ctx.times.last_attempt_at ?? NONE)],
  ];
  return [
    '<section id="methods" class="methods-panel">',
    '<h2>Methods</h2>',
    '<p class="sub">The frozen protocol this report was produced under.</p>',
    `<dl class="facts">${facts.map(([k, v]) => `<dt>${esc(k)}</dt><dd>${v}</dd>`).join('')}</dl>`,
    ...result.notes.filter((n) => !envelopeFormulas(result).some((f) => n.includes(f))).map((n) => `<p class="sub">${esc(n)}</p>`),
    '</section>',
  ].join('\n');
}

// ---------------------------------------------------------------- helpers

function clamp(v: number, lo: number, hi: number): number {
  return Math.min(hi, Math.max(lo, v));
}

function round(v: number): number {
  return Math.round(v * 10) / 10;
}

function truncate(s: string, n: number): string {
  const chars = [...s];
  return chars.length <= n ? s : `${chars.slice(0, n - 1).join('')}…`;
}

/** The cohort's preregistration history: earlier versions, what each observed, what this one reused. */
function historySection(h: ReportHistory): string {
  const items = h.earlier.map((v) => {
    const obs = v.observations.length
      ? v.observations.map((o) => `<li>observed ${esc(o.at)} by <code>${esc(o.by)}</code>: ${esc(o.words)}</li>`).join('')
      : '<li>observed nothing</li>';
    const changes = v.changes_to_next.length
      ? `<li>changed since: ${v.changes_to_next.slice(0, 8).map(esc).join('; ')}${v.changes_to_next.length > 8 ? `; and ${v.changes_to_next.length - 8} more` : ''}</li>`
      : '';
    return `<li><strong>version ${v.version}</strong> (freeze <code>${esc(v.freeze_digest.slice(0, 12))}</code>, frozen ${esc(v.frozen_at)}, ${v.bound_at ? `bound ${esc(v.bound_at)}` : 'never bound'})<ul>${obs}${changes}</ul></li>`;
  });
  const reused = Object.entries(h.reused);
  return [
    '<section id="history">',
    '<h2>Preregistration history</h2>',
    h.registry_problem ? `<p class="warn"><strong>The registry could not be read when this bundle was built: ${esc(h.registry_problem)}</strong></p>` : '',
    h.first_registration_in_store
      ? `<p>Version ${h.version} is the first registration of this cohort in the store that built this bundle (another store may hold earlier ones).</p>`
      : '',
    items.length ? `<ul>${items.join('')}</ul>` : '',
    reused.length ? `<p>Version ${h.version} reused ${esc(reused.map(([v, n]) => `${n} attempt(s) version ${v} executed`).join(', '))}.</p>` : '',
    ...h.resets.map((r) => `<p class="warn">${esc(r)}</p>`),
    ...h.redraws.map((r) => `<p class="warn redraw">⚠ ${esc(r)} (the analysis reads each attempt's first draw when it can be restored)</p>`),
    ...h.prior_analyses.map((p) => `<p class="warn prior-analysis">⚠ ${esc(p)}</p>`),
    ...h.peeks.map((p) => `<p class="warn peek">⚠ outcome looked at outside a run: ${esc(p)}</p>`),
    '</section>',
  ].join('');
}
