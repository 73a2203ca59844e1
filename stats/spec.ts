/** Defaults and the check of an analysis spec. */
import { err, ok, type Result } from '../pipeline/result.js';
import type { AnalysisSpec, CostWeights } from './types.js';

/** input + 1.25 x cache_write + 0.1 x cache_read + 5 x output */
export const DEFAULT_WEIGHTS: Readonly<CostWeights> = Object.freeze({ input: 1, cache_write: 1.25, cache_read: 0.1, output: 5 });
export const DEFAULT_BOOTSTRAP: Readonly<AnalysisSpec['bootstrap']> = Object.freeze({ resamples: 10000, seed: 1 });
export const DEFAULT_CONFIDENCE = 0.95;
export const DEFAULT_POWER = 0.8;
export const DEFAULT_VALIDITY_FLOOR = 0.8;
export const DEFAULT_INFRA_ERROR_THRESHOLD = 0.05;

/** Every field of a spec except the arms. */
export const DEFAULT_SPEC: Readonly<Omit<AnalysisSpec, 'control' | 'treatments'>> = Object.freeze({
  weights: DEFAULT_WEIGHTS,
  bootstrap: DEFAULT_BOOTSTRAP,
  confidence: DEFAULT_CONFIDENCE,
  power: DEFAULT_POWER,
  validity_floor: DEFAULT_VALIDITY_FLOOR,
  infra_error_threshold: DEFAULT_INFRA_ERROR_THRESHOLD,
  factorial: null,
  overhead: null,
});

/** A full spec for the given arms; `overrides` replaces whole fields. */
export function defaultSpec(control: string, treatments: string[], overrides: Partial<AnalysisSpec> = {}): AnalysisSpec {
  // Fresh copies of the nested defaults: a caller may mutate its spec.
  return { control, treatments, ...DEFAULT_SPEC, weights: { ...DEFAULT_WEIGHTS }, bootstrap: { ...DEFAULT_BOOTSTRAP }, ...overrides };
}

export interface SpecProblem {
  field: string;
  message: string;
}

const MAX_SEED = 4294967295;

/** Names every problem of a spec at once (an empty list is never returned as an error). */
export function checkSpec(spec: AnalysisSpec): Result<AnalysisSpec, SpecProblem[]> {
  const problems: SpecProblem[] = [];
  const bad = (field: string, message: string): void => {
    problems.push({ field, message });
  };
  if (spec.control === '') bad('control', 'control arm name is empty');
  if (spec.treatments.length === 0) bad('treatments', 'at least one treatment arm is needed');
  spec.treatments.forEach((t, i) => {
    if (t === spec.control) bad(`treatments[${i}]`, `treatment "${t}" is the control arm`);
    if (spec.treatments.indexOf(t) !== i) bad(`treatments[${i}]`, `treatment "${t}" is listed twice`);
  });
  for (const key of ['input', 'cache_write', 'cache_read', 'output'] as const) {
    const w = spec.weights[key];
    if (!Number.isFinite(w) || w < 0) bad(`weights.${key}`, `weight must be a finite number >= 0 (got ${w})`);
  }
  const { resamples, seed } = spec.bootstrap;
  if (!Number.isInteger(resamples) || resamples < 1) bad('bootstrap.resamples', `must be an integer >= 1 (got ${resamples})`);
  if (!Number.isInteger(seed) || seed < 1 || seed > MAX_SEED) bad('bootstrap.seed', `must be an integer in [1, ${MAX_SEED}] (got ${seed})`);
  if (!(spec.confidence > 0 && spec.confidence < 1)) bad('confidence', `must be in (0, 1) (got ${spec.confidence})`);
  if (!(spec.power > 0 && spec.power < 1)) bad('power', `must be in (0, 1) (got ${spec.power})`);
  if (!(spec.validity_floor >= 0 && spec.validity_floor <= 1)) bad('validity_floor', `must be in [0, 1] (got ${spec.validity_floor})`);
  if (!(spec.infra_error_threshold >= 0 && spec.infra_error_threshold <= 1)) {
    bad('infra_error_threshold', `must be in [0, 1] (got ${spec.infra_error_threshold})`);
  }
  (spec.comparisons ?? []).forEach(([t, c], i) => {
    if (t === c) bad(`comparisons[${i}]`, `compares "${t}" with itself`);
    else if (c === spec.control && spec.treatments.includes(t))
      bad(`comparisons[${i}]`, `${t} vs ${c} is already a comparison (a treatment against the control)`);
    else if ((spec.comparisons ?? []).findIndex(([t2, c2]) => t2 === t && c2 === c) !== i) bad(`comparisons[${i}]`, `${t} vs ${c} is listed twice`);
  });
  if (spec.by && spec.factorial)
    bad('by', 'a cohort crossed with models or agents has its own 2x2 (context x level) per treatment; drop factorial, or analyze each level apart');
  if (spec.by && spec.stopping) bad('by', 'sequential stopping looks at one comparison; a cohort crossed with models or agents has one per level');
  const f = spec.factorial;
  if (f) {
    if (f.factors.length === 0) bad('factorial.factors', 'at least one factor is needed');
    for (const [arm, levels] of Object.entries(f.levels)) {
      for (const factor of f.factors) {
        const l = levels[factor];
        if (l !== 0 && l !== 1) bad(`factorial.levels.${arm}.${factor}`, `level must be 0 or 1 (got ${String(l)})`);
      }
      for (const factor of Object.keys(levels)) {
        if (!f.factors.includes(factor)) bad(`factorial.levels.${arm}.${factor}`, `"${factor}" is not a listed factor`);
      }
    }
  }
  if (spec.stopping) checkStopping(spec, bad);
  return problems.length === 0 ? ok(spec) : err(problems);
}

function checkStopping(spec: AnalysisSpec, bad: (field: string, message: string) => void): void {
  const s = spec.stopping!;
  if (s.rule !== 'group-sequential' && s.rule !== 'confidence-sequence')
    bad('stopping.rule', `must be group-sequential or confidence-sequence (got ${String(s.rule)}); fixed-N is the default: leave stopping out`);
  if (s.rule === 'group-sequential' && !(Number.isInteger(s.looks) && s.looks! >= 2 && s.looks! <= 20))
    bad('stopping.looks', `must be an integer from 2 to 20 (got ${String(s.looks)})`);
  if (s.rule === 'confidence-sequence' && s.looks !== undefined)
    bad('stopping.looks', 'a confidence sequence is looked at after every family: leave looks out');
  if (s.alpha !== undefined && !(s.alpha > 0 && s.alpha < 0.5)) bad('stopping.alpha', `must be in (0, 0.5) (got ${s.alpha})`);
  if (s.power !== undefined && !(s.power > 0 && s.power < 1)) bad('stopping.power', `must be in (0, 1) (got ${s.power})`);
  if (s.spending !== undefined && s.spending !== 'obrien-fleming' && s.spending !== 'pocock')
    bad('stopping.spending', `must be obrien-fleming or pocock (got ${String(s.spending)})`);
  if (s.futility !== undefined && s.futility !== 'none' && s.futility !== 'non-binding')
    bad('stopping.futility', `must be none or non-binding (got ${String(s.futility)})`);
  if (s.rule === 'confidence-sequence' && s.futility === 'non-binding') bad('stopping.futility', 'a confidence sequence has no futility boundary');
  if (spec.treatments.length !== 1 || (spec.comparisons ?? []).length > 0 || spec.factorial) {
    bad('stopping', 'sequential stopping is for one comparison (one treatment against the control, no further comparisons, no factorial): split the cohort');
  }
}
