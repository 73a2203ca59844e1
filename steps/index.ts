import type { StepKindRegistry } from '../pipeline/step-kind.js';
import { analyzeStep } from './analyze-step.js';
import { auditStep } from './audit.js';
import { certifyStep } from './certify.js';
import { exportStep } from './export-step.js';
import { commandStep } from './command.js';
import { environmentStep } from './environment.js';
import { materializeStep } from './materialize.js';
import { runStep } from './run.js';
import { verifyStep } from './verify.js';

/** Built-in step kinds by name. Adding one: a module here plus its schema in schemas/. */
export const builtinStepKinds: StepKindRegistry = new Map([commandStep, materializeStep, environmentStep, certifyStep, runStep, verifyStep, auditStep, analyzeStep, exportStep].map((k) => [k.name, k]));
