import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { JsonEncodable } from '../pipeline/canonical-json.js';
import type { StepConfig } from '../pipeline/config/load.js';
import type { Diagnostic } from '../pipeline/diagnostic.js';
import { err, ok } from '../pipeline/result.js';
import { LOOK_DECISION, type LookDecision } from './not-run.js';
import type { ExecutionContext, StepKind } from '../pipeline/step-kind.js';
import type { AnalysisResult } from '../stats/types.js';
import { jsonArtifact, readJsonArtifact } from '../pipeline/artifact.js';
import { ANALYSIS, analyzeStep } from './analyze-step.js';
import { specOf, type SpecByKind } from './step-spec.js';

/**
 * `gate`: the end of a stage. It reads a pilot cohort's analysis and passes only when
 * the preregistered condition holds (the condition is frozen with every cohort
 * downstream); the next stage's steps need the gate, so when it fails they never run,
 * and `run` says why.
 */
type GateSpec = SpecByKind['gate'];

const spec = (step: StepConfig): GateSpec => specOf(step, 'gate');
const pp = (x: number) => `${x >= 0 ? '+' : ''}${Math.round(x * 1000) / 10} pp`;

/** Whether the condition holds on the analysis, and in words why (not). */
export function evaluateGate(g: GateSpec['require'], a: AnalysisResult): { pass: boolean; because: string } {
  const control = g.control ?? a.spec.control;
  const c = a.comparisons.find((x) => x.treatment === g.treatment && x.control === control);
  if (!c) return { pass: false, because: `the pilot has no comparison ${g.treatment} vs ${control}` };
  const facts = `${g.treatment} vs ${control} on the pilot: ${c.delta === null ? 'no effect (' + c.verdict + ')' : pp(c.delta)}${c.ci ? ` [${pp(c.ci.low)}, ${pp(c.ci.high)}]` : ''}, verdict ${c.verdict}, ${c.n_tasks} task(s)`;
  const failed: string[] = [];
  if (g.min_effect !== undefined && (c.delta === null || c.delta < g.min_effect)) failed.push(`the effect is below the preregistered ${pp(g.min_effect)}`);
  if (g.min_ci_lower !== undefined && (c.ci === null || c.ci.low < g.min_ci_lower))
    failed.push(`the interval's lower bound is below the preregistered ${pp(g.min_ci_lower)}`);
  if (g.verdicts && !g.verdicts.includes(c.verdict)) failed.push(`the verdict is not one of ${g.verdicts.join(', ')}`);
  return failed.length ? { pass: false, because: `${facts}: ${failed.join('; ')}` } : { pass: true, because: facts };
}

/** gate.json: the gate's decision (open or closed) and why, as the run's summary and the registry read it. */
export interface GateDecision {
  schema_version: 1;
  gate: string;
  analysis: string;
  require: unknown;
  pass: boolean;
  because: string;
}

export const GATE_DECISION = jsonArtifact<GateDecision>('gate.json', "the gate's decision and the evidence for it", (v) => {
  const g = v as Partial<GateDecision> | null;
  if (!g || typeof g !== 'object') return ['/ must be an object'];
  return [
    ...(typeof g.pass === 'boolean' ? [] : ['/pass must be a boolean']),
    ...(typeof g.because === 'string' ? [] : ['/because must be a string']),
    ...(typeof g.gate === 'string' ? [] : ['/gate must be a string']),
  ];
});

export const gateStep: StepKind = {
  name: 'gate',
  observes: true,
  title: { one: 'gate', many: 'gates' },
  outputs: () => [GATE_DECISION, LOOK_DECISION],
  // 2: a closed gate is a result (gate.json pass: false), not a failure: the attempts after it are
  // marked not run (decision.json), so what was observed -- the pilot and the gate -- still exports.
  version: 2,

  check(step, steps) {
    const s = spec(step);
    const problems: Diagnostic[] = [];
    const at = (f: string[]) => ({ field: `steps.${step.name}.${f.join('.')}`, location: step.source.locate([...step.path, ...f]) });
    const pilot = steps.get(s.analysis);
    if (!pilot || pilot.kind !== analyzeStep.name || !step.needs.includes(s.analysis)) {
      problems.push({
        ...at(['analysis']),
        message: `analysis "${s.analysis}" must be an analyze step in needs (the pilot cohort whose result the gate reads)`,
      });
    } else {
      const pilotSpec = specOf(pilot, 'analyze');
      const arms = [pilotSpec.control, ...pilotSpec.treatments];
      if (!arms.includes(s.require?.treatment))
        problems.push({
          ...at(['require', 'treatment']),
          message: `treatment "${s.require?.treatment}" is not a treatment of the pilot ${s.analysis} (${arms.slice(1).join(', ')})`,
        });
    }
    const r = s.require ?? ({} as GateSpec['require']);
    if (r.min_effect === undefined && r.min_ci_lower === undefined && !r.verdicts)
      problems.push({ ...at(['require']), message: 'a gate needs a condition: min_effect, min_ci_lower and/or verdicts' });
    return problems;
  },
  keyConfig: (node): JsonEncodable => ({ analysis: spec(node.step).analysis, require: spec(node.step).require }),
  fileInputs: () => [],
  selectUpstream: (node, upstream) => (upstream.step.name === spec(node.step).analysis ? [ANALYSIS.name] : []),
  describeConfigField: (path) => (path[0] === 'require' ? 'gate condition' : path.join('.')),

  async execute(ctx: ExecutionContext) {
    const s = spec(ctx.node.step);
    const pilot = ctx.upstream.find((u) => u.outputs[ANALYSIS.name]);
    const read = pilot && readJsonArtifact(ANALYSIS, pilot.outputs, (d) => ctx.artifacts.read(d), pilot.node);
    if (!read) return err({ reason: 'internal', message: `gate ${ctx.node.step.name}: the pilot ${s.analysis} produced no ${ANALYSIS.name}` });
    if (!read.ok) return err({ reason: 'store-error', message: `gate ${ctx.node.step.name}: ${read.error}` });
    const analysis = read.value;
    const result = evaluateGate(s.require, analysis);
    ctx.log(`${result.pass ? 'PASS' : 'CLOSED'}: ${result.because}`);
    const decision = result.pass
      ? `gate ${ctx.node.step.name} is open: ${result.because}`
      : `gate ${ctx.node.step.name} is closed: ${result.because}. The attempts after it are not run; the pilot's result stands on its own`;
    if (!result.pass) ctx.outcome?.('closed', decision);
    const out = join(ctx.workDir, 'out');
    mkdirSync(out);
    const gate: GateDecision = {
      schema_version: 1,
      gate: ctx.node.step.name,
      analysis: s.analysis,
      require: s.require,
      pass: result.pass,
      because: result.because,
    };
    writeFileSync(join(out, GATE_DECISION.name), JSON.stringify(gate, null, 2) + '\n');
    // What the attempts after the gate read (as they read an interim look's): stop, or go on.
    const next: LookDecision = { schema_version: 1, cohort: s.analysis, stop: !result.pass, stopped_at: null, decision };
    writeFileSync(join(out, LOOK_DECISION.name), JSON.stringify(next, null, 2) + '\n');
    return ok({
      [GATE_DECISION.name]: ctx.artifacts.putPath(join(out, GATE_DECISION.name)),
      [LOOK_DECISION.name]: ctx.artifacts.putPath(join(out, LOOK_DECISION.name)),
    });
  },
};
