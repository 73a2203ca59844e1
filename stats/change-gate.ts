/**
 * The pull-request check's decision for one cohort: the base's preregistered gate (its
 * `gate.fail_on`, or the default) applied to the head's own verdicts and to the head against
 * the base (stats/run-diff.ts), plus the protocol changes the pull request made (a change to
 * anything frozen but the treatment under review fails the check until it lands on the base).
 * Every failure says which gate and why, in words a reviewer reads in a line.
 */
import { DEFAULT_FAIL_ON, isHeadVsBaseGate, isVerdict, type FailOn, type HeadVsBaseGate } from './verdicts.js';
import type { RunDiff } from './run-diff.js';
import type { AnalysisResult, GatePolicy } from './types.js';

/** The regression gate's target when the cohort sets none (the planner sizes against it). */
export const DEFAULT_DETECT = 0.3;

export interface ResolvedGate {
  fail_on: FailOn[];
  noninferiority_margin: number | null;
  detect: number;
  /** Whether the cohort preregistered it (gate: in its config) or the default applies. */
  preregistered: boolean;
  /** What the workflow added to it (--fail-on): it can add, never take away. */
  added: FailOn[];
}

export function resolveGate(policy: GatePolicy | undefined, added: readonly FailOn[] = []): ResolvedGate {
  const own = policy?.fail_on ?? DEFAULT_FAIL_ON;
  return {
    fail_on: [...new Set([...own, ...added])],
    noninferiority_margin: policy?.noninferiority_margin ?? null,
    detect: policy?.detect ?? DEFAULT_DETECT,
    preregistered: policy !== undefined,
    added: added.filter((a) => !own.includes(a)),
  };
}

export interface GateFailure {
  /** What failed: a verdict of the head, a gate against the base, or the protocol. */
  on: FailOn | 'protocol' | 'no-base';
  /** `treatment vs control`, or null for the cohort. */
  comparison: string | null;
  message: string;
  /** Tasks it names (new-harm's). */
  tasks?: string[];
}

export interface CohortCheck {
  cohort: string;
  gate: ResolvedGate;
  failures: GateFailure[];
  /** Gates listed that did not apply here, and why (no base to compare with). */
  notes: string[];
}

const pp = (x: number) => `${x >= 0 ? '+' : ''}${(Math.round(x * 1000) / 10).toFixed(1)} pp`;
const p3 = (x: number) => (x < 0.001 ? x.toExponential(1) : x.toPrecision(2));
const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/**
 * The decision for a cohort. `diff` is null when there is no base bundle: `baseMissing` says why
 * (the base branch has no config yet: the gates against it do not apply; the base did not run:
 * they fail, since the check cannot pass a change it did not compare).
 */
export function judgeChange(input: {
  cohort: string;
  policy: GatePolicy | undefined;
  /** Verdicts and gates the workflow adds (--fail-on). */
  added?: readonly FailOn[];
  head: AnalysisResult;
  diff: RunDiff | null;
  baseMissing?: { reason: 'no-config' | 'not-run'; detail: string };
  protocolChanges: readonly string[];
}): CohortCheck {
  const gate = resolveGate(input.policy, input.added);
  const failures: GateFailure[] = [];
  const notes: string[] = [];
  if (input.protocolChanges.length)
    failures.push({
      on: 'protocol',
      comparison: null,
      message: `the pull request changes ${plural(input.protocolChanges.length, 'frozen field')} besides the treatment under review; the base decides the protocol, so the check fails until the change lands on the base branch`,
    });
  const verdicts = new Set(gate.fail_on.filter(isVerdict));
  for (const c of input.head.comparisons) {
    const name = `${c.treatment} vs ${c.control}`;
    const unisolated = c.unisolated_arms ?? [];
    if (verdicts.has(c.verdict)) failures.push({ on: c.verdict, comparison: name, message: `the head's own verdict is ${c.verdict.toUpperCase()}` });
    else if (verdicts.has('unisolated') && unisolated.length)
      failures.push({ on: 'unisolated', comparison: name, message: `${unisolated.join(' and ')} ran without isolation: no verdict of it can be trusted` });
  }
  const gates = gate.fail_on.filter(isHeadVsBaseGate);
  if (!gates.length) return { cohort: input.cohort, gate, failures, notes };
  if (!input.diff) {
    if (input.baseMissing?.reason === 'no-config') notes.push(`${gates.join(', ')}: not judged: ${input.baseMissing.detail}`);
    else
      failures.push({
        on: 'no-base',
        comparison: null,
        message: `${gates.join(', ')} cannot be judged: ${input.baseMissing?.detail ?? 'the base has no bundle of this cohort'}; the check does not pass a change it did not compare`,
      });
    return { cohort: input.cohort, gate, failures, notes };
  }
  if (!input.diff.comparable && input.diff.comparisons.every((d) => !d.tests)) {
    failures.push({
      on: 'no-base',
      comparison: null,
      message: `${gates.join(', ')} cannot be judged: the runs differ (${input.diff.mismatches.join('; ')})`,
    });
    return { cohort: input.cohort, gate, failures, notes };
  }
  for (const d of input.diff.comparisons) {
    const name = `${d.treatment} vs ${d.control}`;
    const t = d.tests;
    if (!t) {
      failures.push({ on: 'no-base', comparison: name, message: `${gates.join(', ')} cannot be judged: no task has valid pairs on both sides` });
      continue;
    }
    for (const g of gates) {
      const failure = judgeOne(g, d, gate);
      if (failure) failures.push({ ...failure, comparison: name });
    }
  }
  return { cohort: input.cohort, gate, failures, notes };
}

function judgeOne(g: HeadVsBaseGate, d: RunDiff['comparisons'][number], gate: ResolvedGate): Omit<GateFailure, 'comparison'> | null {
  const t = d.tests!;
  switch (g) {
    case 'regression': {
      const r = t.regression;
      if (r.p_holm > t.alpha + 1e-12) return null;
      return {
        on: g,
        message: `the head's effect is ${pp(r.estimate)} against the base's over ${plural(r.n_tasks, 'task')}; a change that does nothing drops it this far with p ${p3(r.p_holm)} (one-sided, exact${r.p_holm !== r.p ? ', Holm' : ''}) <= alpha ${t.alpha}`,
      };
    }
    case 'new-harm': {
      const h = t.new_harm;
      if (!h.tasks.length || h.p_holm > t.alpha + 1e-12) return null;
      return {
        on: g,
        tasks: h.tasks,
        message: `${plural(h.tasks.length, 'task')} the head hurts in every rep that the base did not (${h.tasks.join(', ')}); a change that does nothing gives that many with p ${p3(h.p_holm)} (about ${h.expected.toFixed(2)} on average at this size) <= alpha ${t.alpha}`,
      };
    }
    case 'not-noninferior': {
      const n = t.noninferiority;
      if (!n) return { on: g, message: 'not-noninferior needs gate.noninferiority_margin on the base' };
      if (n.shown) return null;
      return {
        on: g,
        message:
          n.lower === null
            ? `not shown safe: with fewer than 2 tasks there is no bound (margin ${pp(-gate.noninferiority_margin!)})`
            : `not shown safe: the head's effect may be as much as ${pp(n.lower).replace('+', '')} against the base's (the lower bound at alpha), beyond the margin ${pp(-n.margin)}`,
      };
    }
  }
}
