/**
 * certify on a repository as a user's checkout has it: its dependencies installed into the tree
 * (node_modules full of READMEs that say "benchmark" and package.json files that say "canary"),
 * its own idioms repeated across files. What the agent could not have written is not awareness
 * evidence, and a line the tree already carries in several files is not a leak; a copy of the
 * answer, or the task's canary, is found wherever it is. What remains comes with the allow
 * entries that would accept it, and those entries accept exactly it.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { allowedBy, allowEntriesFor, policyFromSpec } from '../steps/certify/policy.js';
import { scanSurfaces, surfaceFromDir, type Finding } from '../steps/certify/scan.js';
import type { Task } from '../steps/task.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

function tree(files: Record<string, string>) {
  const dir = mkdtempSync(join(tmpdir(), 'pairbench-third-party-'));
  dirs.push(dir);
  for (const [p, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, p)), { recursive: true });
    writeFileSync(join(dir, p), text);
  }
  return surfaceFromDir('tree', 'tree', dir);
}

const CANARY = 'canary-2b8e4f10-77aa-4c2e-9d31-5c6e0b9a1f42';
/** A reference solution that adds a CommonJS file (its first line the repository's idiom) and uses it. */
const SOLUTION = `--- /dev/null
+++ b/lib/word-count.js
@@ -0,0 +1,6 @@
+'use strict';
+
+function wordCount(text) {
+  return text.trim().split(/\\s+/).filter(Boolean).length;
+}
+module.exports = { wordCount: wordCount };
`;

function task(over: Partial<Task> = {}): Task {
  return {
    id: 'word-count',
    family: 'word-count',
    category: 'stub_function',
    prompt: 'wordCount(text) in lib/word-count.js is not written yet. Implement it.',
    allowedPaths: ['lib/**'],
    canary: CANARY,
    solution: { patch: SOLUTION, script: null },
    verifier: { failToPass: { counts_words: 'node test/word-count.test.js' }, passToPass: {}, patch: null, filesDir: null, timeoutSec: 30 },
    ...over,
  } as unknown as Task;
}

const ownFiles = (n: number) =>
  Object.fromEntries(Array.from({ length: n }, (_, i) => [`lib/part-${i}.js`, `'use strict';\n\nmodule.exports = { part: ${i} };\n`]));

describe('certify on a tree with its dependencies installed', () => {
  it("a line the tree carries in many files ('use strict';) is its idiom, not a leak; a copy of the answer in one file still is", () => {
    const clean = scanSurfaces({ task: task(), surfaces: [tree(ownFiles(18))] });
    expect(clean.filter((f) => f.class === 'solution-leak')).toEqual([]);
    const copied = scanSurfaces({
      task: task(),
      surfaces: [
        tree({
          ...ownFiles(18),
          'lib/legacy.js': "'use strict';\nfunction wordCount(text) {\n  return text.trim().split(/\\s+/).filter(Boolean).length;\n}\n",
        }),
      ],
    });
    expect(new Set(copied.filter((f) => f.class === 'solution-leak').map((f) => f.path))).toEqual(new Set(['lib/legacy.js']));
  });

  it("third-party trees' words are not awareness, nor their test-name look-alikes; a canary or a copy of the answer there still is", () => {
    const installed: Record<string, string> = {};
    for (let i = 0; i < 40; i++) {
      installed[`node_modules/dep-${i}/package.json`] = JSON.stringify({
        name: `dep-${i}`,
        keywords: ['canary', 'benchmark'],
        description: 'counts_words fast',
      });
      installed[`node_modules/dep-${i}/README.md`] = `# dep-${i}\n\nSee the benchmark: it beats SWE-bench-style harnesses.\n`;
    }
    installed['vendor/py/site-packages/tool/README.md'] = 'hidden tests evaluation harness\n';
    const quiet = scanSurfaces({ task: task(), surfaces: [tree({ ...ownFiles(2), ...installed })] });
    expect(quiet).toEqual([]);
    // The same words in the repository's own files are findings.
    const own = scanSurfaces({ task: task(), surfaces: [tree({ ...ownFiles(2), 'docs/notes.md': 'Our benchmark notes.\n' })] });
    expect(own.map((f) => `${f.path}:${f.class}`)).toEqual(['docs/notes.md:benchmark-awareness']);
    // The task's canary, or a vendored copy of the answer, under node_modules: found.
    const leaked = scanSurfaces({
      task: task(),
      surfaces: [
        tree({
          ...installed,
          'node_modules/dep-7/index.js': `// ${CANARY}\n`,
          'node_modules/word-count/index.js':
            'function wordCount(text) {\n  return text.trim().split(/\\s+/).filter(Boolean).length;\n}\nmodule.exports = { wordCount: wordCount };\n',
        }),
      ],
    });
    expect([...new Set(leaked.map((f) => `${f.path}:${f.class}`))].sort()).toEqual([
      'node_modules/dep-7/index.js:canary',
      'node_modules/word-count/index.js:solution-leak',
    ]);
  });

  it('the allow entries a rejection prints, pasted, accept exactly its findings', () => {
    const files: Record<string, string> = { 'docs/a.md': 'benchmark\n', 'docs/b.md': 'benchmark\n', 'README.md': 'a benchmark\n' };
    for (let i = 0; i < 6; i++) files[`notes/n${i}.md`] = 'hidden tests\n';
    const findings = scanSurfaces({ task: task(), surfaces: [tree(files)] });
    expect(findings.length).toBe(9);
    const entries = allowEntriesFor(findings);
    // Nine paths of one class: one entry per top-level directory (a file at the top by its name).
    expect(entries).toEqual([
      '- { path: "README.md", class: benchmark-awareness, surface: "tree", reason: "<why this is not a leak>" }',
      '- { path: "docs/**", class: benchmark-awareness, surface: "tree", reason: "<why this is not a leak>" }',
      '- { path: "notes/**", class: benchmark-awareness, surface: "tree", reason: "<why this is not a leak>" }',
    ]);
    const policy = policyFromSpec({ allow: parse(entries.join('\n')) });
    expect(findings.every((f: Finding) => allowedBy(f, policy))).toBe(true);
    // ...and nothing else: the same words in another file, or of another class, are not accepted.
    expect(allowedBy({ ...findings[0]!, path: 'src/x.md' }, policy)).toBeUndefined();
    expect(allowedBy({ ...findings[0]!, class: 'canary' }, policy)).toBeUndefined();
  });
});
