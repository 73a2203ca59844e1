export { generateStubFunctionTasks, type StubFunctionOptions } from './stub-function.js';
export { generateRevertTasks, type RevertOptions } from './revert-reimplement.js';
export { findJsFunctions, applyStub, type FunctionSpan } from './js-functions.js';
export { findPythonFunctions } from './python-functions.js';
export { seededOrder } from './seeded-order.js';
export type { DroppedCandidate, GenerateOptions, GenerateReport, Language, RevertTaskReport, StubTaskReport } from './types.js';
