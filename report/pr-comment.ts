/**
 * The pull-request comment (`pairbench check`): a reviewer reads the first line and knows
 * whether the change may land and why. Bottom line first (which gate failed, on what), then per
 * cohort the comparison of head and base, each gate's result, the headline warnings (scripted
 * outcomes, unisolated arms), what the head ran and what it reused with its cost, the treatment
 * under review and any protocol change, the tasks that moved, what the gates can see at this size,
 * and the bundle. Every string a pull request, a config or an agent controls goes through inert():
 * it renders as the same text, with no mention, link, HTML, table cell or heading of its own.
 */
import type { GatePlan } from '../stats/gate-planner.js';
import type { CohortCheck, GateFailure } from '../stats/change-gate.js';
import { gateMeaning, isHeadVsBaseGate } from '../stats/verdicts.js';
import type { ComparisonDiff, FlippedTask, RunDiff } from '../stats/run-diff.js';
import type { AnalysisResult } from '../stats/types.js';
import { escapeMarkdown, pp, verdictWord } from './report-format.js';

/** The longest run of text one value may take in the comment (a 10,000-character task name is cut). */
const MAX_VALUE = 300;

/** Any value from a bundle, a config or an agent, as inert Markdown text. */
export function inert(s: string): string {
  const cut = s.length > MAX_VALUE ? `${s.slice(0, MAX_VALUE)}…` : s;
  return escapeMarkdown(cut);
}

export interface CheckedCohort {
  /** The export node (the bundle's directory under the artifact). */
  node: string;
  check: CohortCheck;
  diff: RunDiff | null;
  head: AnalysisResult;
  /** The planner at this cohort's size, with the base's own per-task rates (null when no gate needs sizing). */
  sizing: GatePlan | null;
}

export interface PrCheck {
  cohorts: CheckedCohort[];
  /** The treatment under review and the protocol changes (pairbench review); null on a push. */
  review: {
    treatment: Record<string, string[]>;
    protocol: Record<string, string[]>;
    refused: string[];
  } | null;
  labels: { base: string; head: string };
  /** Where the bundles are (the run's artifacts page), from the workflow. */
  link: string | null;
  passed: boolean;
}

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** What failed, worst first, for the bottom line. */
const ORDER: readonly GateFailure['on'][] = [
  'protocol',
  'no-base',
  'new-harm',
  'regression',
  'not-noninferior',
  'negative',
  'invalid',
  'refused',
  'unisolated',
];

function bottomLine(c: PrCheck): string {
  const shown = new Set(c.cohorts.map((x) => x.check.cohort));
  // A protocol change to a cohort the head did not run (one the pull request added, or a config that does not load) fails too.
  const elsewhere = Object.keys(c.review?.protocol ?? {}).some((k) => !shown.has(k));
  const failures = [...c.cohorts.flatMap((x) => x.check.failures), ...(elsewhere ? [{ on: 'protocol' as const, comparison: null, message: '' }] : [])];
  if (c.review?.refused.length)
    return `❌ **pairbench: the treatment could not be reviewed** — ${inert(c.review.refused[0]!)}${c.review.refused.length > 1 ? ` (and ${c.review.refused.length - 1} more)` : ''}: check failed`;
  if (!failures.length) {
    const moved = c.cohorts.flatMap((x) => x.diff?.comparisons.flatMap((d) => d.moved.map((m) => m.task)) ?? []);
    const changes = c.cohorts.flatMap(
      (x) =>
        x.diff?.comparisons.flatMap((d) => (d.effect_change ? [`${pp(d.effect_change.estimate)} over ${plural(d.effect_change.n_tasks, 'task')}`] : [])) ?? [],
    );
    const what = changes.length ? `effect change ${changes.join('; ')}` : 'no comparison with a base';
    return `✅ **pairbench: check passed** — no gate failed (${what}${moved.length ? `; ${plural(moved.length, 'task')} moved within noise` : ''})`;
  }
  const kinds = [...new Set(failures.map((f) => f.on))].sort((a, b) => rank(a) - rank(b));
  const first = failures.filter((f) => f.on === kinds[0])!;
  const harmed = [...new Set(failures.filter((f) => f.on === 'new-harm').flatMap((f) => f.tasks ?? []))];
  let why: string;
  switch (kinds[0]) {
    case 'protocol':
      why = `this pull request changes the protocol (${plural(protocolCount(c), 'frozen field')} besides the treatment): the base decides it`;
      break;
    case 'new-harm':
      why = `this change makes the context worse on ${plural(harmed.length, 'task')} (${inert(harmed.join(', '))})`;
      break;
    case 'regression': {
      const d = c.cohorts.flatMap((x) => x.diff?.comparisons ?? []).find((x) => x.tests && x.tests.regression.p_holm <= x.tests.alpha + 1e-12);
      why = d
        ? `this change lowers the context's effect by ${pp(-d.tests!.regression.estimate).replace('+', '')} over ${plural(d.tests!.regression.n_tasks, 'task')}`
        : 'the head regressed';
      break;
    }
    case 'not-noninferior':
      why = 'this change is not shown safe within the preregistered margin';
      break;
    case 'no-base':
      why = 'the change could not be compared with the base';
      break;
    default:
      why = inert(`${first[0]!.comparison ? `${first[0]!.comparison}: ` : ''}${first[0]!.message}`);
  }
  return `❌ **pairbench: ${why}** — gate failed (${kinds.join(', ')})`;
}

const rank = (on: GateFailure['on']) => (ORDER.includes(on) ? ORDER.indexOf(on) : ORDER.length);
const protocolCount = (c: PrCheck) => Object.values(c.review?.protocol ?? {}).reduce((n, l) => n + l.length, 0);

function side(f: ComparisonDiff['base']): string {
  return f ? `${verdictWord(f.verdict)} ${pp(f.delta)}` : 'not run';
}

function changeCell(d: ComparisonDiff): string {
  const e = d.effect_change;
  if (!e) return 'not comparable';
  return `${pp(e.estimate)}${e.ci ? ` (${Math.round(e.ci.confidence * 100)}% CI ${pp(e.ci.low)} to ${pp(e.ci.high)})` : ''}, ${plural(e.n_tasks, 'task')}`;
}

const p2 = (x: number) => (x < 0.001 ? x.toExponential(1) : x.toPrecision(2));

/** Each head-against-base gate the policy lists, for one comparison: passed or failed, with its figure. */
function gateLines(x: CheckedCohort, d: ComparisonDiff): string[] {
  const t = d.tests;
  const name = `${d.treatment} vs ${d.control}`;
  return x.check.gate.fail_on.filter(isHeadVsBaseGate).map((g) => {
    const failed = x.check.failures.find((f) => f.on === g && f.comparison === name);
    if (failed) return `- ❌ **${g}** (${inert(name)}): ${inert(failed.message)}`;
    if (!t) return `- ➖ **${g}** (${inert(name)}): not judged`;
    const figure =
      g === 'regression'
        ? `head − base ${pp(t.regression.estimate)}, p ${p2(t.regression.p_holm)} (one-sided, exact) > alpha ${t.alpha}`
        : g === 'new-harm'
          ? `${plural(t.new_harm.tasks.length, 'task')} newly hurt in every rep (no change gives about ${t.new_harm.expected.toFixed(2)}), p ${p2(t.new_harm.p_holm)}`
          : t.noninferiority?.lower != null
            ? `lower bound ${pp(t.noninferiority.lower)} above the margin ${pp(-t.noninferiority.margin)}`
            : 'shown within the margin';
    return `- ✅ **${g}** (${inert(name)}): ${figure}`;
  });
}

function taskText(f: FlippedTask, d: ComparisonDiff): string {
  return inert(
    `${f.task}: ${d.treatment} ${Math.round(f.treatment.base * 100)}% → ${Math.round(f.treatment.head * 100)}%, ${d.control} ${Math.round(f.control.base * 100)}% → ${Math.round(f.control.head * 100)}% (${f.base_class} → ${f.head_class}, p ${p2(f.p)})`,
  );
}

function tasksSection(d: ComparisonDiff): string[] {
  if (!d.tests) return [];
  const expected = d.flips_expected_no_change ?? 0;
  const noise = `a change that does nothing would list about ${expected.toFixed(1)} here`;
  const out: string[] = [];
  if (d.flipped.length) {
    out.push(`${plural(d.flipped.length, 'task')} flipped beyond noise on its own (${noise}):`, ...d.flipped.map((f) => `- ${taskText(f, d)}`));
  } else {
    out.push(
      `No task changed beyond noise on its own (${noise}; a task needs ${d.reps_for_one_task_flip} reps a side to show a flip alone)${d.moved.length ? '. Moved, within noise:' : '.'}`,
    );
  }
  if (d.moved.length)
    out.push(...d.moved.slice(0, 20).map((f) => `- ${taskText(f, d)}`), ...(d.moved.length > 20 ? [`- and ${d.moved.length - 20} more (in the bundle)`] : []));
  return out;
}

function sizingLines(s: GatePlan | null): string[] {
  if (!s || !s.shortfalls.length) return [];
  return [
    `**What the gates can see at this size** (${s.design.tasks} tasks × ${s.design.reps} reps, the base's own pass rates; \`pairbench size\`):`,
    ...s.shortfalls.map((l) => `- ⚠ ${inert(l)}`),
  ];
}

export function prComment(c: PrCheck): string {
  const out: string[] = [bottomLine(c), ''];
  for (const x of c.cohorts) {
    const title = x.node ? `${x.check.cohort} (${x.node})` : x.check.cohort;
    out.push(`#### ${inert(title)}`, '');
    const comparisons = x.diff?.comparisons ?? [];
    if (comparisons.length) {
      out.push('| comparison | base | head | change (head − base) | cost per attempt (head / base) |', '|---|---|---|---|---|');
      for (const d of comparisons) {
        const cost = d.cost.filter((k) => k.ratio !== null).map((k) => `${k.arm} ${k.ratio!.toFixed(2)}x`);
        out.push(`| ${inert(`${d.treatment} vs ${d.control}`)} | ${side(d.base)} | ${side(d.head)} | ${changeCell(d)} | ${inert(cost.join(', ') || '—')} |`);
      }
      out.push('');
    } else {
      out.push(
        ...x.head.comparisons.map((k) => `- ${inert(`${k.treatment} vs ${k.control}`)}: ${verdictWord(k.verdict)} ${pp(k.delta)} (no base to compare with)`),
        '',
      );
    }
    const g = x.check.gate;
    const policy = `${g.preregistered ? 'preregistered on the base' : 'the default: the cohort preregisters none'}; fails on ${g.fail_on.join(', ')}${g.added.length ? ` (the workflow added ${g.added.join(', ')})` : ''}`;
    out.push(`**Gate** (${inert(policy)}):`);
    const verdictFailures = x.check.failures.filter((f) => !isHeadVsBaseGate(f.on as string));
    for (const f of verdictFailures) out.push(`- ❌ **${f.on}**${f.comparison ? ` (${inert(f.comparison)})` : ''}: ${inert(f.message)}`);
    for (const d of comparisons) out.push(...gateLines(x, d));
    for (const n of x.check.notes) out.push(`- ➖ ${inert(n)}`);
    if (!verdictFailures.length && !comparisons.length && !x.check.notes.length) out.push('- ✅ no listed verdict');
    const gates = g.fail_on.filter(isHeadVsBaseGate);
    if (gates.length) out.push('', ...gates.map((g) => `<sub>${g}: ${gateMeaning(g)}.</sub>`));
    out.push('');
    const warnings = x.head.warnings.map((w) => `- ⚠ ${inert(w.message)}`);
    const unisolated = x.head.comparisons.flatMap((k) =>
      k.unisolated_arms?.length
        ? [`- ⚠ ${inert(`${k.unisolated_arms.join(' and ')} ran without isolation: no verdict of ${k.treatment} vs ${k.control} is a claim`)}`]
        : [],
    );
    if (warnings.length || unisolated.length) out.push('**Warnings** (the head):', ...warnings, ...unisolated, '');
    if (x.diff) {
      const r = x.diff.reuse;
      const cost = r.ran_cost_usd === null ? 'no provider cost (a scripted model, or none reported)' : `$${r.ran_cost_usd.toFixed(2)}`;
      out.push(
        `**What ran**: ${plural(r.ran, 'attempt')} run for this change, ${r.reused} reused from the base (of ${r.head_attempts}); cost of what ran: ${cost}.`,
        '',
      );
      for (const d of comparisons) {
        const lines = tasksSection(d);
        if (lines.length) out.push(`**Tasks** (${inert(`${d.treatment} vs ${d.control}`)}): ${lines[0]}`, ...lines.slice(1), '');
      }
      if (!x.diff.comparable) out.push('**The runs differ** (named, not averaged over):', ...x.diff.mismatches.map((m) => `- ${inert(m)}`), '');
    }
    const treatment = c.review?.treatment[x.check.cohort] ?? [];
    if (treatment.length) out.push('**Treatment under review** (what the pull request changed in it):', ...treatment.map((l) => `- ${inert(l)}`), '');
    const protocol = c.review?.protocol[x.check.cohort] ?? [];
    if (protocol.length)
      out.push(
        '**Protocol changes** (not run: the base decides them, and the check fails until they land on the base branch):',
        ...protocol.map((l) => `- ${inert(l)}`),
        '',
      );
    const sizing = sizingLines(x.sizing);
    if (sizing.length) out.push(...sizing, '');
  }
  // Protocol changes to cohorts the head did not run (one the pull request added or removed).
  const shown = new Set(c.cohorts.map((x) => x.check.cohort));
  const other = Object.entries(c.review?.protocol ?? {}).filter(([k]) => !shown.has(k));
  if (other.length) out.push('**Protocol changes** elsewhere:', ...other.flatMap(([k, lines]) => lines.map((l) => `- ${inert(`${k}: ${l}`)}`)), '');
  if (c.review?.refused.length) out.push('**The treatment was not taken**:', ...c.review.refused.map((l) => `- ${inert(l)}`), '');
  const link = c.link ? `[the bundles and reports](${encodeURI(c.link).replace(/[()]/g, (ch) => `%${ch.charCodeAt(0).toString(16)}`)})` : 'the bundle artifact';
  out.push(`<sub>base ${inert(c.labels.base)} · head ${inert(c.labels.head)} · ${link} · one comment, updated on every push</sub>`);
  return out.join('\n') + '\n';
}
