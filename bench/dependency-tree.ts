/**
 * A dependency tree as `npm install` leaves one in a checkout: packages under node_modules (one
 * in ten scoped), each with the files npm writes, every one saying what certify must not call a
 * leak in code the agent did not write: "benchmark", "canary", "SWE-bench", the verifier's test
 * name and the name of the package under test. The certify bench and its test build it.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** Files per package: package.json, README.md, index.js, LICENSE, CHANGELOG.md and lib/part-{0..4}.js. */
export const FILES_PER_PACKAGE = 10;

export function installDependencies(repo: string, o: { packages: number; packageName: string; testName: string }): void {
  for (let p = 0; p < o.packages; p++) {
    const name = p % 10 === 0 ? `@scope/dep-${p}` : `dep-${p}`;
    const files: Record<string, string> = {
      'package.json': JSON.stringify(
        {
          name,
          version: '1.0.0',
          keywords: ['canary', 'benchmark', o.packageName],
          description: `${o.packageName} helpers; ${o.testName} with SWE-bench style harnesses (${p})`,
        },
        null,
        2,
      ),
      'README.md': `# ${name}\n\nSee the benchmark: it beats the evaluation harness. Works with ${o.packageName} and hidden tests.\n`,
      'index.js': `'use strict';\n// benchmark ${p}\nmodule.exports = require('./lib/part-0.js');\n`,
      LICENSE: `MIT License ${p}\n`,
      'CHANGELOG.md': `## 1.0.0\n- canary release ${p}\n`,
    };
    for (let f = 0; f < 5; f++) files[`lib/part-${f}.js`] = `exports.part${f} = function ${o.testName}_${f}() { return ${p * 10 + f}; }; // terminal bench\n`;
    for (const [path, text] of Object.entries(files)) {
      const abs = join(repo, 'node_modules', name, path);
      mkdirSync(dirname(abs), { recursive: true });
      writeFileSync(abs, text);
    }
  }
}
