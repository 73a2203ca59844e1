import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Json } from '../pipeline/canonical-json.js';
import type { StepConfig } from '../pipeline/config/load.js';
import { closest, type Diagnostic } from '../pipeline/diagnostic.js';
import { fieldName } from '../pipeline/config/yaml-source.js';
import { ok } from '../pipeline/result.js';
import type { ExecutionContext, StepKind } from '../pipeline/step-kind.js';
import { checkSpec, defaultSpec } from './analyze/spec.js';
import type { AnalysisSpec, AttemptRecord, FactorialSpec, JudgementRecord } from './analyze/types.js';

interface AnalyzeConfig {
  control: string;
  treatments: string[];
  weights?: AnalysisSpec['weights'];
  bootstrap?: AnalysisSpec['bootstrap'];
  confidence?: number;
  power?: number;
  validity_floor?: number;
  infra_error_threshold?: number;
  factorial?: FactorialSpec;
  comparisons?: [string, string][];
  /** A judge step whose (a)/(b)/(c) the report shows beside the verifier's. */
  judge?: string;
  /** A user step whose output (a JSON file {usd, tokens}) is the overhead cost stream. */
  overhead?: { step: string; out: string };
}

const cfg = (step: StepConfig) => step.spec as unknown as AnalyzeConfig;

/** The arms (matrix.arm values) of every run step upstream of `step`. */
function upstreamArms(step: StepConfig, steps: ReadonlyMap<string, StepConfig>): Set<string> {
  const arms = new Set<string>();
  const seen = new Set<string>();
  const stack = [...step.needs];
  while (stack.length) {
    const name = stack.pop()!;
    if (seen.has(name)) continue;
    seen.add(name);
    const s = steps.get(name);
    if (!s) continue;
    if (s.kind === 'run') for (const v of s.matrix.find((d) => d.name === 'arm')?.values ?? []) arms.add(v);
    stack.push(...s.needs);
  }
  return arms;
}

export function analysisSpecOf(step: StepConfig): AnalysisSpec {
  const c = cfg(step);
  return defaultSpec(c.control, c.treatments, {
    ...(c.weights ? { weights: c.weights } : {}),
    ...(c.bootstrap ? { bootstrap: c.bootstrap } : {}),
    ...(c.confidence !== undefined ? { confidence: c.confidence } : {}),
    ...(c.power !== undefined ? { power: c.power } : {}),
    ...(c.validity_floor !== undefined ? { validity_floor: c.validity_floor } : {}),
    ...(c.infra_error_threshold !== undefined ? { infra_error_threshold: c.infra_error_threshold } : {}),
    ...(c.factorial ? { factorial: c.factorial } : {}),
    ...(c.comparisons?.length ? { comparisons: c.comparisons } : {}),
  });
}

/**
 * `analyze` (per cohort): the paired statistics over every audited attempt. Every
 * number is reproducible from the bundle: the attempts and the spec are its inputs.
 */
export const analyzeStep: StepKind = {
  name: 'analyze',
  // 2: the verdict rests on a Holm-adjusted family-level sign-flip test, a cluster t interval
  // and worst-case exclusions; insufficient-n; infra rates over every try by Fisher's exact test.
  version: 2,
  check(step, steps) {
    const problems: Diagnostic[] = [];
    // The arms compared must be arms the run steps upstream actually run.
    const arms = upstreamArms(step, steps);
    if (arms.size) {
      const c = cfg(step);
      const refs: [string, (string | number)[]][] = [
        [c.control, ['control']],
        ...(c.treatments ?? []).map((t, i): [string, (string | number)[]] => [t, ['treatments', i]]),
        ...(c.comparisons ?? []).flatMap(([t, k], i): [string, (string | number)[]][] => [[t, ['comparisons', i, 0]], [k, ['comparisons', i, 1]]]),
      ];
      for (const [arm, field] of refs) {
        if (typeof arm !== 'string' || arms.has(arm)) continue;
        const guess = closest(arm, [...arms]);
        problems.push({
          field: `steps.${step.name}.${fieldName(field)}`,
          message: `"${arm}" is not an arm of the run steps this cohort analyses; they run: ${[...arms].join(', ')}`,
          location: step.source.locate([...step.path, ...field]),
          ...(guess ? { hint: `did you mean "${guess}"?` } : {}),
        });
      }
    }
    const spec = checkSpec(analysisSpecOf(step));
    if (!spec.ok) {
      for (const p of spec.error) problems.push({ field: `steps.${step.name}`, message: p.message, location: step.source.locate(step.path) });
    }
    const j = cfg(step).judge;
    if (j !== undefined && (steps.get(j)?.kind !== 'judge' || !step.needs.includes(j))) {
      problems.push({ field: `steps.${step.name}.judge`, message: `judge "${j}" must be a judge step in needs`, location: step.source.locate([...step.path, 'judge']) });
    }
    const o = cfg(step).overhead;
    if (o && !step.needs.includes(o.step)) {
      problems.push({ field: `steps.${step.name}.overhead.step`, message: `overhead comes from step "${o.step}", which is not in needs`, location: step.source.locate([...step.path, 'overhead', 'step']) });
    }
    return problems;
  },
  keyConfig: (node): Json => ({ spec: analysisSpecOf(node.step) as unknown as Json, overhead: (cfg(node.step).overhead ?? null) as unknown as Json, ...(cfg(node.step).judge ? { judge: cfg(node.step).judge! } : {}) }),
  fileInputs: () => [],
  selectUpstream(node, upstream) {
    if (upstream.kind.name === 'audit') return ['audit.json'];
    if (upstream.kind.name === 'judge' && upstream.step.name === cfg(node.step).judge) return ['judgement.json'];
    const o = cfg(node.step).overhead;
    return o && upstream.step.name === o.step ? [o.out] : [];
  },

  async execute(ctx: ExecutionContext) {
    const attempts: AttemptRecord[] = [];
    let overhead: AnalysisSpec['overhead'] = null;
    const judgements: JudgementRecord[] = [];
    const o = cfg(ctx.node.step).overhead;
    for (const u of ctx.upstream) {
      const audit = u.outputs['audit.json'];
      if (audit) attempts.push(JSON.parse(ctx.artifacts.read(audit.digest).toString('utf8')) as AttemptRecord);
      const judgement = u.outputs['judgement.json'];
      if (judgement) judgements.push(JSON.parse(ctx.artifacts.read(judgement.digest).toString('utf8')) as JudgementRecord);
      if (o && u.node.split('/')[0] === o.step && u.outputs[o.out]) {
        const v = JSON.parse(ctx.artifacts.read(u.outputs[o.out]!.digest).toString('utf8')) as { usd?: number; tokens?: number; confidence?: string; model_source?: string };
        overhead = { usd: v.usd ?? null, tokens: v.tokens ?? null, source: `${o.step}:${o.out}`, ...(v.confidence ? { confidence: v.confidence } : {}), ...(v.model_source ? { model_source: v.model_source } : {}) };
      }
    }
    attempts.sort((a, b) => (a.node < b.node ? -1 : a.node > b.node ? 1 : 0));
    const spec: AnalysisSpec = { ...analysisSpecOf(ctx.node.step), overhead };
    // Loaded when a cohort is analysed, not when the config is (a no-op run stays fast).
    const { analyze } = await import('./analyze/analyze.js');
    const result = analyze(attempts, spec);
    const judgeStepName = cfg(ctx.node.step).judge;
    if (judgeStepName) {
      const { judgeSummary } = await import('./analyze/judge-summary.js');
      const j = judgeSummary(judgeStepName, judgements, result.comparisons);
      result.judge = j.summary;
      result.warnings.push(...j.warnings);
    }
    const out = join(ctx.workDir, 'out');
    mkdirSync(out, { recursive: true });
    writeFileSync(join(out, 'analysis.json'), JSON.stringify(result, null, 2) + '\n');
    writeFileSync(join(out, 'attempts.json'), JSON.stringify(attempts, null, 2) + '\n');
    return ok({ 'analysis.json': ctx.artifacts.putPath(join(out, 'analysis.json')), 'attempts.json': ctx.artifacts.putPath(join(out, 'attempts.json')) });
  },
};
