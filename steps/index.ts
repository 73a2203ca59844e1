import type { StepKindRegistry } from '../pipeline/step-kind.js';
import { certifyStep } from './certify.js';
import { commandStep } from './command.js';
import { materializeStep } from './materialize.js';
import { runStep } from './run.js';
import { verifyStep } from './verify.js';

/** Built-in step kinds by name. Adding one: a module here plus its schema in schemas/. */
export const builtinStepKinds: StepKindRegistry = new Map([commandStep, materializeStep, certifyStep, runStep, verifyStep].map((k) => [k.name, k]));
