import type { StepKindRegistry } from '../pipeline/step-kind.js';
import { commandStep } from './command.js';

/** Built-in step kinds by name. Adding one: a module here plus its schema in schemas/. */
export const builtinStepKinds: StepKindRegistry = new Map([[commandStep.name, commandStep]]);
