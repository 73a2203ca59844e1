import { agentAdapters } from '../agents/index.js';
import { definitionProblems, wasValidatedWithFile } from '../pipeline/config/schema-validate.js';
import type { StepConfig } from '../pipeline/config/load.js';
import type * as Config from './config-types.generated.js';

/**
 * Each step kind's spec, typed by the schema's own definition of it (the types are generated
 * from schemas/bench.config.schema.json by scripts/compile-schemas.mjs): the schema is the one
 * source of truth, and no step casts its spec to a hand-written shape.
 */
export interface SpecByKind {
  command: Config.CommandStep;
  context: Config.ContextStep;
  materialize: Config.MaterializeStep;
  environment: Config.EnvironmentStep;
  certify: Config.CertifyStep;
  run: Config.RunStep;
  verify: Config.VerifyStep;
  audit: Config.AuditStep;
  judge: Config.JudgeStep;
  analyze: Config.AnalyzeStep;
  gate: Config.GateStep;
  export: Config.ExportStep;
}
export type StepKindName = keyof SpecByKind;

/** Specs already checked (a spec is checked once however often a step reads it: there are 100k nodes in a large plan). */
const checked = new WeakSet<object>();

function isSpec<K extends StepKindName>(kind: K, spec: unknown): spec is SpecByKind[K] {
  if (typeof spec !== 'object' || spec === null) return false;
  if (checked.has(spec)) return true;
  // A loaded config's step was checked against its kind's definition with its file.
  if (wasValidatedWithFile(spec) && (spec as { kind?: unknown }).kind === kind) return true;
  const problems = definitionProblems('bench.config.schema.json', `${kind}Step`, spec);
  if (problems.length) return false;
  checked.add(spec);
  return true;
}

/**
 * The spec of a step of kind `kind`, checked against the schema's definition of that kind (a
 * config is validated when it loads, so this fails only on a step built some other way, e.g.
 * by a test or a library caller: the error says what is wrong with it).
 */
export function specOf<K extends StepKindName>(step: Pick<StepConfig, 'name' | 'kind' | 'spec'>, kind: K): SpecByKind[K] {
  const spec: unknown = step.spec;
  if (step.kind === kind && isSpec(kind, spec)) return kind === 'run' ? (withInstructions(spec as SpecByKind['run']) as SpecByKind[K]) : spec;
  const problems = step.kind === kind ? definitionProblems('bench.config.schema.json', `${kind}Step`, spec) : [`its kind is ${step.kind}, not ${kind}`];
  throw new Error(`step "${step.name}" is not a valid ${kind} step: ${problems.join('; ')}`);
}

const withInstructionsMemo = new WeakMap<object, SpecByKind['run']>();

/**
 * A run spec with each arm's `instructions:` as an entry of its files at the agent's own
 * instruction file (its adapter's `instructionFile`): every reader of an arm's files (staging,
 * keys, certify's surfaces, delivery, audit) sees where it is delivered. An entry of `files`
 * at that path wins; an adapter with no instruction file leaves it out (run's check refuses it).
 */
function withInstructions(spec: SpecByKind['run']): SpecByKind['run'] {
  const known = withInstructionsMemo.get(spec);
  if (known) return known;
  const dest = agentAdapters.get(spec.agent.adapter)?.instructionFile;
  const arms = Object.entries(spec.arms ?? {});
  const resolved =
    dest && arms.some(([, a]) => a.instructions !== undefined)
      ? {
          ...spec,
          arms: Object.fromEntries(
            arms.map(([name, a]) => [name, a.instructions === undefined ? a : { ...a, files: { [dest]: a.instructions, ...(a.files ?? {}) } }]),
          ),
        }
      : spec;
  withInstructionsMemo.set(spec, resolved);
  return resolved;
}

/** The spec of `step` when it is of kind `kind`, else undefined (for code that reads a neighbour step it did not choose). */
export function specIf<K extends StepKindName>(step: Pick<StepConfig, 'name' | 'kind' | 'spec'> | undefined, kind: K): SpecByKind[K] | undefined {
  return step?.kind === kind ? specOf(step, kind) : undefined;
}

// Every kind of SpecByKind once: a kind left out, or one too many, is a compile error.
const KIND_NAMES: Record<StepKindName, true> = {
  command: true,
  context: true,
  materialize: true,
  environment: true,
  certify: true,
  run: true,
  verify: true,
  audit: true,
  judge: true,
  analyze: true,
  gate: true,
  export: true,
};

function isKindName(kind: string): kind is StepKindName {
  return Object.hasOwn(KIND_NAMES, kind);
}

/** The spec of `step`, whatever its kind (checked against that kind's definition): read a field several kinds share with `'tasks' in spec`. */
export function anySpecOf(step: Pick<StepConfig, 'name' | 'kind' | 'spec'>): SpecByKind[StepKindName] {
  if (!isKindName(step.kind)) throw new Error(`step "${step.name}" has no kind pairbench knows (${step.kind})`);
  return specOf(step, step.kind);
}
