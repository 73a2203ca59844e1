import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { calculatorTask, git } from './fixtures.js';
import { Rig } from './rig.js';

let rig: Rig;
beforeEach(() => (rig = new Rig()));
afterEach(() => rig.cleanup());

const CANARY = 'canary-6f1d2c84-90ab-4d1e-b3c7-5a9e0f21d7c4';

function config(extra = ''): string {
  return `steps:
  materialize: { kind: materialize, matrix: { task: [fix-add] } }
  certify:
    kind: certify
    needs: [materialize]
    matrix: { task: [fix-add] }
    sandbox: { backend: local, egress: open }
${extra}
  attempts:
    kind: run
    needs: [materialize, certify]
    matrix: { task: [fix-add], arm: [control, treatment], rep: 1 }
    agent: { adapter: oracle }
    arms:
      control: {}
      treatment: { files: { CLAUDE.md: fixtures/CLAUDE.md } }
    sandbox: { backend: local, egress: open }
`;
}

function editTask(change: (yaml: string) => string): void {
  rig.write('tasks/fix-add/task.yaml', change(rig.read('tasks/fix-add/task.yaml')));
}

describe('certify', () => {
  it('certifies a clean, discriminating task, and its attempts run (in a project that is itself a git repository)', async () => {
    calculatorTask(rig.dir);
    // The store's work directories then sit inside a git work tree: patches must still apply to them.
    git(rig.dir, 'init', '-q');
    rig.write('fixtures/CLAUDE.md', 'Prefer small pure functions.\n');
    rig.write('bench.config.yaml', config());
    const r = await rig.cli('run');
    expect(r.code, r.stderr).toBe(0);
    const c = await rig.outputJson('certify/fix-add', 'certification.json');
    expect(c).toMatchObject({
      verdict: 'certified',
      reasons: [],
      checks: { nop: [false, false, false], oracle: [true, true, true], discriminating: true, flaky: [] },
    });
    expect(Object.keys(c.surfaces).sort()).toEqual(['prompt', 'treatment:attempts:treatment', 'tree']);
  });

  it('catches a planted solution line in the prompt, a verifier test name in a treatment file and a canary in the tree, with class and line; the task is never run', async () => {
    const { repo } = calculatorTask(rig.dir);
    // A canary in a tree file (a new commit of the fixture repo).
    rig.write('repos/calc/docs/notes.md', `notes\nmore notes\n${CANARY}\n`);
    git(repo, 'add', '-A');
    git(repo, 'commit', '-qm', 'notes');
    const commit = git(repo, 'rev-parse', 'HEAD');
    editTask(
      (y) =>
        y
          .replace(/commit: [0-9a-f]{40}/, `commit: ${commit}`)
          .replace(
            'prompt: "add(a, b) in src/add.mjs returns the wrong result. Fix it."',
            'prompt: |\n  add(a, b) in src/add.mjs returns the wrong result.\n  Hint: export const add = (a, b) => a + b;\n',
          ) + `canary: ${CANARY}\n`,
    );
    rig.write('fixtures/CLAUDE.md', 'Coding rules.\nMake sure add_works keeps passing.\n');
    rig.write('bench.config.yaml', config());
    const r = await rig.cli('run');
    expect(r.code).toBe(1);
    const c = await rig.outputJson('certify/fix-add', 'certification.json');
    expect(c.verdict).toBe('rejected');
    expect(c.findings).toContainEqual(expect.objectContaining({ surface: 'prompt', path: 'prompt', line: 2, class: 'solution-leak' }));
    expect(c.findings).toContainEqual(expect.objectContaining({ surface: 'treatment:attempts:treatment', path: 'CLAUDE.md', line: 2, class: 'verifier-leak' }));
    expect(c.findings).toContainEqual(expect.objectContaining({ surface: 'tree', path: 'docs/notes.md', line: 3, class: 'canary' }));
    expect(r.stderr).toMatch(/FAILED {2}attempts\/fix-add\/control\/1: task fix-add failed certification: .*solution-leak in prompt prompt:2/);
    const status = await rig.cli('status');
    expect(status.stdout).toContain('failed certification');
  });

  it('findings a person can act on: most severe first, a vendored copy named with its fix, an allowlist with reasons in the sealed receipt, "rejected" in the run output', async () => {
    const { repo } = calculatorTask(rig.dir);
    // A repository as found: benchmark words in harmless places, and a vendored copy of its own fixed code.
    rig.write('repos/calc/package.json', '{"name": "calc", "browserslist": ["chrome canary"]}\n');
    rig.write('repos/calc/benchmarks/run.mjs', '// benchmark: how fast add is\n');
    rig.write('repos/calc/node_modules/calc/src/add.mjs', 'export const add = (a, b) => a + b;\n');
    git(repo, 'add', '-A', '-f');
    git(repo, 'commit', '-qm', 'as found');
    const commit = git(repo, 'rev-parse', 'HEAD');
    editTask((y) => y.replace(/commit: [0-9a-f]{40}/, `commit: ${commit}`));
    rig.write('fixtures/CLAUDE.md', 'Prefer small pure functions.\n');
    rig.write('bench.config.yaml', config());
    const r = await rig.cli('run');
    const c = await rig.outputJson('certify/fix-add', 'certification.json');
    expect(c.verdict).toBe('rejected');
    // The leak first, named as a vendored copy with what to do; the words after it.
    expect(c.findings.map((f: { class: string }) => f.class)).toEqual(['solution-leak', 'benchmark-awareness', 'benchmark-awareness']);
    expect(c.reasons[0]).toMatch(
      /^solution-leak in tree node_modules\/calc\/src\/add\.mjs:1: .* -- a vendored copy \(under node_modules\/calc\/\) of the repository's own code: it holds the answer\. Remove it in the task's setup patch, or redact it \(materialize redact: \[\.\.\., "node_modules\/calc\/\*\*"\]\)/,
    );
    // The run says so, with the first reasons, where it used to say "done".
    expect(r.stderr).toMatch(/^rejected certify\/fix-add \([\d.]+ s\): solution-leak in tree node_modules\/calc\/src\/add\.mjs:1/m);

    // Redact the vendored copy; accept the two words, each with its reason: certified, the reasons sealed in the receipt.
    rig.write(
      'bench.config.yaml',
      config(`    policy:
      allow:
        - { path: package.json, class: benchmark-awareness, reason: "browserslist 'chrome canary' is a browser channel, not our canary" }
        - { path: "benchmarks/**", class: benchmark-awareness, reason: "the repository's own speed benchmarks, not a test harness" }`).replace(
        '  materialize: { kind: materialize, matrix: { task: [fix-add] } }',
        '  materialize: { kind: materialize, matrix: { task: [fix-add] }, redact: ["**/CLAUDE.md", "**/AGENTS.md", "**/.claude/**", "node_modules/calc/**"] }',
      ),
    );
    expect((await rig.cli('run')).code).toBe(0);
    const ok = await rig.outputJson('certify/fix-add', 'certification.json');
    expect(ok.verdict, ok.reasons.join('\n')).toBe('certified');
    expect(ok.allowed.map((a: { path: string; allowed_by: { reason: string } }) => [a.path, a.allowed_by.reason])).toEqual([
      ['benchmarks/run.mjs', "the repository's own speed benchmarks, not a test harness"],
      ['package.json', "browserslist 'chrome canary' is a browser channel, not our canary"],
    ]);
    expect(ok.policy.allow).toHaveLength(2);
    // A reason is mandatory.
    rig.write('bench.config.yaml', config(`    policy:\n      allow:\n        - { path: package.json, class: benchmark-awareness }`));
    const refused = await rig.cli('plan');
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('reason');
  });

  it('rejects a verifier that already passes on the untouched tree as non-discriminating', async () => {
    calculatorTask(rig.dir);
    editTask((y) => y.replace(/fail_to_pass:\n\s+add_works: .*\n/, 'fail_to_pass:\n    add_works: "true"\n'));
    rig.write('fixtures/CLAUDE.md', 'Prefer small pure functions.\n');
    rig.write('bench.config.yaml', config());
    await rig.cli('run');
    const c = await rig.outputJson('certify/fix-add', 'certification.json');
    expect(c.verdict).toBe('rejected');
    expect(c.checks.nop).toEqual([true, true, true]);
    expect(c.reasons).toContain('non-discriminating: the verifier passes on the untouched tree');
  });

  it('a listed test the runner\'s report does not name fails as "not in the runner\'s report", never as a plain failure', async () => {
    calculatorTask(rig.dir);
    // node's test runner writing TAP to {report}: its file defines one of the two listed tests.
    const run = `node --test --test-reporter=tap --test-reporter-destination={report} "$VERIFIER_DIR/add.test.mjs"`;
    editTask((y) =>
      y.replace(
        /verifier:\n[\s\S]*?timeout: 30\n/,
        `verifier:\n  runner: { command: '${run}', report: tap }\n  fail_to_pass:\n    add works: '${run}'\n    wc0: '${run}'\n  timeout: 30\n`,
      ),
    );
    rig.write(
      'tasks/fix-add/verifier/add.test.mjs',
      "import test from 'node:test';\nimport assert from 'node:assert';\ntest('add works', async () => {\n  const { add } = await import(process.cwd() + '/src/add.mjs');\n  assert.strictEqual(add(2, 3), 5);\n});\n",
    );
    rig.write('fixtures/CLAUDE.md', 'Prefer small pure functions.\n');
    rig.write('bench.config.yaml', config());
    await rig.cli('run');
    const c = await rig.outputJson('certify/fix-add', 'certification.json');
    expect(c.verdict).toBe('rejected');
    expect(c.reasons.join('\n')).toContain(`1 failed (fail_to_pass wc0 (not in the runner's report))`);
  });

  it('names a verifier that passes 2 times in 3 with the reference solution flaky', async () => {
    calculatorTask(rig.dir);
    const counter = join(rig.dir, 'oracle-passes');
    editTask((y) =>
      y.replace(
        /add_works: .*\n/,
        `add_works: 'if node "$VERIFIER_DIR/test_add.mjs"; then n=$(( $(cat ${counter} 2>/dev/null || echo 0) + 1 )); echo $n > ${counter}; [ $n -ne 2 ]; else exit 1; fi'\n`,
      ),
    );
    rig.write('fixtures/CLAUDE.md', 'Prefer small pure functions.\n');
    rig.write('bench.config.yaml', config());
    await rig.cli('run');
    const c = await rig.outputJson('certify/fix-add', 'certification.json');
    expect(c.checks.oracle).toEqual([true, false, true]);
    expect(c.verdict).toBe('rejected');
    expect(c.checks.flaky).toEqual(['flaky verifier: passed 2 of 3 times with the reference solution']);
  });
});

describe('certify: every surface an arm adds, whatever its encoding', () => {
  // The calculator's reference solution adds `export const add = (a, b) => a + b;`.
  const SOLUTION = 'export const add = (a, b) => a + b;';
  const b64 = Buffer.from(SOLUTION).toString('base64');

  function armConfig(arm: string): string {
    return config().replace('treatment: { files: { CLAUDE.md: fixtures/CLAUDE.md } }', `treatment: ${arm}`);
  }

  async function findings(_arm: string) {
    const r = await rig.cli('run', 'certify');
    expect(r.code, r.stderr).toBe(0);
    const c = await rig.outputJson('certify/fix-add', 'certification.json');
    return {
      verdict: c.verdict as string,
      leaks: (c.findings as { class: string; path: string; detail: string }[]).filter((f) => f.class === 'solution-leak'),
    };
  }

  it('a base64 copy of the solution in a memory directory is rejected, with the file and how it was decoded', async () => {
    calculatorTask(rig.dir);
    rig.write('fixtures/memory/facts.md', '# Facts\nNothing to see.\n');
    rig.write('fixtures/memory/nested/blob.txt', `note: ${b64}\n`);
    rig.write('bench.config.yaml', armConfig('{ files: { .memory: fixtures/memory } }'));
    const f = await findings('dir');
    expect(f.verdict).toBe('rejected');
    expect(f.leaks).toEqual([expect.objectContaining({ path: '.memory/nested/blob.txt', detail: 'added line of the reference solution (decoded: base64)' })]);
  });

  it('a base64 copy in an arm env value, and in MCP server arguments, are rejected', async () => {
    calculatorTask(rig.dir);
    rig.write('bench.config.yaml', armConfig(`{ env: { HINT: "${b64}" } }`));
    expect((await findings('env')).leaks).toEqual([expect.objectContaining({ path: 'env HINT' })]);
    rig.write('fixtures/server.mjs', 'process.stdin.resume();\n');
    rig.write(
      'bench.config.yaml',
      armConfig(`{ files: { srv.mjs: fixtures/server.mjs }, mcp_servers: { memory: { command: node, args: [srv.mjs, "--seed", "${b64}"] } } }`),
    );
    const mcp = await findings('mcp');
    expect(mcp.verdict).toBe('rejected');
    expect(mcp.leaks).toEqual([expect.objectContaining({ path: 'mcp_servers.memory' })]);
  });

  it('re-spaced, homoglyph, zero-width, full-width and hex copies are found too', async () => {
    calculatorTask(rig.dir);
    const copies = {
      'respaced.md': 'export  const add=(a,  b)=>a +b;',
      'homoglyph.md': SOLUTION.replace('const', 'cоnst').replace('add', 'аdd'), // Cyrillic о and а
      'zerowidth.md': SOLUTION.split('').join('\u200b'),
      'fullwidth.md': SOLUTION.replace('export', 'ｅｘｐｏｒｔ'),
      'hex.md': `0x: ${Buffer.from(SOLUTION).toString('hex')}`,
    };
    for (const [name, text] of Object.entries(copies)) rig.write(`fixtures/notes/${name}`, `${text}\n`);
    rig.write('fixtures/notes/clean.md', 'Keep functions small.\n');
    rig.write('bench.config.yaml', armConfig('{ files: { notes: fixtures/notes } }'));
    const f = await findings('copies');
    expect([...new Set(f.leaks.map((l) => l.path))].sort()).toEqual(
      Object.keys(copies)
        .map((n) => `notes/${n}`)
        .sort(),
    );
  });
});
