import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { generateRevertTasks, generateStubFunctionTasks } from '../generators/index.js';
import { defaultTestEnv } from '../generators/common.js';
import { git } from './fixtures.js';
import { Rig } from './rig.js';

// The generators on a package as people write them: CommonJS, a tape suite run by
// `scripts.test = "tape test/*.js"`, repeated assertion messages, its test runner
// vendored in node_modules (the real tape, copied from this project's own install).
// No --test-command is given: the repository's own is used.
const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

let rig: Rig;
beforeEach(() => (rig = new Rig()));
afterEach(() => rig.cleanup());

/** A package and every package it depends on, copied from `from` (a flat node_modules) into `to`. */
function copyClosure(name: string, from: string, to: string, seen = new Set<string>()): void {
  if (seen.has(name)) return;
  seen.add(name);
  const src = join(from, name);
  if (!existsSync(src)) return; // an optional dependency not installed here
  cpSync(src, join(to, name), { recursive: true, verbatimSymlinks: true });
  const pkg = JSON.parse(readFileSync(join(src, 'package.json'), 'utf8')) as { dependencies?: Record<string, string> };
  for (const dep of Object.keys(pkg.dependencies ?? {})) copyClosure(dep, from, to, seen);
}

const INDEX_V1 = `'use strict';

function merge(target, source) {
  var out = Object.assign({}, target);
  for (var key in source) out[key] = source[key];
  return out;
}

function clone(value) {
  return JSON.parse(JSON.stringify(value));
}

module.exports = {
  merge: merge,
  clone: clone,
  keys: function (o) { return Object.keys(o).sort(); },
  isObject(x) { return x !== null && typeof x === 'object' && !Array.isArray(x); },
};
`;

/** The fix: merge must not copy __proto__ (prototype pollution). */
const INDEX_V2 = INDEX_V1.replace(
  '  for (var key in source) out[key] = source[key];',
  "  for (var key in source) if (key !== '__proto__' && key !== 'constructor') out[key] = source[key];",
);

const TESTS_V1: Record<string, string> = {
  'test/merge.js': `var test = require('tape');
var objkit = require('..');

test('merge combines two objects', function (t) {
  t.deepEqual(objkit.merge({ a: 1 }, { b: 2 }), { a: 1, b: 2 }, 'should be equal');
  t.deepEqual(objkit.merge({ a: 1 }, { a: 3 }), { a: 3 }, 'should be equal');
  t.end();
});

test('merge leaves its inputs alone', function (t) {
  var a = { x: 1 };
  objkit.merge(a, { y: 2 });
  t.deepEqual(a, { x: 1 }, 'should be equal');
  t.end();
});
`,
  'test/clone.js': `var test = require('tape');
var objkit = require('..');

test('clone copies deeply', function (t) {
  var o = { a: { b: 1 } };
  var c = objkit.clone(o);
  c.a.b = 2;
  t.equal(o.a.b, 1, 'should be equal');
  t.end();
});

test('keys are sorted', function (t) {
  t.deepEqual(objkit.keys({ b: 1, a: 2 }), ['a', 'b'], 'should be equal');
  t.end();
});

test('isObject', function (t) {
  t.ok(objkit.isObject({}), 'should be truthy');
  t.notOk(objkit.isObject([]), 'should be falsy');
  t.end();
});
`,
};

const PROTO_TEST = `var test = require('tape');
var objkit = require('..');

test('merge ignores __proto__', function (t) {
  var out = objkit.merge({}, JSON.parse('{"__proto__": {"polluted": true}}'));
  t.equal(out.polluted, undefined, 'should be equal');
  t.equal({}.polluted, undefined, 'should be equal');
  t.end();
});
`;

function write(root: string, files: Record<string, string>): void {
  for (const [p, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, p)), { recursive: true });
    writeFileSync(join(root, p), text);
  }
}

/**
 * The package's history: base; a docs commit; the __proto__ fix with its test; a version bump.
 * Its node_modules/.bin/tape appends each run (directory and file) to $OBJKIT_TAPE_LOG when set.
 */
function objkit(): { repo: string; commits: string[] } {
  const repo = join(rig.dir, 'repos', 'objkit');
  mkdirSync(repo, { recursive: true });
  git(repo, 'init', '-q', '-b', 'main');
  const pkg = (version: string) => JSON.stringify({ name: 'objkit', version, main: 'index.js', scripts: { test: 'tape test/*.js' } }, null, 2) + '\n';
  // The runner, vendored as a repository holding its dependencies would have it.
  const modules = join(repo, 'node_modules');
  copyClosure('tape', join(ROOT, 'node_modules'), modules);
  mkdirSync(join(modules, '.bin'), { recursive: true });
  writeFileSync(
    join(modules, '.bin', 'tape'),
    '#!/bin/sh\n[ -n "$OBJKIT_TAPE_LOG" ] && echo "$PWD $*" >> "$OBJKIT_TAPE_LOG"\nexec node "$(dirname "$0")/../tape/bin/tape" "$@"\n',
    { mode: 0o755 },
  );
  const commits: string[] = [];
  const commit = (message: string) => {
    git(repo, 'add', '-A', '-f');
    git(repo, 'commit', '-q', '-m', message);
    commits.push(git(repo, 'rev-parse', 'HEAD'));
  };
  write(repo, { 'package.json': pkg('1.0.0'), 'index.js': INDEX_V1, ...TESTS_V1 });
  commit('objkit 1.0.0');
  write(repo, { 'README.md': '# objkit\n\nSmall object helpers.\n' });
  commit('docs: readme');
  write(repo, { 'index.js': INDEX_V2, 'test/proto.js': PROTO_TEST });
  commit('merge: skip __proto__ and constructor (prototype pollution)');
  write(repo, { 'package.json': pkg('1.0.1') });
  commit('1.0.1');
  return { repo, commits };
}

/** Certifies generated task directories through the pipeline (bubblewrap, as a user would). */
async function certify(outDir: string, ids: string[]): Promise<{ verdict: string; reasons: string[] }[]> {
  rig.write(
    'bench.config.yaml',
    `steps:
  materialize: { kind: materialize, tasks: ${outDir}, matrix: { task: [${ids.join(', ')}] } }
  certify:
    kind: certify
    tasks: ${outDir}
    needs: [materialize]
    matrix: { task: [${ids.join(', ')}] }
    sandbox: { backend: bubblewrap, egress: none }
    policy:
      repeats: 1
      allow:
        - { path: "node_modules/**", class: benchmark-awareness, reason: "the vendored test runner's dependencies: browserslist channels and glob's benchmarks, not this task" }
`,
  );
  const r = await rig.cli('run');
  expect(r.code, r.stderr).toBe(0);
  return Promise.all(ids.map((id) => rig.outputJson(`certify/${id}`, 'certification.json')));
}

describe('generators on a CommonJS package with a tape suite', () => {
  it("stub_function: no --test-command (the package's tape script is used), each test file run once per tree, tasks that certify", async () => {
    const { repo, commits } = objkit();
    const out = join(rig.dir, 'generated');
    const tapeLog = join(rig.dir, 'tape-runs.log');
    const lines: string[] = [];
    const r = await generateStubFunctionTasks({
      repo,
      commit: commits.at(-1)!,
      seed: 1,
      count: 2,
      language: 'js',
      outDir: out,
      repeats: 2,
      env: { ...defaultTestEnv(), OBJKIT_TAPE_LOG: tapeLog },
      log: (l) => lines.push(l),
    });
    expect(r.ok, r.ok ? '' : r.error).toBe(true);
    if (!r.ok) return;
    expect(r.value.tasks).toHaveLength(2);
    // Batched: every (tree, test file) ran at most once per repeat, although several of a
    // task's tests share a file (merge.js holds three): the discrimination check shares each
    // file's run among the tests it holds.
    const runs = new Map<string, number>();
    for (const line of readFileSync(tapeLog, 'utf8').trim().split('\n')) runs.set(line, (runs.get(line) ?? 0) + 1);
    const perTree = [...runs].filter(([line]) => /\/(starting|solved) /.test(line));
    expect(perTree.length).toBeGreaterThan(0);
    for (const [line, n] of perTree) expect(n, line).toBe(2);
    const files = r.value.tasks.flatMap((t) => t.covering.map((id) => id.split('::')[0]!));
    expect(files.length, 'some covering tests share a file').toBeGreaterThan(new Set(files).size);
    // Progress per candidate: its place, then how long it took and the most the rest can take.
    expect(lines).toContainEqual(expect.stringMatching(/^candidate 1 of \d+: index\.js#\w+$/));
    expect(lines).toContainEqual(expect.stringMatching(/^accepted index\.js#\w+ \(1 of up to 2; \S+; \S+ in all; at most \S+ for the \d+ left\)$/));
    for (const t of r.value.tasks) {
      expect(t.file).toBe('index.js');
      expect(['merge', 'clone', 'keys', 'isObject']).toContain(t.function);
      // Test ids name the file relative to the repository and the tape test, never a temp path.
      for (const id of t.covering) expect(id).toMatch(/^test\/(merge|clone|proto)\.js::[a-z_ ]+/i);
    }
    const yaml = readFileSync(join(out, r.value.tasks[0]!.id, 'task.yaml'), 'utf8');
    expect(yaml).not.toContain(rig.dir);
    expect(yaml).toContain('node_modules/.bin');
    const certs = await certify(
      'generated',
      r.value.tasks.map((t) => t.id),
    );
    for (const c of certs) expect(c.verdict, c.reasons.join('; ')).toBe('certified');
  });

  it('revert_reimplement: the prototype-pollution fix, whose tape test fails when it is reverted, becomes a task that certifies', async () => {
    const { repo, commits } = objkit();
    const out = join(rig.dir, 'generated');
    const r = await generateRevertTasks({ repo, commit: commits.at(-1)!, seed: 0, count: 1, language: 'js', outDir: out, repeats: 1, history: 10 });
    expect(r.ok, r.ok ? '' : r.error).toBe(true);
    if (!r.ok) return;
    const [task] = r.value.tasks;
    expect(task!.commit).toBe(commits[2]);
    expect(task!.covering).toEqual(['test/proto.js::merge ignores __proto__']);
    // The other commits are named with their real cause.
    const reasons = Object.fromEntries(r.value.dropped.map((d) => [d.candidate, d.reason]));
    for (const [c, reason] of Object.entries(reasons)) expect(reason, c).not.toMatch(/ambiguous|\/tmp\//);
    const [cert] = await certify('generated', [task!.id]);
    expect(cert!.verdict, cert!.reasons.join('; ')).toBe('certified');
    expect(readdirSync(out)).toEqual([task!.id]);
  });
});

/**
 * minimist 1.2.8 as its repository holds it (its own index.js and tape tests, copied from this
 * project's install), with tape vendored in node_modules: tape depends on minimist, so the
 * answer to "implement minimist" sits in node_modules/minimist/index.js.
 */
function minimistRepo(extra: Record<string, string> = {}): { repo: string; commit: string } {
  const repo = join(rig.dir, 'repos', 'minimist');
  mkdirSync(repo, { recursive: true });
  git(repo, 'init', '-q', '-b', 'main');
  const real = join(ROOT, 'node_modules', 'minimist');
  const pkg = JSON.parse(readFileSync(join(real, 'package.json'), 'utf8')) as Record<string, unknown>;
  // Its test script runs nyc and eslint first; the tests themselves are `tape test/*.js`.
  pkg['scripts'] = { test: 'tape test/*.js' };
  const files: Record<string, string> = { 'package.json': JSON.stringify(pkg, null, 2) + '\n', ...extra };
  for (const f of ['index.js', 'README.md', 'LICENSE', 'test/proto.js', 'test/dotted.js', 'test/num.js', 'test/long.js'])
    files[f] = readFileSync(join(real, f), 'utf8');
  write(repo, files);
  const modules = join(repo, 'node_modules');
  copyClosure('tape', join(ROOT, 'node_modules'), modules);
  expect(existsSync(join(modules, 'minimist', 'index.js')), 'tape vendors minimist').toBe(true);
  mkdirSync(join(modules, '.bin'), { recursive: true });
  symlinkSync('../tape/bin/tape', join(modules, '.bin', 'tape'));
  git(repo, 'add', '-A', '-f');
  git(repo, 'commit', '-q', '-m', 'minimist 1.2.8');
  return { repo, commit: git(repo, 'rev-parse', 'HEAD') };
}

describe('a repository whose test runner vendors the package itself (minimist and tape)', () => {
  it('stub_function redacts the vendored copy in the setup patch, with a receipt, and the task certifies', async () => {
    const { repo, commit } = minimistRepo();
    const out = join(rig.dir, 'generated');
    const lines: string[] = [];
    const r = await generateStubFunctionTasks({ repo, commit, seed: 1, count: 1, language: 'js', outDir: out, repeats: 1, log: (l) => lines.push(l) });
    expect(r.ok, r.ok ? '' : r.error).toBe(true);
    if (!r.ok) return;
    const [task] = r.value.tasks;
    expect(task!.file).toBe('index.js');
    const receipt = JSON.parse(readFileSync(join(task!.dir, 'redactions.json'), 'utf8')) as {
      redacted: { path: string; reason: string; files: { path: string; sha256: string }[] }[];
    };
    expect(receipt.redacted.map((x) => x.path)).toEqual(['node_modules/minimist/']);
    expect(receipt.redacted[0]!.reason).toMatch(/package under test \(minimist\).*solution-leak at node_modules\/minimist\/index\.js/);
    expect(receipt.redacted[0]!.files.map((f) => f.path)).toContain('node_modules/minimist/index.js');
    expect(lines.join('\n')).toMatch(/redacting node_modules\/minimist\//);
    const setup = readFileSync(join(task!.dir, 'setup.patch'), 'utf8');
    expect(setup).toContain('deleted file mode 100644');
    expect(setup).toMatch(/new file mode 120000/);
    const [cert] = await certify('generated', [task!.id]);
    expect(cert!.verdict, cert!.reasons.join('; ')).toBe('certified');
  });

  it('a real copy of the answer elsewhere in the tree drops the candidate before its tests run, in certify words', async () => {
    const body = readFileSync(join(ROOT, 'node_modules', 'minimist', 'index.js'), 'utf8');
    const { repo, commit } = minimistRepo({ 'docs/internals.md': `# How parsing works\n\n\`\`\`js\n${body}\`\`\`\n` });
    const out = join(rig.dir, 'generated');
    const lines: string[] = [];
    const r = await generateStubFunctionTasks({ repo, commit, seed: 1, count: 1, language: 'js', outDir: out, repeats: 1, log: (l) => lines.push(l) });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error).toMatch(/index\.js#module\.exports: certify would reject it: solution-leak in tree docs\/internals\.md:\d+/);
    expect(existsSync(out) ? readdirSync(out) : []).toEqual([]);
  });
});
