export type * from './types.js';
export { analyze, analyzeChecked } from './analyze.js';
export {
  DEFAULT_SPEC,
  DEFAULT_WEIGHTS,
  DEFAULT_BOOTSTRAP,
  DEFAULT_CONFIDENCE,
  DEFAULT_POWER,
  DEFAULT_VALIDITY_FLOOR,
  DEFAULT_INFRA_ERROR_THRESHOLD,
  defaultSpec,
  checkSpec,
  type SpecProblem,
} from './spec.js';
export { mcnemarExactP, signTestP, holm } from './exact-tests.js';
export { passAtK, passHatK } from './pass-at-k.js';
export { ENVELOPE_FORMULA, MDE_FORMULA } from './envelope.js';
export { formatRatio, outcomeLabel } from './outcomes.js';
