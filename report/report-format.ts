/**
 * Number formatting and escaping shared by the report renderers. Every figure is
 * formatted without the locale (toFixed, never toLocaleString) so a report's bytes
 * do not depend on the machine that rendered it.
 */
import type {
  AnalysisResult,
  ArmMetrics,
  Comparison,
  ComparisonProblem,
  ConfigField,
  FactorialResult,
  Interval,
  JudgeSummary,
  MinimumDetectableEffect,
  OutcomeClass,
  PairedDifference,
  RandomizationTest,
  SequentialResult,
  Spread,
  Verdict,
} from '../stats/types.js';
import { ENVELOPE_FORMULA } from '../stats/envelope.js';
import { unreachable } from '../pipeline/result.js';
import type { ReportContext, ReportHistory } from './report-context.js';

export const NONE = '—';

/** The report's time stamps, each named for what it is. */
export function timesText(t: ReportContext['times']): string {
  const span =
    t.first_attempt_at && t.last_attempt_at
      ? `attempts from ${t.first_attempt_at} to ${t.last_attempt_at}`
      : t.first_attempt_at
        ? `first attempt ${t.first_attempt_at}`
        : 'no attempt ran';
  return `Exported ${t.exported_at} · ${span}`;
}

/** An arm's treatment in words, with its role when it is the control. */
export function armText(ctx: Pick<ReportContext, 'arms'>, arm: string): string {
  const a = ctx.arms[arm];
  if (!a) return NONE;
  return a.role === 'control' ? `${a.treatment} (control)` : a.treatment;
}

/** A rate in [0, 1] as a percentage: 0.25 -> "25.0%". */
export function pct(x: number | null | undefined): string {
  if (x === null || x === undefined) return NONE;
  return `${fixed(x * 100, 1)}%`;
}

/** A difference of rates in percentage points, signed: 0.2 -> "+20.0 pp", 0 -> "0.0 pp". */
export function pp(x: number | null | undefined): string {
  if (x === null || x === undefined) return 'null';
  const s = fixed(x * 100, 1);
  return `${s === '0.0' ? '' : x > 0 ? '+' : ''}${s} pp`;
}

/** An unsigned width in percentage points: 0.2 -> "±20.0 pp". */
export function ppWidth(x: number | null | undefined): string {
  if (x === null || x === undefined) return NONE;
  return `±${fixed(Math.abs(x) * 100, 1)} pp`;
}

export function interval(ci: Interval | null | undefined): string {
  if (!ci) return NONE;
  return `[${pp(ci.low)}, ${pp(ci.high)}]`;
}

export function intervalMethod(ci: Interval): string {
  if (ci.method === 'cluster-t') return `${fixed(ci.confidence * 100, 0)}% CI, cluster t over ${ci.units} units, ${ci.df} df`;
  if (ci.method === 'repeated-ci') return `${fixed(ci.confidence * 100, 0)}% repeated CI at the stopping look (group-sequential; not the fixed-N interval)`;
  if (ci.method === 'betting-cs') return `${fixed(ci.confidence * 100, 0)}% anytime-valid confidence sequence (betting)`;
  return `${fixed(ci.confidence * 100, 0)}% CI, ${ci.method}, ${ci.resamples} resamples, seed ${ci.seed}`;
}

/**
 * The interval and test methods the figures actually used, each once with the comparisons that
 * used it: the Methods section names what the verdicts rest on, never a configured default
 * that no figure used (a cluster t interval is not "by hierarchical bootstrap").
 */
export function methodsUsed(result: { comparisons: readonly Comparison[] }): string[] {
  const uses = new Map<string, string[]>();
  const add = (what: string, who: string) => uses.set(what, [...(uses.get(what) ?? []), who]);
  for (const c of result.comparisons) {
    const who = comparisonTitle(c);
    if (c.ci) add(`interval: ${intervalMethod(c.ci)}`, who);
    if (c.test) {
      const units = c.test.unit === 'family' ? 'families' : 'tasks';
      add(`test: ${c.test.method} over ${units}, ${c.test.exact ? 'exact' : 'seeded samples'}, Holm-adjusted over the cohort`, who);
    }
    if (c.mcnemar) add('also reported: McNemar exact test on paired attempts (Holm-adjusted)', who);
  }
  return [...uses].map(([what, who]) => `${what} (${who.join('; ')})`);
}

/** "sign-flip test over 8 tasks: p=0.0078 (Holm p=0.0078), exact", the test the verdict rests on. */
export function testText(t: RandomizationTest): string {
  const units = t.unit === 'family' ? counted(t.n_units, 'family', 'families') : counted(t.n_units, 'task');
  return `${t.method} test over ${units}: p=${pValue(t.p)}, Holm p=${pValue(t.p_holm)} (alpha ${t.alpha}; ${t.exact ? 'exact' : `${t.samples} seeded samples`}; a claim needs at least ${t.units_needed})`;
}

/** The minimum detectable effect, or why it is not computable. */
export function mdeText(m: MinimumDetectableEffect): string {
  return m.value === null ? (m.not_computable ?? 'not computable at this n') : `${ppWidth(m.value)} (${m.n_tasks} tasks, power ${pct(m.power)})`;
}

/** Tasks that lost every pair, named (they are in no estimate). */
export function lostTasksText(c: Comparison): string | null {
  return c.lost_tasks.length ? `tasks with no valid pair (in no estimate): ${c.lost_tasks.join(', ')}` : null;
}

/** Whether the claim survives the excluded pairs imputed against it. */
export function worstCaseText(c: Comparison): string | null {
  const w = c.worst_case;
  if (!w) return null;
  return `with every excluded pair scored against the claim: ${pp(w.effect)} ${interval(w.ci)}, p=${pValue(w.p)}: the claim ${w.survives ? 'survives' : 'does NOT survive'}`;
}

export function usd(x: number | null | undefined): string {
  if (x === null || x === undefined) return NONE;
  return `$${fixed(x, 4)}`;
}

export function ratio(x: number | null | undefined): string {
  if (x === null || x === undefined) return NONE;
  return `${fixed(x, 2)}x`;
}

/** A count or measure with at most `digits` decimals and no trailing zeros: 1200 -> "1200", 0.125 -> "0.125". */
export function num(x: number | null | undefined, digits = 3): string {
  if (x === null || x === undefined) return NONE;
  if (Number.isInteger(x)) return String(x);
  const s = fixed(x, digits);
  return s.includes('.') ? s.replace(/0+$/, '').replace(/\.$/, '') : s;
}

export function pValue(p: number | null | undefined): string {
  if (p === null || p === undefined) return NONE;
  return p < 0.0001 ? '< 0.0001' : fixed(p, 4);
}

/** "median (min–max)" of a spread, or "—" when no attempt had the figure. */
export function spread(s: Spread, f: (x: number | null) => string = (x) => num(x)): string {
  if (s.n === 0 || s.median === null) return NONE;
  return `${f(s.median)} (${f(s.min)}–${f(s.max)})`;
}

export function seconds(ms: number | null): string {
  return ms === null ? NONE : `${num(ms / 1000, 1)}s`;
}

/** toFixed without "-0.0". */
function fixed(x: number, digits: number): string {
  const s = x.toFixed(digits);
  return /^-0(\.0*)?$/.test(s) ? s.slice(1) : s;
}

export function verdictWord(v: Verdict): string {
  switch (v) {
    case 'positive':
      return 'POSITIVE';
    case 'negative':
      return 'NEGATIVE';
    case 'within-noise':
      return 'WITHIN NOISE';
    case 'insufficient-n':
      return 'INSUFFICIENT N';
    case 'unisolated':
      return 'UNISOLATED';
    case 'refused':
      return 'REFUSED';
    case 'invalid':
      return 'INVALID';
    default:
      return unreachable(v);
  }
}

/** The verdict's meaning for this comparison: within noise names the effect it could have detected. */
export function comparisonMeaning(c: Comparison): string {
  const sequential = c.ci?.method === 'repeated-ci' || c.ci?.method === 'betting-cs';
  if (sequential && (c.verdict === 'positive' || c.verdict === 'negative')) {
    return `the treatment ${c.verdict === 'positive' ? 'raised' : 'lowered'} the pass rate: a preregistered look crossed its boundary (see Sequential stopping), its interval excludes 0, and the effect is beyond the noise envelope`;
  }
  if (sequential && c.verdict === 'within-noise')
    return `no preregistered look crossed its boundary in the direction of the effect: no effect is claimed either way`;
  if (c.verdict !== 'within-noise') return verdictMeaning(c.verdict);
  const mde = c.mde?.value;
  // The real reason no claim is made: the first condition the comparison did not meet.
  const why = c.problems.find((p) => p.reason === 'no-claim' || p.reason === 'exclusions-against-claim');
  return `${why ? `no claim: ${why.message}` : 'not distinguishable from 0 at this n'} (${mde !== null && mde !== undefined ? `MDE ${ppWidth(mde)}` : 'MDE not computable at this n'}); no effect is claimed either way`;
}

/** One sentence on what the verdict means, so a reader does not have to know the vocabulary. */
export function verdictMeaning(v: Verdict): string {
  switch (v) {
    case 'positive':
      return 'the treatment raised the pass rate: the adjusted test is significant, the interval excludes 0, and the effect is beyond the noise envelope';
    case 'negative':
      return 'the treatment lowered the pass rate: the adjusted test is significant, the interval excludes 0, and the effect is beyond the noise envelope';
    case 'within-noise':
      return 'not distinguishable from 0 at this n: no effect is claimed either way';
    case 'insufficient-n':
      return 'too few tasks (or families) for any test to reach significance: the figures are descriptive only';
    case 'unisolated':
      return 'the arms ran without isolation (local backend, or a shared network): the effect is shown, but no claim is made';
    case 'refused':
      return 'the arms are not comparable, so no delta is reported';
    case 'invalid':
      return 'too few attempts were accepted to report a delta';
    default:
      return unreachable(v);
  }
}

export function outcomeName(c: OutcomeClass): string {
  switch (c) {
    case 'a':
      return '(a) helped';
    case 'b':
      return '(b) no difference';
    case 'c':
      return '(c) hurt';
    case 'no-answer':
      return 'no answer';
    default:
      return unreachable(c);
  }
}

/** A problem in words; the analyzer's own message, prefixed with its reason code. */
export function problemText(p: ComparisonProblem): string {
  switch (p.reason) {
    case 'arm-missing':
    case 'config-mismatch':
    case 'mixed-config':
    case 'infra-error-rate':
    case 'below-validity-floor':
    case 'no-valid-pairs':
    case 'control-received-treatment':
    case 'unisolated':
    case 'insufficient-n':
    case 'exclusions-against-claim':
    case 'factorial-design':
    case 'sequential':
    case 'no-claim':
      return `${p.reason}: ${p.message}`;
    default:
      return unreachable(p);
  }
}

/**
 * The envelope formula as each comparison's envelope states it, or the analyzer's
 * formula when no comparison has an envelope (every one refused or invalid).
 */
export function envelopeFormulas(result: AnalysisResult): string[] {
  const seen = new Set<string>();
  for (const c of result.comparisons) if (c.envelope) seen.add(c.envelope.formula);
  return seen.size > 0 ? [...seen] : [ENVELOPE_FORMULA];
}

export function comparisonTitle(c: Comparison): string {
  return `${c.treatment} vs ${c.control}`;
}

export function totalExcluded(result: AnalysisResult): number {
  return result.arms.reduce((n, a) => n + a.n_excluded, 0);
}

/** The sentence that bounds every claim the report makes. */
export function scopeStatement(result: AnalysisResult, ctx: ReportContext): { are: string; areNot: string } {
  const nTasks = ctx.tasks.length;
  return {
    are:
      `These numbers are paired differences in hidden-verifier pass rate and in cost between arms, on ${nTasks} frozen ` +
      `task${nTasks === 1 ? '' : 's'} x ${ctx.reps} rep${ctx.reps === 1 ? '' : 's'}, with agent ${ctx.agent.adapter} ${ctx.agent.version}, ` +
      `model ${ctx.agent.model}, sandbox ${ctx.sandbox.backend} (egress ${egressEnforced(result, ctx) ? 'enforced' : 'NOT enforced'}); ` +
      `excluded attempts (${totalExcluded(result)}) are kept in the bundle and used in no estimate.`,
    areNot:
      'They are not a general productivity claim, not a win rate, and not evidence about other tasks, models, agents or ' +
      'settings; a delta inside the noise envelope is no effect; eval cost and overhead are separate streams and are never summed.' +
      (ctx.fixture_note ? ` ${sentence(ctx.fixture_note)}` : ''),
  };
}

/** A note as a sentence of its own: capital first letter, a full stop at the end. */
function sentence(note: string): string {
  const t = note.trim();
  return t.charAt(0).toUpperCase() + t.slice(1) + (/[.!?]$/.test(t) ? '' : '.');
}

/** "1 family", "3 families": a count with its noun in the right number. */
export function counted(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

// ---------------------------------------------------------------- escaping

/** Text for HTML element content and attribute values (quoted with either quote). */
/**
 * The isolation the attempts ran with, in words: "namespaces" or "container" when every
 * attempt had a sandbox and a network of its own; "UNISOLATED (...)" when any did not
 * (such a cohort makes no claim).
 */
/** "outcomes scripted (fake model)" when any attempt's replies were scripted; null otherwise. */
export function scriptedText(result: AnalysisResult): string | null {
  const n = result.arms.reduce((k, a) => k + (a.n_scripted ?? 0), 0);
  if (n === 0) return null;
  const total = result.arms.reduce((k, a) => k + a.n_attempts, 0);
  return n === total ? 'outcomes scripted (fake model)' : `outcomes scripted (fake model) in ${n} of ${total} attempts`;
}

export function isolationText(result: AnalysisResult, ctx: ReportContext): { isolated: boolean; text: string } {
  const levels = [...new Set(result.arms.flatMap((a) => a.config.isolation))].sort();
  const shared = result.arms.some((a) => a.config.egress_mode.includes('open'));
  const isolated = !levels.includes('none') && !shared && levels.length > 0;
  const what = levels.length ? levels.join(', ') : (ctx.sandbox.isolation ?? 'unknown');
  return { isolated, text: isolated ? what : `UNISOLATED (${what}${shared ? ', network shared with the host' : ''}): no claim is made` };
}

export const INTEGRITY_INTRO =
  'Accepted attempts failed for what they did, whatever the verifier said (a forged verdict, a write outside the allowed paths, leakage):';

/** "verdict-forged: 2, out-of-bounds: 1", or "none". */
export function integrityCounts(a: ArmMetrics): string {
  const entries = Object.entries(a.integrity_failures ?? {}).sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0));
  return entries.length === 0 ? 'none' : entries.map(([k, v]) => `${k}: ${v}`).join(', ');
}

/** "1 out of bounds, 2 leakage, 0 forged" for an arm's attempts, or "none". */
export function integritySummary(a: ArmMetrics): string {
  const i = a.integrity ?? { out_of_bounds: 0, leakage: 0, verdict_forged: 0 };
  return i.out_of_bounds + i.leakage + i.verdict_forged === 0 ? 'none' : `${i.out_of_bounds} out of bounds, ${i.leakage} leakage, ${i.verdict_forged} forged`;
}

/**
 * The caveat a comparison carries when either arm's attempts wrote out of bounds,
 * leaked, or forged a verdict (null when neither did): the verdict stands on scores
 * the audit policy set, and a reader should know what they hide.
 */
export function integrityCaveat(result: AnalysisResult, c: Comparison): string | null {
  const parts = [c.control, c.treatment].flatMap((arm) => {
    const a = result.arms.find((x) => x.arm === arm);
    return a && integritySummary(a) !== 'none' ? [`${arm}: ${integritySummary(a)}`] : [];
  });
  return parts.length ? `caveat: attempts did what the verifier cannot see (${parts.join('; ')}); see Integrity` : null;
}

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
}

/** A zero-width space: breaks what GitHub would turn into a mention, a reference or a link, and reads the same. */
const ZWSP = '\u200b';

/**
 * Text for Markdown, inert where GitHub renders it (a pull-request comment, a CI job summary,
 * which also render HTML): whatever a bundle, a config or an agent put in it renders as the same
 * text and nothing else. Inline markup characters are backslash-escaped (emphasis, code, links,
 * tables, math, headings); angle brackets and ampersands become entities (no HTML); line breaks
 * and runs of blanks become one space, and control and bidirectional characters go (a value
 * cannot break a table or a line, or start a block); a line-start list or quote marker is
 * escaped; and what GitHub links after rendering (@mentions, #123 references, bare URLs and
 * www. names, e-mail addresses) is broken by a zero-width space.
 */
export function escapeMarkdown(s: string): string {
  return (
    s
      // eslint-disable-next-line no-control-regex
      .replace(/[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]+/g, ' ')
      .replace(/\s+/g, ' ')
      .replace(/[\\`*[\]|~#$!]/g, (ch) => `\\${ch}`)
      // Intraword underscores (stub_function) are literal in GFM; others could start emphasis.
      .replace(/(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])/g, '\\_')
      .replace(/&/g, '&amp;')
      .replace(/</g, '&lt;')
      .replace(/>/g, '&gt;')
      // A list marker where the value starts a line (or a list item's content).
      .replace(/^([-+]|\d+[.)])(?=\s|$)/, (m) => `${m.slice(0, -1)}\\${m.slice(-1)}`)
      // What GitHub turns into links or pings after rendering: @user, #123, http(s)://, www., user@host.
      .replace(/@/g, `@${ZWSP}`)
      .replace(/#(?=\d)/g, `#${ZWSP}`)
      .replace(/:\/\//g, `:${ZWSP}//`)
      .replace(/\bwww\./gi, (m) => `${m.slice(0, 3)}${ZWSP}.`)
  );
}

/** Mechanism evidence of an arm: "delivered / used", with how many attempts had no evidence either way. */
export function mechanismText(a: ArmMetrics): string {
  const m = a.mechanism;
  const unknown = m.unknown_delivered > 0 || m.unknown_used > 0 ? ` (unknown ${m.unknown_delivered} / ${m.unknown_used})` : '';
  return `${m.delivered} / ${m.used}${unknown}`;
}

/**
 * Egress counts as enforced only when the context says so AND every arm's
 * recorded attempts say so: the status bar must never claim more than the data.
 */
export function egressEnforced(result: AnalysisResult, ctx: ReportContext): boolean {
  return ctx.sandbox.egress_enforced && result.arms.every((a) => a.config.egress_enforced.every((v) => v === 'true'));
}

/**
 * The values the attempts recorded for `field` (over every arm), when they are not
 * exactly the one the context claims; [] when the data agrees with the context.
 */
export function recordedOtherwise(result: AnalysisResult, field: ConfigField, claimed: string): string[] {
  const seen = new Set<string>();
  for (const a of result.arms) for (const v of a.config[field]) seen.add(v);
  const values = [...seen].sort();
  return values.length === 0 || (values.length === 1 && values[0] === claimed) ? [] : values;
}

/** True when some comparison has no delta (refused or invalid). */
export function anyWithoutDelta(result: AnalysisResult): boolean {
  return result.comparisons.some((c) => c.delta === null);
}

/** The three mechanism claims of a comparison, kept apart: "delivered 3, used 2, changed 1 of 4 valid pairs". */
export function comparisonMechanismText(c: Comparison): string | null {
  const m = c.mechanism;
  return m
    ? `delivered ${m.delivered}, used ${m.used}, outcome changed ${m.changed} of ${m.pairs} valid pairs (delivered and changed: ${m.delivered_and_changed})`
    : null;
}

/** (a)/(b)/(c) counts per task category, categories sorted by name. */
export function outcomesByCategory(c: Comparison): { category: string; a: number; b: number; c: number; no_answer: number; tasks: number }[] {
  const by = new Map<string, { category: string; a: number; b: number; c: number; no_answer: number; tasks: number }>();
  for (const t of c.outcomes?.tasks ?? []) {
    const row = by.get(t.category) ?? { category: t.category, a: 0, b: 0, c: 0, no_answer: 0, tasks: 0 };
    row.tasks++;
    if (t.class === 'no-answer') row.no_answer++;
    else row[t.class]++;
    by.set(t.category, row);
  }
  return [...by.values()].sort((x, y) => (x.category < y.category ? -1 : 1));
}

/** "(a)", "(b)", "(c)", or "unclassified" / "no answer". */
export function judgeClassText(x: 'a' | 'b' | 'c' | 'no-answer' | null): string {
  return x === null ? 'unclassified' : x === 'no-answer' ? 'no answer' : `(${x})`;
}

/** pass@k figures of an arm: "pass@1 50%, pass@2 75%". */
export function passAtKText(a: ArmMetrics): string {
  return a.pass_at_k.length ? a.pass_at_k.map((p) => `pass@${p.k} ${Math.round(p.pass_at_k * 1000) / 10}%`).join(', ') : '—';
}

const signed = (x: number, digits: number): string => `${x > 0 ? '+' : ''}${num(x, digits)}`;
const percentChange = (r: number): string => `${r - 1 > 0 ? '+' : ''}${fixed((r - 1) * 100, 1)}%`;

/**
 * The study's relative metrics of a comparison, each with its interval: cost change (the
 * weighted-cost ratio - 1), steps change (turns, tool calls: paired median), reasoning tokens.
 */
export function relativeMetricsText(c: Comparison): string[] {
  const out: string[] = [];
  if (c.cost_ratio !== null) {
    const ci = c.cost_ratio_ci;
    out.push(
      `cost change: ${percentChange(c.cost_ratio)} (treatment / control weighted cost ${ratio(c.cost_ratio)}${ci ? `; ${fixed(ci.confidence * 100, 0)}% CI ${percentChange(ci.low)} to ${percentChange(ci.high)}` : ''})`,
    );
  }
  const paired = (label: string, d: PairedDifference | undefined): void => {
    if (!d || d.median === null) return;
    out.push(
      `${label}: ${signed(d.median, 2)} per attempt (paired median over ${d.n_pairs} pairs${d.ci ? `; ${fixed(d.ci.confidence * 100, 0)}% CI ${signed(d.ci.low, 2)} to ${signed(d.ci.high, 2)}` : ''})`,
    );
  };
  paired('steps change, turns', c.paired?.turns);
  paired('steps change, tool calls', c.paired?.tool_calls);
  paired('reasoning tokens change', c.paired?.reasoning_tokens);
  return out;
}

/** The sequential section: a sentence on the design and the stop, then one row per look (header first). */
export function sequentialTable(seq: SequentialResult): { summary: string; header: string[]; rows: string[][] } {
  const d = seq.design!;
  const z = (x: number | null) => (x === null ? NONE : fixed(x, 3));
  const design =
    seq.rule === 'group-sequential'
      ? `Group-sequential: ${seq.looks.length} looks over ${seq.max_families} families, ${d.spending}-type alpha spending (one-sided ${d.alpha} each way), futility ${d.futility}; ` +
        `maximum ${fixed(d.inflation ?? 1, 3)}x the fixed-N design of the same power (${pct(d.power)})`
      : `Anytime-valid betting confidence sequence at ${pct(1 - d.alpha)} over ${seq.max_families} families, looked at after each`;
  const stop =
    seq.stopped_at !== null
      ? `stopped at look ${seq.stopped_at} of ${seq.looks.length} (${seq.decision})${seq.attempts_not_run ? `; ${seq.attempts_not_run} attempt(s) not run` : ''}`
      : seq.decision === 'continue'
        ? 'no boundary crossed yet; the cohort continues'
        : 'no look crossed a boundary: no claim';
  const rows = seq.looks.map((l) => [
    String(l.look),
    l.decision === 'stopped-earlier'
      ? `not taken (${l.planned_families} planned)`
      : `${l.families} of ${l.planned_families}${l.pending_families.length ? ` (${l.pending_families.length} pending)` : ''}`,
    z(l.statistic),
    l.upper === null ? NONE : `±${fixed(l.upper, 3)}`,
    z(l.lower),
    l.interval ? `[${pp(l.interval.low)}, ${pp(l.interval.high)}]` : NONE,
    l.decision,
  ]);
  return {
    summary: `${design}: ${stop}.`,
    header: [
      'look',
      'families',
      'Z',
      'efficacy boundary',
      'futility boundary',
      seq.rule === 'group-sequential' ? 'repeated CI' : 'confidence sequence',
      'decision',
    ],
    rows,
  };
}

/** One row of the report's summary: every comparison and factorial effect with its verdict, effect and interval. */
export interface GlanceRow {
  label: string;
  verdict: string;
  effect: number | null;
  interval: { low: number; high: number } | null;
}

/** Every claim the report could make, in one place at its top: comparisons, then factorial effects. */
export function atAGlance(result: AnalysisResult): GlanceRow[] {
  const rows: GlanceRow[] = result.comparisons.map((c) => ({
    label: comparisonTitle(c),
    verdict: verdictWord(c.verdict),
    effect: c.delta,
    interval: c.ci ? { low: c.ci.low, high: c.ci.high } : null,
  }));
  for (const d of result.crossed?.designs ?? []) {
    if (!d.interaction) continue;
    rows.push({
      label: `${d.treatment} x ${result.crossed!.by} (${d.level} vs ${d.base_level})`,
      verdict: verdictWord(d.interaction.verdict),
      effect: d.interaction.estimate,
      interval: d.interaction.ci ? { low: d.interaction.ci.low, high: d.interaction.ci.high } : null,
    });
  }
  const f = result.factorial;
  if (f && f.status === 'ok') {
    for (const e of [...f.main_effects, ...(f.interaction ? [f.interaction] : [])]) {
      rows.push({
        label: `${e.name} (factorial)`,
        verdict: verdictWord(e.verdict),
        effect: e.estimate,
        interval: e.ci ? { low: e.ci.low, high: e.ci.high } : null,
      });
    }
  }
  return rows;
}

/** A crossed cohort's grid: per level, each arm's pass rate and each treatment's effect there (with its interval). */
export interface CrossedGrid {
  by: string;
  arms: string[];
  treatments: string[];
  rows: Array<{ level: string; rates: (number | null)[]; effects: Array<{ verdict: string; effect: number | null; interval: string }> }>;
  /** Each design's interaction (tested) and the level's difference (descriptive), in words. */
  lines: Array<{ label: string; verdict: string | null; text: string }>;
}

export function crossedGrid(result: AnalysisResult): CrossedGrid | null {
  const x = result.crossed;
  if (!x) return null;
  const armNames = [...new Set(x.cells.map((c) => c.arm))];
  const cellOf = (arm: string, level: string) => x.cells.find((c) => c.arm === arm && c.level === level)?.cell;
  const treatments = [...new Set(x.designs.map((d) => d.treatment))];
  const control = x.designs[0]?.control ?? armNames[0] ?? '';
  const treatmentsAll = treatments.length ? treatments : armNames.filter((a) => a !== control);
  return {
    by: x.by,
    arms: armNames,
    treatments: treatmentsAll,
    rows: x.levels.map((level) => ({
      level,
      rates: armNames.map((arm) => result.arms.find((m) => m.arm === cellOf(arm, level))?.completion_rate ?? null),
      effects: treatmentsAll.map((t) => {
        const c = result.comparisons.find((k) => k.treatment === cellOf(t, level) && k.control === cellOf(control, level));
        return c ? { verdict: verdictWord(c.verdict), effect: c.delta, interval: interval(c.ci) } : { verdict: NONE, effect: null, interval: NONE };
      }),
    })),
    lines: x.designs.flatMap((d) => [
      {
        label: `${d.treatment} x ${x.by} (${d.level} vs ${d.base_level})`,
        verdict: d.interaction ? verdictWord(d.interaction.verdict) : d.status.toUpperCase(),
        text: d.interaction
          ? `${pp(d.interaction.estimate)} ${interval(d.interaction.ci)} over ${d.interaction.n_tasks} tasks${d.interaction.test ? `, ${testText(d.interaction.test)}` : ''}: how much more ${d.treatment} helps on ${d.level} than on ${d.base_level}`
          : d.problems.map(problemText).join('; ') || 'not computed',
      },
      {
        label: `${d.level} vs ${d.base_level}`,
        verdict: null,
        text: d.between
          ? `${pp(d.between.estimate)} ${interval(d.between.ci)} over ${d.between.n_tasks} tasks, averaged over ${d.control} and ${d.treatment}: descriptive, not tested (the ${x.by}s were not randomised within a task)`
          : 'not computed',
      },
    ]),
  };
}

/** A 2x2 factorial's cells: the arm at each pair of levels and its pass rate (every accepted attempt of the arm); null for other designs. */
export function factorialCells(
  f: FactorialResult,
  arms: readonly ArmMetrics[],
): { a: string; b: string; at: (la: 0 | 1, lb: 0 | 1) => { arm: string; rate: number | null } | undefined } | null {
  if (f.factors.length !== 2 || f.cells.length !== 4) return null;
  const [a, b] = f.factors as [string, string];
  return {
    a,
    b,
    at: (la, lb) => {
      const c = f.cells.find((x) => x.levels[a] === la && x.levels[b] === lb);
      return c ? { arm: c.arm, rate: arms.find((m) => m.arm === c.arm)?.completion_rate ?? null } : undefined;
    },
  };
}

// Sentences both reports print: built here once, escaped by each renderer as its format needs.

/** What a comparison's effect is. */
export const EFFECT_MEANING = 'mean of per-task paired deltas in pass rate';

/** What happens to an excluded attempt. */
export const EXCLUDED_MEANING = 'kept in the bundle, used in no estimate';

/** Why per-arm figures claim nothing when a comparison has no delta; `where` the comparisons are printed. */
export function descriptiveArmsText(where: 'above' | 'below'): string {
  return `Per-arm figures are descriptive. A comparison ${where} has no delta (refused or invalid), so no difference between these arms is claimed.`;
}

/** "6 valid of 8 (1 with an excluded side, 1 unmatched)". */
export function pairsText(c: Comparison): string {
  return `${c.pairs.valid} valid of ${c.pairs.total} (${c.pairs.excluded} with an excluded side, ${c.pairs.unmatched} unmatched)`;
}

/** The judge's agreement with the verifier, as a sentence. */
export function agreementText(j: JudgeSummary): string {
  return `Agreement: ${j.agreement.agree} of ${j.agreement.compared} tasks both classified${j.agreement.rate === null ? '' : ` (${pct(j.agreement.rate)})`}.`;
}

/** The judge's classes: "(a) 3 · (b) 4 · (c) 1 · unclassified 0". */
export function judgeCountsText(j: JudgeSummary): string {
  return `(a) ${j.counts.judge.a} · (b) ${j.counts.judge.b} · (c) ${j.counts.judge.c} · unclassified ${j.counts.judge.unclassified}`;
}

/** The cohort's record in a status line: which registration, and whether any draw was not the first or another cohort analysed these attempts first. */
export function recordStatus(h: ReportHistory): { text: string; warn: boolean } {
  const warnings = [
    h.redraws.length ? `${h.redraws.length} re-draw(s)` : '',
    h.prior_analyses.length ? `analysed first by ${h.prior_analyses.length} other cohort version(s)` : '',
    h.peeks.length ? `${h.peeks.length} peek(s) at outcomes before the analysis` : '',
    h.registry_problem ? 'registry broken' : '',
  ].filter(Boolean);
  const base = `version ${h.version}${h.first_registration_in_store ? ', first registration in this store' : `, ${h.earlier.length} earlier version(s)`}`;
  const anchor = h.anchor ?? 'not anchored outside the store (no committed lock: pairbench freeze writes one)';
  return { text: [base, ...(warnings.length ? warnings : ['first draws only']), anchor].join(' · '), warn: warnings.length > 0 };
}
