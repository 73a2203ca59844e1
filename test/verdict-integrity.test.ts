// Verdict integrity: everything an attempt touches is accounted for in its score.
// Each attack is a hostile arm of a real cohort (bubblewrap, the real test runners
// npm and pytest); the test fails if the attack gets a pass.
import { existsSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bubblewrapBackend } from '../sandboxes/bubblewrap.js';
import { claudeBinary } from '../agents/claude-code.js';
import { calculatorTask, makeRepo } from './fixtures.js';
import { fixAddConfig } from './fix-add-config.js';
import { Rig } from './rig.js';

const required = process.env['PAIRBENCH_REQUIRE_SANDBOXES'] === '1';
const bwrap = await bubblewrapBackend.available();

let rig: Rig;
beforeEach(() => (rig = new Rig()));
afterEach(() => rig.cleanup());

/** A repository whose add() is wrong, with a node:test suite run by `npm test` and a pytest suite. */
function addRepo(): string {
  const [commit] = makeRepo(join(rig.dir, 'repos', 'add'), [
    {
      'package.json': JSON.stringify({ name: 'add', version: '1.0.0', type: 'module', scripts: { test: 'node --test test/' } }, null, 2) + '\n',
      'src/add.mjs': 'export const add = (a, b) => a - b;\n',
      'src/__init__.py': '',
      'src/add.py': 'def add(a, b):\n    return a - b\n',
      'test/add.test.mjs':
        "import test from 'node:test';\nimport assert from 'node:assert';\nimport { add } from '../src/add.mjs';\ntest('adds', () => assert.strictEqual(add(2, 3), 5));\n",
      'tests/test_add.py':
        'import os, sys\nsys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))\nfrom src.add import add\n\ndef test_add():\n    assert add(2, 3) == 5\n',
    },
  ]);
  return commit!;
}

function task(id: string, commit: string, command: string, fix: { path: string; from: string; to: string }): void {
  rig.write(
    `tasks/${id}/task.yaml`,
    `id: ${id}\nfamily: add\nrepo: { path: ../../repos/add, commit: ${commit} }\nprompt: add() subtracts. Fix it.\nallowed_paths: ["**"]\nverifier:\n  fail_to_pass:\n    suite: ${JSON.stringify(command)}\n  timeout: 60\nsolution:\n  patch: solution.patch\n`,
  );
  rig.write(`tasks/${id}/solution.patch`, `--- a/${fix.path}\n+++ b/${fix.path}\n@@ -1 +1 @@\n-${fix.from}\n+${fix.to}\n`);
}

/** Writes `text` to `path` from inside the agent's shell (base64: no quoting to get wrong). */
const put = (path: string, text: string) => `mkdir -p "$(dirname ${path})" && echo ${Buffer.from(text).toString('base64')} | base64 -d > ${path}`;

function cohort(taskId: string, arms: Record<string, string>): string {
  const names = Object.keys(arms);
  const cases = names.map((a) => `if [ "$ARM" = ${a} ]; then ${arms[a]}; fi`).join('; ');
  const m = `{ task: [${taskId}], arm: [${names.join(', ')}], rep: 1 }`;
  return `steps:
  materialize: { kind: materialize, matrix: { task: [${taskId}] } }
  certify: { kind: certify, needs: [materialize], matrix: { task: [${taskId}] }, sandbox: { backend: bubblewrap }, policy: { repeats: 1 } }
  attempts:
    kind: run
    needs: [materialize, certify]
    matrix: ${m}
    agent: { adapter: command, command: ${JSON.stringify(cases)} }
    arms: { ${names.map((a) => `${a}: { env: { ARM: ${a} } }`).join(', ')} }
    limits: { wall_seconds: 60 }
    sandbox: { backend: bubblewrap }
  verify: { kind: verify, needs: [materialize, certify, attempts], matrix: ${m}, sandbox: { backend: bubblewrap } }
  audit: { kind: audit, needs: [attempts, verify], matrix: ${m} }
  cohort: { kind: analyze, version: 1, needs: [audit], control: ${names[0]}, treatments: [${names.slice(1).join(', ')}] }
  export: { kind: export, needs: [materialize, certify, attempts, verify, audit, cohort] }
`;
}

async function verdicts(taskId: string, arms: string[]) {
  const out: Record<string, { pass: boolean; reason: string; kept: string[] }> = {};
  for (const arm of arms) {
    const audit = await rig.outputJson(`audit/${taskId}/${arm}/1`, 'audit.json');
    const verdict = await rig.outputJson(`verify/${taskId}/${arm}/1`, 'verdict.json');
    out[arm] = { pass: audit.pass, reason: audit.reason_code, kept: verdict.verifier_owned_kept_pristine };
  }
  return out;
}

describe.skipIf(!bwrap.ok && !required)('an attempt that edits what the verifier runs', () => {
  it('npm: the visible test, the test script, an .npmrc script-shell, a node_modules/.bin shim: each fails out of bounds, counted per arm', async () => {
    const commit = addRepo();
    task('js', commit, 'npm test --silent', { path: 'src/add.mjs', from: 'export const add = (a, b) => a - b;', to: 'export const add = (a, b) => a + b;' });
    const arms = {
      honest: put('src/add.mjs', 'export const add = (a, b) => a + b;\n'),
      edittest: put('test/add.test.mjs', "import test from 'node:test';\ntest('adds', () => {});\n"),
      script: `sed -i 's#node --test test/#exit 0#' package.json`,
      npmrc: put('.npmrc', 'script-shell=/bin/true\n'),
      shim: `${put('node_modules/.bin/node', '#!/bin/sh\nexit 0\n')} && chmod +x node_modules/.bin/node`,
    };
    rig.write('bench.config.yaml', cohort('js', arms));
    const r = await rig.cli('run');
    expect(r.code, r.stderr).toBe(0);
    const v = await verdicts('js', Object.keys(arms));
    expect(v['honest']).toEqual({ pass: true, reason: 'ok', kept: [] });
    expect(v['edittest']).toEqual({ pass: false, reason: 'out-of-bounds', kept: ['test/add.test.mjs'] });
    expect(v['script']).toEqual({ pass: false, reason: 'out-of-bounds', kept: ['package.json'] });
    expect(v['npmrc']).toEqual({ pass: false, reason: 'out-of-bounds', kept: ['.npmrc'] });
    expect(v['shim']).toEqual({ pass: false, reason: 'out-of-bounds', kept: ['node_modules/.bin/node'] });
    // The verifier ran with the pristine files, so even the `flag` policy would not have passed them.
    for (const arm of ['edittest', 'script', 'npmrc', 'shim']) expect((await rig.outputJson(`verify/js/${arm}/1`, 'verdict.json')).pass, arm).toBe(false);

    const bundle = join(rig.dir, 'bundle');
    expect((await rig.cli('export', '--out', bundle)).code).toBe(0);
    const report = readFileSync(join(bundle, 'report.md'), 'utf8');
    expect(report).toMatch(/\| edittest \|.*\| 1 out of bounds, 0 leakage, 0 forged \|/);
    expect(report).toContain('- shim: out-of-bounds: 1');
    expect(report).toMatch(/⚠ caveat: attempts did what the verifier cannot see \(npmrc: 1 out of bounds/);
    const csv = readFileSync(join(bundle, 'attempts.csv'), 'utf8');
    const header = csv.split('\r\n')[0]!.split(',');
    const row = csv
      .split('\r\n')
      .find((l) => l.includes('attempts/js/npmrc/1') || l.includes(',npmrc,'))!
      .split(',');
    expect(row[header.indexOf('out_of_bounds_paths')]).toBe('1');
  });

  it('pytest: a conftest.py hook that skips every test call, a pytest.ini with addopts=--collect-only: each fails', async () => {
    const commit = addRepo();
    task('py', commit, 'python3 -m pytest -q -p no:cacheprovider tests', { path: 'src/add.py', from: '    return a - b', to: '    return a + b' });
    // The solution patch has a context line; write it whole.
    rig.write('tasks/py/solution.patch', '--- a/src/add.py\n+++ b/src/add.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n');
    const arms = {
      honest: `sed -i 's/a - b/a + b/' src/add.py`,
      conftest: put('conftest.py', 'def pytest_pyfunc_call(pyfuncitem):\n    return True\n'),
      ini: put('pytest.ini', '[pytest]\naddopts = --collect-only\n'),
    };
    rig.write('bench.config.yaml', cohort('py', arms));
    const r = await rig.cli('run');
    expect(r.code, r.stderr).toBe(0);
    const v = await verdicts('py', Object.keys(arms));
    expect(v['honest']).toEqual({ pass: true, reason: 'ok', kept: [] });
    expect(v['conftest']).toEqual({ pass: false, reason: 'out-of-bounds', kept: ['conftest.py'] });
    expect(v['ini']).toEqual({ pass: false, reason: 'out-of-bounds', kept: ['pytest.ini'] });
  });
});

describe.skipIf((!bwrap.ok && !required) || !existsSync(claudeBinary()))('leakage in a real trajectory (Claude Code, bubblewrap)', () => {
  it('an MCP answer carrying the hidden test, an obfuscated probe of /verifier, and a canary split across stream chunks are each flagged', async () => {
    calculatorTask(rig.dir);
    const canary = 'canary-7d1f0c2e-5b9a-4e61-a3d4-22c0f5e8b917';
    rig.write('tasks/fix-add/task.yaml', rig.read('tasks/fix-add/task.yaml') + `canary: ${canary}\n`);
    // A "hint" server that hands out the hidden test's text (read at run time: nothing in the treatment files shows it).
    rig.write(
      'fixtures/hint-server.mjs',
      `import { createInterface } from 'node:readline';
const hidden = Buffer.from(${JSON.stringify(Buffer.from("if (add(2, 3) !== 5) { console.error('add(2, 3) = ' + add(2, 3)); process.exit(1); }").toString('base64'))}, 'base64').toString();
const send = (m) => process.stdout.write(JSON.stringify(m) + '\\n');
for await (const line of createInterface({ input: process.stdin })) {
  const msg = JSON.parse(line);
  if (msg.method === 'initialize') send({ jsonrpc: '2.0', id: msg.id, result: { protocolVersion: msg.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'hint', version: '1.0.0' } } });
  else if (msg.method === 'tools/list') send({ jsonrpc: '2.0', id: msg.id, result: { tools: [{ name: 'get', description: 'A hint.', inputSchema: { type: 'object', properties: {} } }] } });
  else if (msg.method === 'tools/call') send({ jsonrpc: '2.0', id: msg.id, result: { content: [{ type: 'text', text: 'the check is: ' + hidden }] } });
  else if (msg.id !== undefined) send({ jsonrpc: '2.0', id: msg.id, result: {} });
}
`,
    );
    rig.write(
      'fixtures/leaky.script.json',
      JSON.stringify({
        turns: [
          { tool_calls: [{ name: 'mcp__hint__get', input: {} }] },
          { tool_calls: [{ name: 'Bash', input: { command: 'd=/ver; ls ${d}ifier 2>&1; true', description: 'look around' } }] },
          { text: `Noting ${canary} for later.` },
        ],
      }),
    );
    rig.write(
      'bench.config.yaml',
      `steps:
  materialize: { kind: materialize, matrix: { task: [fix-add] } }
  attempts:
    kind: run
    needs: [materialize]
    matrix: { task: [fix-add], arm: [control, mcp], rep: 1 }
    agent: { adapter: claude-code, model: claude-fake-1 }
    arms:
      control: {}
      mcp: { files: { .tools/hint.mjs: fixtures/hint-server.mjs }, mcp_servers: { hint: { command: node, args: [.tools/hint.mjs] } } }
    limits: { turns: 6, wall_seconds: 120 }
    sandbox: { backend: bubblewrap }
    model: { fake_script: fixtures/leaky.script.json }
  verify: { kind: verify, needs: [materialize, attempts], matrix: { task: [fix-add], arm: [control, mcp], rep: 1 }, sandbox: { backend: bubblewrap } }
  audit: { kind: audit, needs: [attempts, verify], matrix: { task: [fix-add], arm: [control, mcp], rep: 1 } }
`,
    );
    const r = await rig.cli('run');
    expect(r.code, r.stderr).toBe(0);
    const log = await rig.outputText('attempts/fix-add/mcp/1', 'gateway.jsonl');
    expect(log).not.toContain(canary); // it was streamed in pieces: only the reassembled text holds it whole
    const mcp = await rig.outputJson('audit/fix-add/mcp/1', 'audit.json');
    const kinds = (a: { leakage: { kind: string; where: string }[] }) => [...new Set(a.leakage.map((l) => l.kind))].sort();
    expect(kinds(mcp)).toEqual(['canary', 'hidden-content', 'hidden-path']);
    expect(mcp.leakage.find((l: { kind: string }) => l.kind === 'hidden-content').where).toMatch(/tool result sent to the model/);
    expect(mcp).toMatchObject({ reason_code: 'leakage', pass: false, integrity: { leakage: 3 } });
    // The control was never shown the hidden test (no server), but probed and wrote the canary all the same.
    expect(kinds(await rig.outputJson('audit/fix-add/control/1', 'audit.json'))).toEqual(['canary', 'hidden-path']);
  });
});

describe.skipIf((!bwrap.ok && !required) || !existsSync(claudeBinary()))('delivery and the cross-arm check (Claude Code, bubblewrap)', () => {
  const CONTEXT = 'House rule 5e1b: add() uses the plus operator.\nEvery function in src/ is pure.\nTests live in test/ and run with node --test.\n';

  const cohortConfig = (control: string, treatment?: string) =>
    fixAddConfig({
      adapter: 'claude-code',
      model: 'claude-fake-1',
      instructions: 'CLAUDE.md',
      script: 'fixtures/read.script.json',
      backend: 'bubblewrap',
      control,
      ...(treatment ? { treatment } : {}),
      turns: 4,
      wallSeconds: 120,
    }) +
    `  audit: { kind: audit, needs: [attempts, verify], matrix: { task: [fix-add], arm: [control, treatment], rep: 1 } }
  cohort: { kind: analyze, version: 1, needs: [audit], control: control, treatments: [treatment] }
`;

  beforeEach(() => {
    calculatorTask(rig.dir);
    rig.write('fixtures/CLAUDE.md', CONTEXT);
    // The model reads a notes file that quotes the context: a tool result, not the instructions.
    rig.write(
      'fixtures/read.script.json',
      JSON.stringify({ turns: [{ tool_calls: [{ name: 'Read', input: { file_path: '/work/NOTES.md' } }] }, { text: 'Read it.' }] }),
    );
  });

  it('a notes file quoting the CLAUDE.md, read by the model, is not delivery; the CLAUDE.md itself is', async () => {
    rig.write('fixtures/NOTES.md', `# Notes\n${CONTEXT}`);
    rig.write(
      'bench.config.yaml',
      cohortConfig('{ files: { NOTES.md: fixtures/NOTES.md } }', '{ files: { CLAUDE.md: fixtures/CLAUDE.md, NOTES.md: fixtures/NOTES.md } }'),
    );
    expect((await rig.cli('run', 'audit')).code).toBe(0);
    const control = await rig.outputJson('attempts/fix-add/control/1', 'result.json');
    expect(await rig.outputText('attempts/fix-add/control/1', 'gateway.jsonl')).toContain('House rule 5e1b'); // the model did read it
    expect(control.delivery.marker).toBeNull(); // NOTES.md is not an instruction file for Claude Code
    expect((await rig.outputJson('audit/fix-add/control/1', 'audit.json')).mechanism.delivered).toBe(false);
    expect((await rig.outputJson('attempts/fix-add/treatment/1', 'result.json')).delivered).toEqual({ treatment: true });
  });

  it("a control that received the treatment's fingerprint invalidates the comparison", async () => {
    rig.write('fixtures/CLAUDE-copy.md', CONTEXT);
    rig.write('bench.config.yaml', cohortConfig('{ files: { CLAUDE.md: fixtures/CLAUDE-copy.md } }'));
    expect((await rig.cli('run')).code).toBe(0);
    const analysis = await rig.outputJson('cohort', 'analysis.json');
    const cmp = analysis.comparisons[0];
    expect(cmp.verdict).toBe('invalid');
    expect(cmp.problems).toEqual([expect.objectContaining({ reason: 'control-received-treatment', attempts: ['audit/fix-add/control/1'] })]);
  });
});

describe('isolation is part of the verdict', () => {
  it('a cohort run on local makes no claim (unisolated, numbers shown); its attempts had a private TMPDIR and HOME and no store path in their environment', async () => {
    calculatorTask(rig.dir);
    // Eight independent tasks (a family each); on two of them the prompt alone is enough, so the
    // per-task deltas vary and the effect is one the rule would otherwise claim.
    const ids = ['fix-add'];
    for (let i = 2; i <= 8; i++) {
      const id = `fix-add-${i}`;
      for (const f of ['task.yaml', 'solution.patch', 'verifier/test_add.mjs']) {
        let text = rig.read(`tasks/fix-add/${f}`).replace('id: fix-add', `id: ${id}`).replace('family: arithmetic', `family: ${id}`);
        if (i > 6) text = text.replace('Fix it.', 'Fix it: use +.');
        rig.write(`tasks/${id}/${f}`, text);
      }
      ids.push(id);
    }
    rig.write('fixtures/CLAUDE.md', 'Always use + in add(): the project adds numbers.\n');
    const m = `{ task: [${ids.join(', ')}], arm: [control, treatment], rep: 2 }`;
    const agent = `env > "$TMPDIR/env.txt"; env > env.txt; if grep -qs "use +" CLAUDE.md || echo "$PAIRBENCH_PROMPT" | grep -q "use +"; then sed -i "s/a - b/a + b/" src/add.mjs; fi`;
    rig.write(
      'bench.config.yaml',
      `steps:
  materialize: { kind: materialize, matrix: { task: [${ids.join(', ')}] } }
  attempts:
    kind: run
    needs: [materialize]
    matrix: ${m}
    agent: { adapter: command, command: '${agent}' }
    arms: { control: {}, treatment: { files: { CLAUDE.md: fixtures/CLAUDE.md } } }
    sandbox: { backend: local }
    limits: { wall_seconds: 30 }
  verify: { kind: verify, needs: [materialize, attempts], matrix: ${m}, sandbox: { backend: local } }
  audit: { kind: audit, needs: [attempts, verify], matrix: ${m}, policy: { out_of_bounds: flag } }
  cohort: { kind: analyze, version: 1, needs: [audit], control: control, treatments: [treatment] }
  export: { kind: export, needs: [materialize, attempts, verify, audit, cohort] }
`,
    );
    const r = await rig.cli('run');
    expect(r.code, r.stderr).toBe(0);
    const cmp = (await rig.outputJson('cohort', 'analysis.json')).comparisons[0];
    expect(cmp).toMatchObject({ verdict: 'unisolated', delta: 0.75, problems: [{ reason: 'unisolated', arms: ['control', 'treatment'] }] });
    const bundle = join(rig.dir, 'bundle');
    expect((await rig.cli('export', '--out', bundle)).code).toBe(0);
    const report = readFileSync(join(bundle, 'report.md'), 'utf8');
    expect(report).toContain('**UNISOLATED**');
    expect(report).toContain('⚠ **UNISOLATED (none, network shared with the host): no claim is made**');
    // What the agent's environment held: private directories, nothing under the store.
    const { Cas } = await import('../pipeline/store/cas.js');
    const changes = await rig.outputJson('attempts/fix-add/control/1', 'changes.json');
    expect(Object.keys(changes.written)).toContain('env.txt');
    const ex = JSON.parse((await rig.cli('explain', 'attempts/fix-add/control/1', '--json')).stdout);
    const cas = new Cas(join(rig.dir, '.pairbench', 'cas'), join(rig.dir, '.pairbench', 'tmp'));
    const entry = cas.readTree(ex.record.outputs.changed.digest).entries.find((e) => e.name === 'env.txt');
    if (!entry || entry.type !== 'file') throw new Error('env.txt is not in the changes');
    const envTxt = cas.read(entry.digest).toString('utf8');
    const env = Object.fromEntries(
      envTxt
        .split('\n')
        .filter((l) => l.includes('='))
        .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
    );
    expect(env['TMPDIR']).toMatch(/pairbench-local-/);
    expect(env['HOME']).toMatch(/\/pairbench-(local|home)-/);
    expect(env['HOME']!.startsWith(tmpdir())).toBe(true);
    for (const [k, v] of Object.entries(env)) if (k !== 'PWD' && k !== 'OLDPWD') expect(v, k).not.toContain('.pairbench');
  });
});
