/**
 * What a step's JSON output must be, for the descriptors that readers parse it through: the
 * schema generated from its type (steps/step-output-types.ts -> schemas/step-outputs.schema.json).
 * The definition is named by its type's name (a string, not a key of StepOutputTypes: that type
 * imports the producers, which import this); a name the schema lacks is an error at the first check.
 */
import { definitionChecks } from '../pipeline/prebuilt-validators.js';

/** What is wrong with a parsed output that should hold the named type ([] when it does). */
export const stepOutputProblems: (definition: string) => (value: unknown) => string[] = definitionChecks(
  'step-outputs.schema.json',
  'step-output-validators.generated.cjs',
);
