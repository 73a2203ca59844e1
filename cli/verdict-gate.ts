/**
 * `run --fail-on LIST`: a gate on the verdicts a run reaches (a pull request's check fails when
 * the context change made a comparison negative, or left it unisolated). A gate that finds no
 * comparison to judge fails too: nothing was shown to be fine.
 */
import type { Verdict } from '../stats/types.js';
import { verdictWord } from '../report/report-format.js';
import type { ComparisonLine } from './run-summary.js';

export interface GateResult {
  fail_on: Verdict[];
  /** Each comparison whose verdict is in the list. */
  failed: { cohort: string; treatment: string; control: string; verdict: Verdict; unisolated_arms: string[] }[];
  passed: boolean;
  /** Why the gate failed, in words; null when it passed. */
  message: string | null;
}

export function judgeGate(comparisons: readonly ComparisonLine[], failOn: ReadonlySet<Verdict>): GateResult {
  // `unisolated` is also a comparison whose arms ran unisolated with a verdict that claims nothing
  // (insufficient n, within noise): the check must not be green on an unisolated run.
  const failed = comparisons
    .filter((c) => failOn.has(c.verdict) || (failOn.has('unisolated') && c.unisolated_arms.length > 0))
    .map((c) => ({ cohort: c.cohort, treatment: c.treatment, control: c.control, verdict: c.verdict, unisolated_arms: c.unisolated_arms }));
  const listed = [...failOn].join(',');
  // Where the verdict itself is not listed, the comparison failed on its unisolated arms: say so.
  const why = (f: (typeof failed)[number]) =>
    `${f.cohort}: ${f.treatment} vs ${f.control} is ${verdictWord(f.verdict)}${failOn.has(f.verdict) ? '' : ` (${f.unisolated_arms.join(' and ')} ran unisolated)`}`;
  let message: string | null = null;
  if (!comparisons.length)
    message = `--fail-on ${listed}: this run analysed no comparison, so there is no verdict to pass the gate (run the analyze step, or every node)`;
  else if (failed.length) message = `--fail-on ${listed}: ${failed.map(why).join('; ')}`;
  return { fail_on: [...failOn], failed, passed: message === null, message };
}
