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
