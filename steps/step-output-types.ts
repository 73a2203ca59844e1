/**
 * The JSON outputs one step kind reads from another, by type. scripts/compile-schemas.mjs
 * generates schemas/step-outputs.schema.json from this interface (one definition per field,
 * named after its type) and compiles their validators; each producer's descriptor checks what
 * a reader parsed against its definition (steps/step-output-checks.ts). A new JSON output a
 * consumer reads gets its type here. Types only.
 */
import type { AtifTrajectory } from '../agents/adapter.js';
import type { CertificationReceipt } from './certify.js';
import type { BuiltEnvironment } from './environment.js';
import type { RedactionReceipt } from './materialize.js';
import type { LookDecision, NotRunRecord } from './not-run.js';
import type { RunResult } from './run-result.js';
import type { CanaryRecord } from './verifier-canary.js';
import type { Judgement } from './judge.js';
import type { VerifierVerdict } from './verifier-verdict.js';

export interface StepOutputTypes {
  RunResult: RunResult;
  AtifTrajectory: AtifTrajectory;
  VerifierVerdict: VerifierVerdict;
  BuiltEnvironment: BuiltEnvironment;
  RedactionReceipt: RedactionReceipt;
  CanaryRecord: CanaryRecord;
  LookDecision: LookDecision;
  NotRunRecord: NotRunRecord;
  Judgement: Judgement;
  CertificationReceipt: CertificationReceipt;
}
