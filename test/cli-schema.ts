import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv } from 'ajv';

// Every --json output validates against schemas/cli-output.schema.json, the published shapes.
const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const ajv = new Ajv({ allErrors: true, strict: false });
ajv.addSchema(JSON.parse(readFileSync(join(ROOT, 'schemas', 'cli-output.schema.json'), 'utf8')));

/** '' when `value` matches the definition (e.g. '#/definitions/plan'; '' for the whole schema), else what is wrong. */
export function cliOutputProblems(definition: string, value: unknown): string {
  const check = ajv.getSchema(`https://pairbench.dev/schemas/cli-output.schema.json${definition}`);
  if (!check) return `no definition ${definition} in cli-output.schema.json`;
  return check(value) ? '' : ajv.errorsText(check.errors);
}
