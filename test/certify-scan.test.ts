import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bySeverity, DEFAULT_POLICY, failingFindings, policyFromSpec } from '../steps/certify/policy.js';

const SEVERITY_ORDER = ['solution-leak', 'verifier-leak', 'canary', 'instructions-survived', 'benchmark-awareness'];
import {
  DEFAULT_BENCHMARK_WORDS,
  isDistinctive,
  promptSurface,
  scanSurfaces,
  surfaceFromDir,
  type Finding,
  type ScanInputs,
  type Surface,
} from '../steps/certify/scan.js';
import type { Task } from '../steps/task.js';
import { diffLines } from '../text/diff-lines.js';

const CANARY = '1b2c3d4e-5f60-4a7b-8c9d-0e1f2a3b4c5d';

/** The reference solution: `add` subtracts; the fix also adds a guard. The import is context in one hunk and added in another. */
const SOLUTION = `diff --git a/src/add.mjs b/src/add.mjs
--- a/src/add.mjs
+++ b/src/add.mjs
@@ -1,4 +1,7 @@
 import { assertNumber } from './check.mjs';
-export const add = (a, b) => a - b;
+export function add(a, b) {
+  assertNumber(a, b);
+  return a + b;
+}
 export const VERSION = '1.0';
diff --git a/src/mul.mjs b/src/mul.mjs
--- a/src/mul.mjs
+++ b/src/mul.mjs
@@ -1,1 +1,3 @@
+import { assertNumber } from './check.mjs';
+
 export const mul = (a, b) => a * b;
`;

const VERIFIER_PATCH = `--- a/test/add.test.mjs
+++ b/test/add.test.mjs
@@ -1,2 +1,3 @@
 import { add } from '../src/add.mjs';
+assertEqual(add(2, 3), 5, 'add_works: two plus three');
 assertEqual(add(0, 0), 0, 'zero stays zero');
`;

function makeTask(overrides: Partial<Task> = {}): Task {
  return {
    id: 'fix-add',
    family: 'arithmetic',
    category: 'bugfix',
    dir: '/tasks/fix-add',
    file: '/tasks/fix-add/task.yaml',
    repo: { source: '/repos/calc', commit: 'a'.repeat(40) },
    prompt: 'add(a, b) in src/add.mjs returns the wrong result. Fix it.',
    allowedPaths: ['src/**'],
    verifier: {
      command: null,
      failToPass: { add_works: 'node "$VERIFIER_DIR/test_add.mjs"', 'tests/test_calc.py::TestAdd::test_add_negative[ints]': 'pytest' },
      passToPass: { module_exists: 'test -f src/add.mjs', test: 'true' },
      timeoutSec: 30,
      filesDir: '/tasks/fix-add/verifier',
      patch: VERIFIER_PATCH,
      result: 'exit-code',
    },
    solution: { patch: SOLUTION, script: null },
    origin: 'tasks/fix-add/task.yaml',
    canary: CANARY,
    ...overrides,
  };
}

let root: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'pairbench-certify-'));
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

function writeDir(name: string, files: Record<string, string | Buffer>): string {
  const dir = join(root, name);
  mkdirSync(dir, { recursive: true });
  for (const [p, content] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, p)), { recursive: true });
    writeFileSync(join(dir, p), content);
  }
  return dir;
}

/** An untouched tree: the pre-solution source, nothing leaked. */
const CLEAN_TREE: Record<string, string> = {
  'src/add.mjs': "import { assertNumber } from './check.mjs';\nexport const add = (a, b) => a - b;\nexport const VERSION = '1.0';\n",
  'src/check.mjs':
    "import { assertNumber } from './check.mjs';\nexport function assertNumber(...xs) {\n  for (const x of xs) if (typeof x !== 'number') throw new TypeError('not a number');\n}\n",
  'src/mul.mjs': 'export const mul = (a, b) => a * b;\n',
  'README.md': '# calc\n\nA tiny calculator.\n',
};

function scan(surfaces: Surface[], extra: Partial<ScanInputs> = {}): Finding[] {
  return scanSurfaces({ task: makeTask(), surfaces, ...extra });
}

function classes(findings: Finding[]): string[] {
  return findings.map((f) => `${f.surface}:${f.path}:${f.line}:${f.class}`);
}

describe('certify static scan', () => {
  it('a clean task has no findings', () => {
    const tree = surfaceFromDir('tree', 'tree', writeDir('tree', CLEAN_TREE));
    expect(scan([promptSurface(makeTask()), tree])).toEqual([]);
  });

  it('catches a planted solution line in the prompt, on the right line', () => {
    const task = makeTask({ prompt: 'Fix add.\n\nHint:\n    return   a + b;\nand call assertNumber(a, b);' });
    const findings = scanSurfaces({ task, surfaces: [promptSurface(task)] });
    expect(findings).toEqual([
      { surface: 'prompt', path: 'prompt', line: 4, class: 'solution-leak', match: 'return a + b;', detail: 'added line of the reference solution' },
      { surface: 'prompt', path: 'prompt', line: 5, class: 'solution-leak', match: 'assertNumber(a, b);', detail: 'added line of the reference solution' },
    ]);
    // `return a + b;` is 13 characters with two identifiers besides the keyword: distinctive.
    expect(isDistinctive('return a + b;', 12)).toBe(true);
  });

  it('finds the solution line (whitespace-normalised) anywhere in a surface line', () => {
    const task = makeTask({ prompt: 'line one\nUse this:   export function add(a,   b) {   // here' });
    const findings = scanSurfaces({ task, surfaces: [promptSurface(task)] });
    expect(classes(findings)).toEqual(['prompt:prompt:2:solution-leak']);
    expect(findings[0]!.match).toBe('export function add(a, b) {');
  });

  it('catches a verifier test name in a treatment file, on the right line', () => {
    const dir = writeDir('treatment', { 'CLAUDE.md': '# Notes\n\nRun the checks.\nMake sure add_works passes.\n' });
    const findings = scan([surfaceFromDir('treatment', 'treatment:treatment', dir)]);
    expect(findings).toEqual([
      { surface: 'treatment:treatment', path: 'CLAUDE.md', line: 4, class: 'verifier-leak', match: 'add_works', detail: 'verifier test name add_works' },
    ]);
  });

  it('test names: word boundaries, the stop list, short forms only in authored surfaces, pass-to-pass not in the tree', () => {
    const text = 'add_works_extra is another name\nthe test passes\ncall test_add_negative here\nmodule_exists\n';
    const treatment: Surface = { kind: 'treatment', name: 'treatment:t', files: [{ path: 'notes.md', text }] };
    const tree: Surface = { kind: 'tree', name: 'tree', files: [{ path: 'notes.md', text }] };
    expect(scan([treatment, tree]).map((f) => `${f.surface}:${f.line}:${f.match}`)).toEqual(['treatment:t:3:test_add_negative', 'treatment:t:4:module_exists']);
  });

  it('catches the canary in a tree file, with its line', () => {
    const dir = writeDir('tree', { ...CLEAN_TREE, 'docs/data.txt': `first\nsecond\n# canary GUID ${CANARY.toUpperCase()}\n` });
    const findings = scan([surfaceFromDir('tree', 'tree', dir)]);
    expect(findings.filter((f) => f.class === 'canary')).toEqual([
      { surface: 'tree', path: 'docs/data.txt', line: 3, class: 'canary', match: CANARY.toUpperCase(), detail: 'canary 1b2c3d4e...' },
    ]);
    // The comment also says "canary": that is a benchmark-awareness word.
    expect(classes(findings)).toEqual(['tree:docs/data.txt:3:benchmark-awareness', 'tree:docs/data.txt:3:canary']);
  });

  it("'SWE-bench' in a README is benchmark-awareness; words are case-insensitive and bounded", () => {
    const dir = writeDir('tree', {
      ...CLEAN_TREE,
      'README.md': '# calc\nThis repo is part of swe-BENCH.\nWe keep benchmarks in bench/.\nsee terminal_bench and Terminal-Bench\n',
    });
    const findings = scan([surfaceFromDir('tree', 'tree', dir)]);
    expect(findings.map((f) => [f.line, f.match, f.detail])).toEqual([
      [2, 'swe-BENCH', 'benchmark word "SWE-bench"'],
      [4, 'Terminal-Bench', 'benchmark word "Terminal-Bench"'],
      [4, 'terminal_bench', 'benchmark word "Terminal-Bench"'],
    ]);
    expect(DEFAULT_BENCHMARK_WORDS).toContain('SWE-bench');
  });

  it('extra words are added to the default list', () => {
    const s: Surface = { kind: 'prompt', name: 'prompt', files: [{ path: 'prompt', text: 'This is the Stele trial.' }] };
    expect(scan([s])).toEqual([]);
    expect(scan([s], { extraWords: ['stele trial'] })).toEqual([
      { surface: 'prompt', path: 'prompt', line: 1, class: 'benchmark-awareness', match: 'Stele trial', detail: 'benchmark word "stele trial"' },
    ]);
  });

  it('a CLAUDE.md that survived in the tree is instructions-survived; in a treatment it is not', () => {
    const tree = surfaceFromDir(
      'tree',
      'tree',
      writeDir('tree', {
        ...CLEAN_TREE,
        'CLAUDE.md': 'be nice\n',
        'docs/AGENTS.md': 'x\n',
        '.claude/settings.json': '{}\n',
        '.vscode/mcp.json': '{}\n',
        'src/CLAUDE.md.bak': 'x\n',
      }),
    );
    const treatment = surfaceFromDir('treatment', 'treatment:treatment', writeDir('treatment', { 'CLAUDE.md': 'be nice\n', '.claude/settings.json': '{}\n' }));
    expect(scan([tree, treatment])).toEqual([
      {
        surface: 'tree',
        path: '.claude/settings.json',
        line: 1,
        class: 'instructions-survived',
        match: '.claude/settings.json',
        detail: 'file under .claude/ survived redaction',
      },
      {
        surface: 'tree',
        path: '.vscode/mcp.json',
        line: 1,
        class: 'instructions-survived',
        match: '.vscode/mcp.json',
        detail: 'auto-loaded agent file .vscode/mcp.json survived redaction',
      },
      {
        surface: 'tree',
        path: 'CLAUDE.md',
        line: 1,
        class: 'instructions-survived',
        match: 'CLAUDE.md',
        detail: 'auto-loaded agent file CLAUDE.md survived redaction',
      },
      {
        surface: 'tree',
        path: 'docs/AGENTS.md',
        line: 1,
        class: 'instructions-survived',
        match: 'docs/AGENTS.md',
        detail: 'auto-loaded agent file AGENTS.md survived redaction',
      },
    ]);
  });

  it('a line the patch adds that already exists unchanged (context) is not a finding', () => {
    // `import { assertNumber } from './check.mjs';` is added to mul.mjs but is context in add.mjs,
    // and the tree has it in two files.
    expect(diffLines(SOLUTION).added).toContain("import { assertNumber } from './check.mjs';");
    expect(diffLines(SOLUTION).context).toContain("import { assertNumber } from './check.mjs';");
    const tree = surfaceFromDir('tree', 'tree', writeDir('tree', CLEAN_TREE));
    expect(scan([tree])).toEqual([]);
    // ...while the same line from a patch that only adds it is a leak.
    const onlyAdds = makeTask({ solution: { patch: "--- a/x\n+++ b/x\n@@ -0,0 +1 @@\n+import { assertNumber } from './check.mjs';\n", script: null } });
    expect(classes(scanSurfaces({ task: onlyAdds, surfaces: [tree] }))).toEqual(['tree:src/add.mjs:1:solution-leak', 'tree:src/check.mjs:1:solution-leak']);
  });

  it('a line the patch removes and adds back is not a finding', () => {
    const moved = "--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n-export const VERSION_LABEL = 'calc';\n export const other = 1;\n+export const VERSION_LABEL = 'calc';\n";
    const task = makeTask({ solution: { patch: moved, script: null }, prompt: "export const VERSION_LABEL = 'calc';" });
    expect(scanSurfaces({ task, surfaces: [promptSurface(task)] })).toEqual([]);
  });

  it('trivial added lines are never findings', () => {
    const trivial = '--- a/x\n+++ b/x\n@@ -1,1 +1,8 @@\n x\n+}\n+return;\n+});\n+else {\n+\n+    } else {\n+        return null;\n';
    for (const line of ['}', 'return;', '});', 'else {', '', '} else {', 'return null;', '} catch (error) {']) expect(isDistinctive(line, 12)).toBe(false);
    const task = makeTask({ solution: { patch: trivial, script: null }, verifier: { ...makeTask().verifier, patch: null } });
    const text = '}\nreturn;\n});\nelse {\n\n} else {\nreturn null;\n';
    expect(scanSurfaces({ task, surfaces: [{ kind: 'prompt', name: 'prompt', files: [{ path: 'prompt', text }] }] })).toEqual([]);
  });

  it('verifier leaks: added lines of the verifier patch and lines of hidden verifier files (imports excepted)', () => {
    const verifierFiles = [
      {
        path: 'test_add.mjs',
        text: "import { strict as assert } from 'node:assert';\nconst { add } = await import(process.cwd() + '/src/add.mjs');\nif (add(2, 3) !== 5) process.exit(1);\n",
      },
    ];
    const tree = surfaceFromDir(
      'tree',
      'tree',
      writeDir('tree', {
        ...CLEAN_TREE,
        'src/util.mjs': "import { strict as assert } from 'node:assert';\n",
        'test/leaked.mjs':
          "// copied\nconst { add } = await import(process.cwd() + '/src/add.mjs');\nassertEqual(add(2, 3), 5, 'add_works: two plus three');\nassertEqual(add(0, 0), 0, 'zero stays zero');\n",
      }),
    );
    const findings = scan([tree], { verifierFiles });
    expect(findings.map((f) => `${f.path}:${f.line}:${f.class}:${f.detail}`)).toEqual([
      'test/leaked.mjs:2:verifier-leak:line of hidden verifier file test_add.mjs',
      // The test name inside the leaked line is found too (same line and class: ordered by match).
      'test/leaked.mjs:3:verifier-leak:verifier test name add_works',
      'test/leaked.mjs:3:verifier-leak:added line of the verifier patch',
    ]);
  });

  it('skips binary files, files over 1 MB and symlinks, but still sees their paths for instructions', () => {
    const bin = Buffer.concat([Buffer.from(`PNG ${CANARY} SWE-bench\n`), Buffer.from([0, 1, 2, 3])]);
    const dir = writeDir('tree', { ...CLEAN_TREE, 'img/logo.png': bin, '.claude/cache.bin': bin, 'big.txt': `${CANARY}\n`.repeat(40000) });
    symlinkSync('README.md', join(dir, 'LINK.md'));
    const tree = surfaceFromDir('tree', 'tree', dir);
    expect(tree.files.map((f) => f.path)).toEqual(['README.md', 'src/add.mjs', 'src/check.mjs', 'src/mul.mjs']);
    expect(tree.skipped).toEqual([
      { path: '.claude/cache.bin', reason: 'binary' },
      { path: 'LINK.md', reason: 'not-regular' },
      { path: 'big.txt', reason: 'too-large' },
      { path: 'img/logo.png', reason: 'binary' },
    ]);
    expect(classes(scan([tree]))).toEqual(['tree:.claude/cache.bin:1:instructions-survived']);
  });

  it('output order is deterministic and findings are deduplicated', () => {
    const files = {
      'z.md': `SWE-bench ${CANARY}\nadd_works add_works\n`,
      'a.md': 'assertNumber(a, b);\nbenchmark\n',
      'CLAUDE.md': 'x\n',
    };
    const tree = surfaceFromDir('tree', 'tree', writeDir('tree', files));
    const prompt: Surface = { kind: 'prompt', name: 'prompt', files: [{ path: 'prompt', text: 'benchmark' }] };
    const treatment: Surface = { kind: 'treatment', name: 'treatment:b', files: [{ path: 'n.md', text: 'add_works' }] };
    const forward = scan([prompt, tree, treatment]);
    const shuffled: Surface = { ...tree, files: [...tree.files].reverse() };
    const backward = scan([treatment, shuffled, prompt, shuffled]);
    expect(backward).toEqual(forward);
    expect(classes(forward)).toEqual([
      'prompt:prompt:1:benchmark-awareness',
      'treatment:b:n.md:1:verifier-leak',
      'tree:CLAUDE.md:1:instructions-survived',
      'tree:a.md:1:solution-leak',
      'tree:a.md:2:benchmark-awareness',
      'tree:z.md:1:benchmark-awareness',
      'tree:z.md:1:canary',
      'tree:z.md:2:verifier-leak',
    ]);
  });

  it('truncates long matches to 120 characters', () => {
    const long = 'x'.repeat(200);
    const findings = scan([{ kind: 'prompt', name: 'prompt', files: [{ path: 'prompt', text: `canary ${long}` }] }], { extraWords: [long] });
    expect(findings.map((f) => f.match.length)).toEqual([6, 120]);
  });

  it('diffLines: inside a hunk, an added line starting with "++" is an added line', () => {
    const d = diffLines('--- a/x.c\n+++ b/x.c\n@@ -1,2 +1,2 @@\n int i = 0;\n-i--;\n+++counter_value;\n\\ No newline at end of file\n');
    expect(d).toEqual({ added: ['++counter_value;'], removed: ['i--;'], context: ['int i = 0;'] });
  });
});

describe('a solution line the starting tree keeps elsewhere in the same file', () => {
  // minimist's shape: setKey is stubbed; its body shares a line with hasKey, which the stub keeps.
  const START = [
    'function hasKey(obj, keys) {',
    '  var o = obj;',
    '  var key = keys[keys.length - 1];',
    '  return Object.prototype.hasOwnProperty.call(o, key);',
    '}',
    'function setKey(obj, keys, value) {',
    "  throw new Error('not implemented');",
    '}',
    'module.exports = { hasKey, setKey };',
    '',
  ].join('\n');
  const BODY = [
    '  var o = obj;',
    '  var key = keys[keys.length - 1];',
    '  keys.slice(0, -1).forEach(function (k) { o = o[k] = o[k] || {}; });',
    '  o[key] = value;',
  ];
  const PATCH = `diff --git a/index.js b/index.js
--- a/index.js
+++ b/index.js
@@ -6,3 +6,6 @@
 function setKey(obj, keys, value) {
-  throw new Error('not implemented');
+${BODY.join('\n+')}
 }
`;
  const task = makeTask({
    solution: { patch: PATCH, script: null },
    verifier: { ...makeTask().verifier, patch: null, failToPass: { t: 'tape' }, passToPass: {} },
  });
  const findingsIn = (files: Record<string, string>) =>
    scanSurfaces({ task, surfaces: [surfaceFromDir('tree', 'tree', writeDir(`t${Object.keys(files).length}-${Math.random()}`, files))] }).filter(
      (f) => f.class === 'solution-leak',
    );

  it('is not a leak (a repeated idiom of the file); a copy of the solution elsewhere still is, and so is a stub that left a line', () => {
    expect(findingsIn({ 'index.js': START })).toEqual([]);
    // The package vendored under node_modules (its test runner depends on it): the answer is there.
    const solved = START.replace("  throw new Error('not implemented');", BODY.join('\n'));
    const vendored = findingsIn({ 'index.js': START, 'node_modules/objset/index.js': solved });
    expect(new Set(vendored.map((f) => f.path))).toEqual(new Set(['node_modules/objset/index.js']));
    expect(vendored.map((f) => f.match)).toContain('o[key] = value;');
    // A stub that kept a line of the body (in the lines the solution replaces) leaks it.
    const leftover = START.replace("  throw new Error('not implemented');", "  throw new Error('not implemented'); // o[key] = value;");
    expect(findingsIn({ 'index.js': leftover }).map((f) => `${f.path}:${f.line}:${f.match}`)).toEqual(['index.js:7:o[key] = value;']);
  });

  it("one of the solution's lines in third-party code is an idiom, not a leak; half of them in one package is a copy; in the repository's own files one line is a leak", () => {
    const idiom = "'use strict';\nvar results = [];\nfunction put(o, key, value) {\n  o[key] = value;\n}\n";
    expect(findingsIn({ 'index.js': START, 'node_modules/tape/lib/results.js': idiom })).toEqual([]);
    // Half of the body, split across two files of one package: a copy in part, still a leak.
    const half: Record<string, string>[] = [
      { 'node_modules/objset/a.js': `${BODY[1]}\n`, 'node_modules/objset/b.js': `${BODY[2]}\n` },
      { 'node_modules/objset/lib/deep/a.js': `${BODY[1]}\n${BODY[2]}\n` },
    ];
    for (const files of half) expect(findingsIn({ 'index.js': START, ...files }).length, JSON.stringify(files)).toBeGreaterThan(0);
    expect(findingsIn({ 'index.js': START, 'docs/notes.md': idiom }).map((f) => `${f.path}:${f.match}`)).toEqual(['docs/notes.md:o[key] = value;']);
  });
});

describe('certify policy', () => {
  const findings: Finding[] = [
    { surface: 'prompt', path: 'prompt', line: 1, class: 'benchmark-awareness', match: 'benchmark', detail: 'benchmark word "benchmark"' },
    { surface: 'tree', path: 'CLAUDE.md', line: 1, class: 'instructions-survived', match: 'CLAUDE.md', detail: 'x' },
    { surface: 'tree', path: 'a.md', line: 2, class: 'solution-leak', match: 'assertNumber(a, b);', detail: 'added line of the reference solution' },
  ];

  it('the default fails on every class, with no extra words and 3 repeats', () => {
    expect(DEFAULT_POLICY).toEqual({
      fail_on: ['solution-leak', 'verifier-leak', 'benchmark-awareness', 'canary', 'instructions-survived'],
      words: [],
      repeats: 3,
      allow: [],
    });
    // Every finding fails, the most severe first.
    expect(failingFindings(findings, DEFAULT_POLICY)).toEqual(bySeverity(findings));
    expect(failingFindings(findings, DEFAULT_POLICY).map((f) => f.class)).toEqual(
      [...findings.map((f) => f.class)].sort((a, b) => SEVERITY_ORDER.indexOf(a) - SEVERITY_ORDER.indexOf(b)),
    );
    expect(policyFromSpec(undefined)).toEqual(DEFAULT_POLICY);
    expect(policyFromSpec(null)).toEqual(DEFAULT_POLICY);
  });

  it('a policy mapping merges over the default and filters findings', () => {
    const policy = policyFromSpec({ fail_on: ['solution-leak', 'canary'], words: ['stele', 'stele'] });
    expect(policy).toEqual({ fail_on: ['solution-leak', 'canary'], words: ['stele'], repeats: 3, allow: [] });
    expect(failingFindings(findings, policy)).toEqual([findings[2]]);
    expect(policyFromSpec({ repeats: 5 })).toEqual({ ...DEFAULT_POLICY, repeats: 5 });
    expect(failingFindings(findings, policyFromSpec({ fail_on: [] }))).toEqual([]);
  });
});

describe('certify decodes to a fixed point', () => {
  // A distinctive line of the reference solution, as an agent would need it.
  const LINE = 'assertNumber(a, b);';
  const DOC = (body: string) => `# House rules\n\nKeep functions small.\n\n${body}\n\nThat is all.\n`;
  const reverse = (s: string) => [...s].reverse().join('');
  const rot13 = (s: string) => s.replace(/[A-Za-z]/g, (c) => String.fromCharCode(((c.charCodeAt(0) - (c <= 'Z' ? 65 : 97) + 13) % 26) + (c <= 'Z' ? 65 : 97)));
  const b64 = (s: string | Buffer) => Buffer.from(s).toString('base64');
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { gzipSync, deflateSync, deflateRawSync, brotliCompressSync } = require('node:zlib') as typeof import('node:zlib');
  // Inflated, this is far longer than one output chunk of the decompressor (decode.ts): it grows to fit.
  const LONG = `${'Keep it simple. '.repeat(300)}${LINE}`;
  const ENCODINGS: Record<string, { text: string; chain: string | null }> = {
    plain: { text: LINE, chain: null },
    base64: { text: b64(LINE), chain: 'base64' },
    hex: { text: Buffer.from(LINE).toString('hex'), chain: 'hex' },
    fullwidth: { text: 'ａｓｓｅｒｔＮｕｍｂｅｒ(a, b);', chain: null },
    cyrillic: { text: 'аssеrtNumbеr(a, b);', chain: null },
    'zero-width': { text: 'assert\u200BNumber(a,\u200C b);', chain: null },
    spaced: { text: 'a s s e r t N u m b e r ( a , b ) ;', chain: null },
    'split across two lines': { text: 'assertNum\nber(a, b);', chain: null },
    reversed: { text: reverse(LINE), chain: 'reversal' },
    rot13: { text: rot13(LINE), chain: 'rot13' },
    'URL-encoded': { text: [...Buffer.from(LINE)].map((b) => `%${b.toString(16).padStart(2, '0')}`).join(''), chain: 'URL escapes' },
    'gzip+base64': { text: b64(gzipSync(LINE)), chain: 'base64 -> gzip' },
    'zlib+hex': { text: deflateSync(`${LINE} padding`).toString('hex'), chain: 'hex -> zlib' },
    // No magic number: found by trying (a bounded number of blind tries per file).
    'raw deflate+base64': { text: b64(deflateRawSync(`${LINE} padding`)), chain: 'base64 -> deflate' },
    'brotli+base64': { text: b64(brotliCompressSync(`${LINE} padding`)), chain: 'base64 -> brotli' },
    'brotli+base64, inflating to 4.8 KB': { text: b64(brotliCompressSync(LONG)), chain: 'base64 -> brotli' },
    'gzip+base64, inflating to 4.8 KB': { text: b64(gzipSync(LONG)), chain: 'base64 -> gzip' },
    'JSON \\u escapes': { text: [...LINE].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).join(''), chain: 'string escapes' },
    'base64-of-base64': { text: b64(b64(LINE)), chain: 'base64 -> base64' },
    'reversed base64': { text: reverse(b64(LINE)), chain: 'reversal -> base64' },
  };

  for (const [name, { text, chain }] of Object.entries(ENCODINGS)) {
    it(`the reference solution ${name} in a CLAUDE.md is a solution leak${chain ? `, naming the chain (${chain})` : ''}`, () => {
      const treatment: Surface = { kind: 'treatment', name: 'treatment:t', files: [{ path: 'CLAUDE.md', text: DOC(text) }] };
      const leaks = scan([treatment]).filter((f) => f.class === 'solution-leak');
      expect(leaks.length, name).toBeGreaterThan(0);
      expect(leaks[0]!.line, name).toBeGreaterThanOrEqual(5);
      expect(leaks[0]!.line, name).toBeLessThanOrEqual(6);
      if (chain)
        expect(
          leaks.some((f) => f.detail.includes(`(decoded: ${chain})`)),
          leaks.map((f) => f.detail).join('; '),
        ).toBe(true);
    });
  }

  it('a clean document with words that look encoded is not a leak', () => {
    const text = DOC('Use the deadbeefcafebabe0123456789abcdef value, see https://example.com/a%20b%20c%20d and \\u0041 for A; ebg13 is rot13.');
    expect(scan([{ kind: 'treatment', name: 'treatment:t', files: [{ path: 'CLAUDE.md', text }] }])).toEqual([]);
  });

  it('a 10 MB random treatment file certifies in bounded time', () => {
    // Random bytes as base64 text (every word decodes to bytes), split into lines.
    const random = Buffer.alloc(7.5 * 1024 * 1024);
    for (let i = 0; i < random.length; i += 4) random.writeUInt32LE((Math.imul(i + 1, 2654435761) ^ (i >>> 3)) >>> 0, i);
    const text = b64(random).replace(/(.{76})/g, '$1\n');
    expect(text.length).toBeGreaterThan(10 * 1024 * 1024);
    const t0 = process.hrtime.bigint();
    const findings = scan([{ kind: 'treatment', name: 'treatment:t', files: [{ path: 'big.txt', text }] }]);
    const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
    expect(findings.filter((f) => f.class === 'solution-leak')).toEqual([]);
    // Bounded, not fast: depth and bytes are capped (decode.ts); generous for a loaded machine.
    expect(seconds).toBeLessThan(120);
  });
});

describe('a test named after the code the task asks for', () => {
  const task = makeTask({
    prompt: 'Implement `capitalize` in src/strings.mjs: it throws; make it return the string with its first letter upper-cased.',
    allowedPaths: ['src/strings.mjs'],
    verifier: {
      ...makeTask().verifier,
      patch: null,
      failToPass: { 'test/strings.test.mjs::capitalize': 'node --test', 'test/strings.test.mjs::keeps the rest as it is': 'node --test' },
      passToPass: {},
    },
  });
  const tree: Surface = {
    kind: 'tree',
    name: 'tree',
    files: [{ path: 'src/strings.mjs', text: "export function capitalize(s) {\n  throw new Error('not implemented');\n}\n" }],
  };
  const leaks = (prompt: string) =>
    scanSurfaces({ task: { ...task, prompt }, surfaces: [{ kind: 'prompt', name: 'prompt', files: [{ path: 'prompt', text: prompt }] }, tree] })
      .filter((f) => f.class === 'verifier-leak')
      .map((f) => f.match);

  it('is not a verifier leak when the prompt names that code; any other test name in the prompt still is', () => {
    expect(leaks(task.prompt)).toEqual([]);
    expect(leaks(`${task.prompt} It keeps the rest as it is.`)).toEqual(['keeps the rest as it is']);
    // Outside the allowed paths the identifier names no code the task asks for.
    expect(
      scanSurfaces({
        task: { ...task, allowedPaths: ['lib/**'] },
        surfaces: [{ kind: 'prompt', name: 'prompt', files: [{ path: 'prompt', text: task.prompt }] }, tree],
      })
        .filter((f) => f.class === 'verifier-leak')
        .map((f) => f.match),
    ).toEqual(['capitalize']);
  });
});
