import type { StepKindRegistry } from '../pipeline/step-kind.js';
import { analyzeStep } from './analyze-step.js';
import { auditStep } from './audit.js';
import { certifyStep } from './certify.js';
import { exportStep } from './export-step.js';
import { commandStep } from './command.js';
import { contextStep } from './context.js';
import { gateStep } from './gate.js';
import { judgeStep } from './judge.js';
import { environmentStep } from './environment.js';
import { materializeStep } from './materialize.js';
import { runStep } from './run.js';
import { verifyStep } from './verify.js';

/**
 * Built-in step kinds by name. Adding one: a module here (its key, inputs and execution; its
 * title; `sandboxed` if its nodes start sandboxes; a `preflight` if it needs something of the
 * machine, which doctor runs) plus its schema in schemas/.
 */
export const builtinStepKinds: StepKindRegistry = new Map(
  [commandStep, contextStep, materializeStep, environmentStep, certifyStep, runStep, verifyStep, auditStep, judgeStep, analyzeStep, gateStep, exportStep].map(
    (k) => [k.name, k],
  ),
);
