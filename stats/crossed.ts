/**
 * Cohorts whose arms are crossed with models, or with agents (spec.by): "does our CLAUDE.md
 * help Sonnet more than Haiku?". Each (arm, level) is a cell, named `ARM @ LEVEL`. The
 * context effect is compared within each level (same tasks, paired by task, one model on
 * both sides: nothing to refuse); the interaction, how much more the treatment helps at one
 * level than at the first, is the 2x2 of context x level, paired by task, tested in the
 * cohort's Holm family. A difference between levels is descriptive only: estimate and
 * interval, no test and no verdict.
 */
import { analyzeFactorial } from './factorial.js';
import type { ArmInput } from './compare.js';
import type { AnalysisSpec, AttemptRecord, ConfigField, CrossedBy, CrossedDesign, CrossedResult } from './types.js';

export function cellName(arm: string, level: string): string {
  return `${arm} @ ${level}`;
}

/** An attempt's level: its agent's model, or its agent (adapter). */
export function levelOf(a: AttemptRecord, by: CrossedBy): string {
  return by === 'model' ? a.agent.model : a.agent.adapter;
}

/** What may differ between levels without refusing the interaction: what the crossing varies. */
const CROSSED_FIELDS: Record<CrossedBy, readonly ConfigField[]> = {
  model: ['model'],
  agent: ['adapter', 'adapter_version', 'model', 'provider'],
};

/**
 * The attempts relabelled as cells, and the spec that compares the arms within each level:
 * the control and treatments at the first level, and every other level's (and every further
 * comparison's) pairs as `comparisons`, so the whole cohort is one Holm family.
 */
export function crossCells(
  attempts: readonly AttemptRecord[],
  spec: AnalysisSpec & { by: CrossedBy },
): { attempts: AttemptRecord[]; spec: AnalysisSpec; levels: string[] } {
  const levels = [...new Set(attempts.map((a) => levelOf(a, spec.by)))].sort();
  const [first = '', ...rest] = levels;
  const { by: _by, ...plain } = spec;
  return {
    levels,
    attempts: attempts.map((a) => ({ ...a, arm: cellName(a.arm, levelOf(a, spec.by)) })),
    spec: {
      ...plain,
      control: cellName(spec.control, first),
      treatments: spec.treatments.map((t) => cellName(t, first)),
      comparisons: [
        ...rest.flatMap((level) => spec.treatments.map((t): [string, string] => [cellName(t, level), cellName(spec.control, level)])),
        ...(spec.comparisons ?? []).flatMap(([t, c]) => levels.map((level): [string, string] => [cellName(t, level), cellName(c, level)])),
      ],
    },
  };
}

/** Per treatment and per level after the first: its interaction with the context (tested) and the level's difference (descriptive). */
export function crossedDesigns(spec: AnalysisSpec & { by: CrossedBy }, levels: readonly string[], cells: ReadonlyMap<string, ArmInput>): CrossedResult {
  const [base = '', ...rest] = levels;
  const designs = spec.treatments.flatMap((treatment) =>
    rest.map((level): CrossedDesign => {
      const f = analyzeFactorial(
        {
          factors: ['context', spec.by],
          levels: {
            [cellName(spec.control, base)]: { context: 0, [spec.by]: 0 },
            [cellName(treatment, base)]: { context: 1, [spec.by]: 0 },
            [cellName(spec.control, level)]: { context: 0, [spec.by]: 1 },
            [cellName(treatment, level)]: { context: 1, [spec.by]: 1 },
          },
        },
        cells,
        spec,
        CROSSED_FIELDS[spec.by],
      );
      const between = f.main_effects[1];
      return {
        treatment,
        control: spec.control,
        level,
        base_level: base,
        status: f.status,
        problems: f.problems,
        interaction: f.interaction ? { ...f.interaction, name: `${treatment} x ${spec.by} (${level} vs ${base})` } : null,
        between: between ? { estimate: between.estimate, ci: between.ci, n_tasks: between.n_tasks } : null,
      };
    }),
  );
  return {
    by: spec.by,
    levels: [...levels],
    cells: [spec.control, ...spec.treatments].flatMap((arm) => levels.map((level) => ({ arm, level, cell: cellName(arm, level) }))),
    designs,
  };
}
