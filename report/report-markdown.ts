/**
 * The Markdown report, written for a CI job summary: verdicts first, then the
 * (a)/(b)/(c) counts in full, the arms, the two cost streams on separate lines,
 * infrastructure errors, exclusions, and the scope of the claim.
 */
import type { AnalysisResult, ArmMetrics, Comparison, ConfigField, FactorialResult, JudgeSummary, SequentialResult } from '../stats/types.js';
import type { ReportContext, ReportHistory } from './report-context.js';
import { PRIVATE_NOTICE } from './public-bundle.js';
import { infraCauses } from '../stats/arm-metrics.js';
import {
  recordStatus,
  armText,
  timesText,
  INTEGRITY_INTRO,
  lostTasksText,
  mdeText,
  testText,
  methodsUsed,
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
  escapeMarkdown as md,
  interval,
  intervalMethod,
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

export function renderMarkdown(result: AnalysisResult, ctx: ReportContext): string {
  const out: string[] = [];
  const line = (s = ''): void => void out.push(s);

  line(`# pairbench: ${md(ctx.cohort)}`);
  line();
  if (ctx.fixture_note) {
    line(`> **Note:** ${md(ctx.fixture_note)}`);
    line();
  }
  for (const w of result.warnings) line(`> ⚠ **Warning:** ${md(w.message)}`);
  if (result.warnings.length) line();
  const egress = egressEnforced(result, ctx)
    ? `egress ${md(ctx.sandbox.egress_mode)} (enforced)`
    : `⚠ egress ${md(ctx.sandbox.egress_mode)} (**NOT enforced**)`;
  const recorded = (field: ConfigField, claimed: string): string => {
    const values = recordedOtherwise(result, field, claimed);
    return values.length === 0 ? '' : ` (**recorded: ${values.map(md).join(', ')}**)`;
  };
  line(
    `Agent ${md(ctx.agent.adapter)} ${md(ctx.agent.version)}${recorded('adapter', ctx.agent.adapter)}${recorded('adapter_version', ctx.agent.version)}` +
      ` · model ${md(ctx.agent.model)}${recorded('model', ctx.agent.model)}${scriptedText(result) ? ` (⚠ **${md(scriptedText(result)!)}**)` : ''} · sandbox ${md(ctx.sandbox.backend)}${recorded('sandbox_backend', ctx.sandbox.backend)}` +
      ` · image ${ctx.sandbox.image_id ? code(ctx.sandbox.image_id) : 'none'}${recorded('image_id', ctx.sandbox.image_id ?? 'none')}` +
      ` · ${egress} · ${isolationText(result, ctx).isolated ? `isolation ${md(isolationText(result, ctx).text)}` : `⚠ **${md(isolationText(result, ctx).text)}**`} · ${ctx.tasks.length} tasks x ${ctx.reps} reps`,
  );
  line();
  if (ctx.verifier_environment) {
    line(
      ctx.verifier_environment.pinned ? `Verifier: ${md(ctx.verifier_environment.text)}` : `⚠ **Verifier environment ${md(ctx.verifier_environment.text)}**`,
    );
    line();
  }
  if (ctx.history) {
    const r = recordStatus(ctx.history);
    line(r.warn ? `⚠ **Record: ${md(r.text)}**` : `Record: ${md(r.text)}`);
    line();
  }
  line(`${timesText(ctx.times)} · config ${code(ctx.config_digest)} · freeze ${code(ctx.freeze_digest)}`);
  line();
  // Which form of the bundle this is: the public form replaces this line (public-bundle.ts).
  line(PRIVATE_NOTICE);
  line();

  const glance = atAGlance(result);
  if (glance.length > 1) {
    line('## At a glance');
    line();
    line('| comparison | verdict | effect | interval |');
    line('|---|---|---:|---:|');
    for (const g of glance)
      line(
        `| ${md(g.label)} | **${g.verdict}** | ${g.effect === null ? NONE : pp(g.effect)} | ${g.interval ? `[${pp(g.interval.low)}, ${pp(g.interval.high)}]` : NONE} |`,
      );
    line();
  }

  line('## Verdicts');
  line();
  if (result.comparisons.length === 0) {
    line('No comparison was analysed.');
    line();
  }
  for (const c of result.comparisons) comparison(c, result, line);

  if (result.sequential) sequentialSection(result.sequential, line);
  if (result.factorial) factorial(result.factorial, result.arms, line);
  const grid = crossedGrid(result);
  if (grid) crossedSection(grid, line);
  if (result.judge) judgeSection(result.judge, line);

  if (ctx.history) historySection(ctx.history, line);

  line('## Arms');
  line();
  if (anyWithoutDelta(result)) {
    line(descriptiveArmsText('above'));
    line();
  }
  line(
    '| arm | treatment | attempts | accepted | excluded | infra-error rate | completion | tokens median (min–max) | weighted cost median (min–max) | agent time median (min–max) | harness time median | turns median (min–max) | delivered / used | integrity |',
  );
  line('|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|');
  for (const a of result.arms) {
    line(
      `| ${md(a.arm)} | ${md(armText(ctx, a.arm))} | ${a.n_attempts} | ${a.n_accepted} | ${a.n_excluded} | ${pct(a.infra_error_rate)} | ` +
        `${pct(a.completion_rate)} (${a.n_passed}/${a.n_scored}) | ${spread(a.tokens)} | ${spread(a.weighted_cost, (x) => num(x, 0))} | ${spread(a.wall_ms, seconds)} | ${a.harness_ms?.median == null ? NONE : seconds(a.harness_ms.median)} | ` +
        `${spread(a.turns)} | ${mechanismText(a)} | ${integritySummary(a)} |`,
    );
  }
  line();

  line('Secondary metrics (accepted attempts):');
  line();
  line('| arm | quality per dollar | quality per million weighted tokens | completions per million tokens | pass@k |');
  line('|---|---:|---:|---:|---|');
  for (const a of result.arms) {
    line(
      `| ${md(a.arm)} | ${num(a.quality_per_dollar, 2)} | ${num(a.quality_per_million_weighted, 2)} | ${num(a.completions_per_million_tokens, 2)} | ${passAtKText(a)} |`,
    );
  }
  line();

  line('## Cost');
  line();
  line('Eval cost per arm (every attempt, accepted or excluded):');
  line();
  line('| arm | cost (USD) | confidence | attempts without a cost | tokens | weighted cost |');
  line('|---|---:|---|---:|---:|---:|');
  for (const e of result.cost_streams.eval) {
    line(`| ${md(e.arm)} | ${usd(e.cost_usd)} | ${e.cost_confidence ?? NONE} | ${e.n_missing_cost} | ${e.tokens} | ${num(e.weighted_cost, 1)} |`);
  }
  line();
  line(overheadLine(result));
  line();

  line('## Infrastructure errors');
  line();
  for (const a of result.arms) {
    line(`- ${md(a.arm)}: ${pct(a.infra_error_rate)} (${a.n_infra_errors} of ${a.n_tries} tries, ${a.n_attempts} attempts)`);
    // What failed, in the part's own words (a provider's status and what it said), most frequent first.
    for (const [cause, n] of infraCauses(a)) line(`  - ${n} x ${code(cause)}`);
  }
  line();

  line('## When each arm ran');
  line();
  for (const a of result.arms) line(`- ${md(a.arm)}: ${a.window.started_at ?? NONE} to ${a.window.ended_at ?? NONE}`);
  line();

  line('## Exclusions');
  line();
  line(`Excluded attempts: ${totalExcluded(result)} (${EXCLUDED_MEANING}).`);
  for (const a of result.arms) line(`- ${md(a.arm)}: ${a.n_excluded}${exclusionReasons(a)}`);
  line();

  line('## Integrity');
  line();
  line(INTEGRITY_INTRO);
  for (const a of result.arms) line(`- ${md(a.arm)}: ${integrityCounts(a)}`);
  line();

  line('## Method');
  line();
  const formulas = envelopeFormulas(result);
  for (const f of formulas) line(`- Noise envelope: ${code(f)}`);
  line(
    `- Cost weights: input ${result.spec.weights.input}, cache write ${result.spec.weights.cache_write}, cache read ${result.spec.weights.cache_read}, output ${result.spec.weights.output}`,
  );
  for (const m of methodsUsed(result)) line(`- ${md(m)}`);
  if (ctx.verifier_environment) line(`- Verifier environment: ${md(ctx.verifier_environment.text)}`);
  line(`- Validity floor ${pct(result.spec.validity_floor)}; infra-error threshold ${ppWidth(result.spec.infra_error_threshold)}`);
  // The analyzer's method notes (the envelope formula, already printed above, is not repeated).
  for (const n of result.notes) if (!formulas.some((f) => n.includes(f))) line(`- ${md(n)}`);
  line();

  const scope = scopeStatement(result, ctx);
  line(`**What these numbers are:** ${md(scope.are)}`);
  line();
  line(`**What they are not:** ${md(scope.areNot)}`);
  line();
  return out.join('\n');
}

function comparison(c: Comparison, result: AnalysisResult, line: (s?: string) => void): void {
  line(`### ${md(comparisonTitle(c))}: **${verdictWord(c.verdict)}**`);
  line();
  line(`${comparisonMeaning(c)}.`);
  line();
  if (c.delta === null) line(`- delta: null`);
  else line(`- effect (${EFFECT_MEANING}): **${pp(c.delta)}**${c.directional ? ' (directional: smaller than the minimum detectable effect)' : ''}`);
  line(`- CI: ${c.ci ? `${interval(c.ci)} (${intervalMethod(c.ci)})` : NONE}`);
  line(
    `- noise envelope: ${c.envelope ? `${ppWidth(c.envelope.value)} (floor ${ppWidth(c.envelope.floor)}, spread term ${ppWidth(c.envelope.spread_term)})` : NONE}`,
  );
  if (c.test) line(`- ${testText(c.test)}`);
  if (c.mde) line(`- minimum detectable effect for this n: ${mdeText(c.mde)}`);
  if (c.mcnemar)
    line(
      `- McNemar exact: b=${c.mcnemar.b} (control fail, treatment pass), c=${c.mcnemar.c} (control pass, treatment fail), p=${pValue(c.mcnemar.p)}, Holm p=${pValue(c.mcnemar.p_holm)}`,
    );
  for (const t of relativeMetricsText(c)) line(`- ${md(t)}`);
  line(`- pairs: ${pairsText(c)} over ${counted(c.n_tasks, 'task')} in ${counted(c.n_families, 'family', 'families')}`);
  for (const p of c.problems) line(`- reason: ${md(problemText(p))}`);
  for (const t of [lostTasksText(c), worstCaseText(c)]) if (t) line(`- ${md(t)}`);
  const mechanism = comparisonMechanismText(c);
  if (mechanism) line(`- mechanism: ${md(mechanism)}`);
  const caveat = integrityCaveat(result, c);
  if (caveat) line(`- ⚠ ${md(caveat)}`);
  line();

  // All three counts are always printed; "—" (not 0) when the comparison has no outcome table.
  const counts = c.outcomes?.counts;
  const n = (k: 'a' | 'b' | 'c' | 'no_answer'): string => (counts ? String(counts[k]) : NONE);
  line(
    `Per-task outcomes: (a) helped: ${n('a')} · (b) no difference: ${n('b')} · (c) hurt: ${n('c')} · no answer: ${n('no_answer')}` +
      `${c.outcomes ? '' : ` (not computed: ${c.verdict})`}`,
  );
  line();
  if (c.outcomes && c.outcomes.tasks.length > 0) {
    line('| task | family | outcome | control pass | treatment pass | delta | cost ratio | label |');
    line('|---|---|---|---:|---:|---:|---:|---|');
    for (const t of c.outcomes.tasks) {
      line(
        `| ${md(t.task)} | ${md(t.family)} | ${outcomeName(t.class)} | ${pct(t.control_pass_rate)} | ${pct(t.treatment_pass_rate)} | ${pp(t.delta)} | ${ratio(t.cost_ratio)} | ${md(t.label)} |`,
      );
    }
    line();
    const categories = outcomesByCategory(c);
    if (categories.length > 1) {
      line('By category:');
      line();
      line('| category | tasks | (a) helped | (b) no difference | (c) hurt | no answer |');
      line('|---|---:|---:|---:|---:|---:|');
      for (const k of categories) line(`| ${md(k.category)} | ${k.tasks} | ${k.a} | ${k.b} | ${k.c} | ${k.no_answer} |`);
      line();
    }
  }
}

function sequentialSection(seq: SequentialResult, line: (s?: string) => void): void {
  const t = sequentialTable(seq);
  line('## Sequential stopping (preregistered)');
  line();
  line(md(t.summary));
  line();
  line(`| ${t.header.join(' | ')} |`);
  line(`|${t.header.map((_, i) => (i === 0 || i === t.header.length - 1 ? '---' : '---:')).join('|')}|`);
  for (const r of t.rows) line(`| ${r.map(md).join(' | ')} |`);
  line();
  for (const n of seq.notes) line(`- ${md(n)}`);
  if (seq.notes.length) line();
}

function judgeSection(j: JudgeSummary, line: (s?: string) => void): void {
  line(`## Judge and verifier: ${md(j.treatment)} vs ${md(j.control)}`);
  line();
  line(
    `Judge ${md(j.step)} (model ${md(j.model ?? NONE)}${j.model_source === 'scripted' ? ', ⚠ **scripted**' : ''}, rubric ${code(j.rubric_digest ?? NONE)}), blind to the verifier. ` +
      agreementText(j),
  );
  line();
  const v = j.counts.verifier;
  line(`- judge: ${judgeCountsText(j)}`);
  line(`- verifier: ${v ? `(a) ${v.a} · (b) ${v.b} · (c) ${v.c} · no answer ${v.no_answer}` : NONE}`);
  line();
  line("| task | category | judge | verifier | agree | judge's reason |");
  line('|---|---|---|---|---|---|');
  for (const r of j.rows) {
    const agree = r.judge === null || r.verifier === null || r.verifier === 'no-answer' ? NONE : r.judge === r.verifier ? 'yes' : '**no**';
    line(
      `| ${md(r.task)} | ${md(r.category)} | ${judgeClassText(r.judge)} | ${judgeClassText(r.verifier)} | ${agree} | ${md(r.reason.split('\n')[0] ?? '')} |`,
    );
  }
  line();
}

function crossedSection(g: CrossedGrid, line: (s?: string) => void): void {
  line(`## By ${md(g.by)}`);
  line();
  line(`Pass rate per arm at each ${md(g.by)}, and each treatment's effect there (paired by task, within the ${md(g.by)}):`);
  line();
  line(`| ${md(g.by)} | ${g.arms.map(md).join(' | ')} | ${g.treatments.map((t) => `effect of ${md(t)}`).join(' | ')} |`);
  line(`|---|${g.arms.map(() => '---:').join('|')}|${g.treatments.map(() => '---').join('|')}|`);
  for (const r of g.rows)
    line(
      `| ${md(r.level)} | ${r.rates.map(pct).join(' | ')} | ${r.effects.map((e) => `**${e.verdict}** ${e.effect === null ? NONE : pp(e.effect)} ${e.interval}`).join(' | ')} |`,
    );
  line();
  for (const l of g.lines) line(`- ${md(l.label)}: ${l.verdict ? `**${l.verdict}** ` : ''}${md(l.text)}`);
  line();
}

function factorial(f: FactorialResult, arms: readonly ArmMetrics[], line: (s?: string) => void): void {
  line(`## Factorial (${f.factors.map(md).join(' x ')})${f.status === 'ok' ? '' : `: ${f.status}`}`);
  line();
  for (const p of f.problems) line(`- reason: ${md(problemText(p))}`);
  for (const e of [...f.main_effects, ...(f.interaction ? [f.interaction] : [])]) {
    line(
      `- ${md(e.name)}: **${verdictWord(e.verdict)}** ${pp(e.estimate)} ${interval(e.ci)} over ${e.n_tasks} tasks${e.test ? `, ${testText(e.test)}` : ''} (${code(e.formula)})`,
    );
  }
  line();
  // The HTML report draws these four pass rates as the interaction plot.
  const cells = factorialCells(f, arms);
  if (cells) {
    line(`Pass rate per cell (every accepted attempt of its arm; parallel rows: the levers add up):`);
    line();
    line(`| | ${md(cells.b)} off | ${md(cells.b)} on |`);
    line('|---|---:|---:|');
    for (const la of [0, 1] as const) {
      const cell = (lb: 0 | 1) => {
        const c = cells.at(la, lb);
        return c ? `${pct(c.rate)} (${md(c.arm)})` : NONE;
      };
      line(`| ${md(cells.a)} ${la === 0 ? 'off' : 'on'} | ${cell(0)} | ${cell(1)} |`);
    }
    line();
  }
}

export function overheadLine(result: AnalysisResult): string {
  const o = result.cost_streams.overhead;
  if (!o) return 'Overhead (separate stream, never added to eval cost): none recorded.';
  return (
    `Overhead (separate stream, never added to eval cost): ${o.usd === null && o.model_source === 'scripted' ? 'unpriced (its model was scripted)' : usd(o.usd)}${o.confidence && o.usd !== null ? ` (${md(o.confidence)})` : ''}` +
    `${o.tokens !== null ? `, ${o.tokens} tokens` : ''} — ${md(o.source)}`
  );
}

function exclusionReasons(a: ArmMetrics): string {
  const entries = Object.entries(a.exclusions).sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0));
  return entries.length === 0 ? '' : ` (${entries.map(([k, v]) => `${md(k)}: ${v}`).join(', ')})`;
}

/** Inline code that survives any content: the fence is longer than any backtick run inside. */
function code(s: string): string {
  const clean = s.replace(/\r\n|\r|\n/g, ' ');
  const longest = Math.max(0, ...(clean.match(/`+/g) ?? []).map((r) => r.length));
  const fence = '`'.repeat(longest + 1);
  const pad = clean.startsWith('`') || clean.endsWith('`') ? ' ' : '';
  return `${fence}${pad}${clean}${pad}${fence}`;
}

/** The cohort's preregistration history: earlier versions, what each observed, what this one reused. */
function historySection(h: ReportHistory, line: (s?: string) => void): void {
  line('## Preregistration history');
  line();
  if (h.registry_problem) {
    line(`⚠ **The registry could not be read when this bundle was built: ${md(h.registry_problem)}**`);
    line();
  }
  if (h.first_registration_in_store)
    line(`Version ${h.version} is the first registration of this cohort in the store that built this bundle (another store may hold earlier ones).`);
  for (const v of h.earlier) {
    line(
      `- **version ${v.version}** (freeze ${code(v.freeze_digest.slice(0, 12))}, frozen ${md(v.frozen_at)}, ${v.bound_at ? `bound ${md(v.bound_at)}` : 'never bound'})`,
    );
    if (!v.observations.length) line('  - observed nothing');
    for (const o of v.observations) line(`  - observed ${md(o.at)} by ${code(o.by)}: ${md(o.words)}`);
    if (v.changes_to_next.length) {
      const shown = v.changes_to_next.slice(0, 8);
      line(
        `  - changed since: ${shown.map(md).join('; ')}${v.changes_to_next.length > shown.length ? `; and ${v.changes_to_next.length - shown.length} more` : ''}`,
      );
    }
  }
  const reused = Object.entries(h.reused);
  if (reused.length) line(`- version ${h.version} reused ${reused.map(([v, n]) => `${n} attempt(s) version ${v} executed`).join(', ')}`);
  for (const r of h.resets) line(`- ⚠ ${md(r)}`);
  for (const r of h.redraws) line(`- ⚠ ${md(r)} (the analysis reads each attempt's first draw when it can be restored)`);
  for (const p of h.prior_analyses) line(`- ⚠ ${md(p)}`);
  for (const p of h.peeks) line(`- ⚠ outcome looked at outside a run: ${md(p)}`);
  line();
}
