import { execFileSync, spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { schemasDigest } from '../pipeline/config/schema-validate.js';

// The config validators are compiled at build time; a schema edited without recompiling
// them must be caught here (at run time pipeline falls back to compiling, still correct).
const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

describe('prebuilt schema validators', () => {
  it('schemas/validators.generated.cjs was made from the schemas as they are', () => {
    const r = spawnSync(process.execPath, [join(ROOT, 'scripts', 'compile-schemas.mjs'), '--check'], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    const digest = execFileSync(
      process.execPath,
      ['-e', `console.log(require(${JSON.stringify(join(ROOT, 'schemas', 'validators.generated.cjs'))}).schemasDigest)`],
      { encoding: 'utf8' },
    ).trim();
    expect(digest).toBe(schemasDigest());
  });
});

describe("a step kind's spec, typed by the schema", () => {
  // steps/config-types.generated.ts is made from the same definitions the validators check;
  // specOf is the only way a step kind reads its spec, so a spec the schema refuses never
  // reaches a step typed as valid.
  it('specOf returns a valid spec and names what is wrong with an invalid one', async () => {
    const { specOf, anySpecOf } = await import('../steps/step-spec.js');
    const good = { name: 'report', kind: 'export', spec: { kind: 'export', cohort: 'main' } };
    expect(specOf(good, 'export').cohort).toBe('main');
    expect(anySpecOf(good)).toBe(good.spec);
    expect(() => specOf({ name: 'report', kind: 'export', spec: { kind: 'export', cohort: 3 } }, 'export')).toThrow(
      'step "report" is not a valid export step: /cohort must be string',
    );
    expect(() => specOf({ name: 'report', kind: 'export', spec: { kind: 'export', colour: 'red' } }, 'export')).toThrow(
      'step "report" is not a valid export step: / must NOT have additional properties',
    );
    expect(() => specOf(good, 'run')).toThrow('step "report" is not a valid run step: its kind is export, not run');
    expect(() => anySpecOf({ name: 'x', kind: 'teleport', spec: {} })).toThrow('step "x" has no kind pairbench knows (teleport)');
  });
});
