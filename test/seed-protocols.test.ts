import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { calculatorTask, copyTask, makeRepo } from './fixtures.js';
import { Rig } from './rig.js';
import { parseJudgement } from '../steps/judge.js';

// The seed protocols' machinery on the local backend: a generated context file
// feeding an arm (PRIMER), a judge beside the verifier (gortex), a staged pilot
// (coding-os), a task that must need the memory under test (Stele).
let rig: Rig;
let commit: string;
beforeEach(() => {
  rig = new Rig();
  commit = calculatorTask(rig.dir).commit;
});
afterEach(() => rig.cleanup());

type Node = { node: string; status: string; key?: string; reason?: string; message?: string };
const nodesOf = (stdout: string) => JSON.parse(stdout).nodes as Node[];
const executed = (nodes: Node[]) =>
  nodes
    .filter((n) => n.status === 'executed')
    .map((n) => n.node)
    .sort();

// Stands in for an agent that reads its CLAUDE.md: it fixes add() only when told to use +.
const READS_CONTEXT = `if grep -q "use +" CLAUDE.md 2>/dev/null; then sed -i "s/a - b/a + b/" src/add.mjs; fi`;

describe('a generated context file feeds the treatment arm (PRIMER)', () => {
  function config(prompt: string, version = 1): string {
    return `concurrency: { global: 2 }
steps:
  generate-context:
    kind: context
    repo: repos/calc
    commit: ${commit}
    prompt: ${JSON.stringify(prompt)}
    model: { name: claude-fake-1, fake_script: generator.json }
  materialize: { kind: materialize, matrix: { task: [fix-add] } }
  certify:
    kind: certify
    needs: [materialize, generate-context]
    matrix: { task: [fix-add] }
    sandbox: { backend: local, egress: open }
    policy: { repeats: 1 }
  attempts:
    kind: run
    needs: [materialize, certify, generate-context]
    matrix: { task: [fix-add], arm: [without, with], rep: 2 }
    agent: { adapter: command, command: '${READS_CONTEXT.replace(/'/g, "''")}' }
    arms:
      without: {}
      with: { files: { CLAUDE.md: { from: generate-context, out: CLAUDE.md } } }
    sandbox: { backend: local, egress: open }
  verify:
    kind: verify
    needs: [materialize, attempts]
    matrix: { task: [fix-add], arm: [without, with], rep: 2 }
    sandbox: { backend: local, egress: open }
  audit:
    kind: audit
    needs: [attempts, verify]
    matrix: { task: [fix-add], arm: [without, with], rep: 2 }
  primer:
    kind: analyze
    version: ${version}
    needs: [audit, generate-context]
    control: without
    treatments: [with]
    bootstrap: { resamples: 200, seed: 1 }
    overhead: { step: generate-context, out: cost.json }
`;
  }

  it('the arm receives the bytes the step generated; editing the prompt re-runs the step and then only the treatment attempts', async () => {
    rig.write(
      'generator.json',
      JSON.stringify({
        turns: [],
        completions: [
          { match: 'house rules', text: '# calc\n\nHouse rule: always use + in add().\n', usage: { input_tokens: 900, output_tokens: 40 } },
          { text: '# calc\n\nA tiny arithmetic module.\n', usage: { input_tokens: 800, output_tokens: 30 } },
        ],
      }),
    );
    rig.write('bench.config.yaml', config('Describe this repository for a coding agent.'));
    const first = await rig.cli('run', '--json');
    expect(first.code, first.stderr + first.stdout).toBe(0);
    let nodes = nodesOf(first.stdout);
    const key = (ns: Node[], id: string) => ns.find((n) => n.node === id)!.key!;
    // What the provider was sent: the prompt, then the repository's files, without its own instruction files (no arm sees them).
    const request = await rig.outputText('generate-context', 'request.md');
    expect(request).toMatch(/^Describe this repository for a coding agent\.\n\n# The repository\n/);
    expect(request).toContain('## src/add.mjs\n```\nexport const add = (a, b) => a - b;\n```');
    expect(request).not.toContain('Repository instructions that must not reach any arm');
    expect(request).not.toContain('.claude/settings.json');
    expect(await rig.outputText('generate-context', 'CLAUDE.md')).toBe('# calc\n\nA tiny arithmetic module.\n');
    // The generation's usage is the overhead stream: scripted, so unpriced, never $0.
    const cost = JSON.parse(await rig.outputText('generate-context', 'cost.json'));
    expect(cost).toMatchObject({ usd: null, tokens: 830, confidence: 'none', model_source: 'scripted' });
    let analysis = rig.recordOutputJson(key(nodes, 'primer'), 'analysis.json');
    expect(analysis.cost_streams.overhead).toMatchObject({ usd: null, tokens: 830, source: 'generate-context:cost.json' });
    // This context does not tell the agent the rule: neither arm fixes add().
    expect(analysis.arms.map((a: { arm: string; completion_rate: number }) => [a.arm, a.completion_rate])).toEqual([
      ['without', 0],
      ['with', 0],
    ]);

    // The generation prompt changes (it now asks for the house rules). It is frozen with the cohort:
    // run refuses until the version is bumped; then the context step and only the attempts that
    // read its output run again; the control stays cached.
    rig.write('bench.config.yaml', config('Describe this repository for a coding agent, with its house rules.'));
    const refused = await rig.cli('run', '--json');
    expect(refused.code).toBe(2);
    expect(refused.stdout).toMatch(
      /generate-context: prompt: \\"Describe this repository for a coding agent\.\\" -> \\"Describe this repository[^(]*\(\d+ bytes, [0-9a-f]{12}\)/,
    );
    rig.write('bench.config.yaml', config('Describe this repository for a coding agent, with its house rules.', 2));
    const second = await rig.cli('run', '--json');
    expect(second.code, second.stderr + second.stdout).toBe(0);
    nodes = nodesOf(second.stdout);
    const ran = executed(nodes);
    expect(ran).toContain('generate-context');
    expect(ran).toEqual(expect.arrayContaining(['attempts/fix-add/with/1', 'attempts/fix-add/with/2']));
    expect(ran.filter((n) => n.startsWith('attempts/'))).toEqual(['attempts/fix-add/with/1', 'attempts/fix-add/with/2']);
    expect(ran.filter((n) => n.includes('/without/'))).toEqual([]);
    expect(await rig.outputText('generate-context', 'CLAUDE.md')).toBe('# calc\n\nHouse rule: always use + in add().\n');
    analysis = rig.recordOutputJson(key(nodes, 'primer'), 'analysis.json');
    expect(analysis.arms.map((a: { arm: string; completion_rate: number }) => [a.arm, a.completion_rate])).toEqual([
      ['without', 0],
      ['with', 1],
    ]);
    // The treatment read the generated bytes themselves (the attempt's workspace had them).
    const why = await rig.cli('explain', 'attempts/fix-add/with/1', '--json');
    expect(why.stdout).toContain('generate-context');
  });

  it('calls an OpenAI Responses provider the same way; a reply with no text fails the step, naming it', async () => {
    rig.write('generator.json', JSON.stringify({ turns: [], completions: [{ text: 'Use + in add().\n', usage: { input_tokens: 500, output_tokens: 9 } }] }));
    rig.write(
      'bench.config.yaml',
      `steps:
  generate-context:
    kind: context
    repo: repos/calc
    commit: ${commit}
    prompt: Describe it.
    include: ["src/**"]
    model: { name: gpt-fake-1, provider: openai, fake_script: generator.json }
`,
    );
    const r = await rig.cli('run', '--json');
    expect(r.code, r.stderr + r.stdout).toBe(0);
    expect(await rig.outputText('generate-context', 'CLAUDE.md')).toBe('Use + in add().\n');
    // Only the included files were sent.
    const request = await rig.outputText('generate-context', 'request.md');
    expect(request).toContain('## src/add.mjs');
    expect(request).not.toContain('README.md');
    expect(JSON.parse(await rig.outputText('generate-context', 'cost.json'))).toMatchObject({ tokens: 509, model_source: 'scripted' });
    const exchange = (await rig.outputText('generate-context', 'exchange.jsonl'))
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    expect(exchange.map((e) => e.path)).toEqual(['/v1/responses']);

    rig.write('generator.json', JSON.stringify({ turns: [], completions: [{ text: '' }] }));
    const empty = await rig.cli('run', '--json');
    expect(empty.code).toBe(1);
    expect(empty.stdout).toContain('context step generate-context: the model answered with no text; nothing to give the arm');
  });

  it('refuses an arm that takes a file from a step not in needs, and a certify that would not scan it', async () => {
    rig.write('generator.json', JSON.stringify({ turns: [], completions: [{ text: 'x\n' }] }));
    rig.write(
      'bench.config.yaml',
      config('p')
        .replace('needs: [materialize, certify, generate-context]', 'needs: [materialize, certify]')
        .replace('needs: [materialize, generate-context]', 'needs: [materialize]'),
    );
    const r = await rig.cli('run', '--json');
    expect(r.code).toBe(2);
    const messages = (JSON.parse(r.stdout).errors as { message: string; line: number }[]).map((e) => e.message);
    expect(messages).toContain('arm "with" takes CLAUDE.md from step "generate-context", which is not in needs');
    expect(messages.some((m) => m.includes('certify scans every surface an arm adds'))).toBe(true);
  });
});

describe('a staged pilot (coding-os): the gate decides whether the middle arms run', () => {
  const ARMS = `    arms:
      raw: {}
      full: { files: { CLAUDE.md: fixtures/full.md, GRAPH.md: fixtures/graph.md } }
      graph: { files: { GRAPH.md: fixtures/graph.md } }
      rules: { files: { CLAUDE.md: fixtures/rules.md } }`;
  const stage = (name: string, arms: string, needs: string) => `  attempts-${name}:
    kind: run
    needs: [${needs}]
    matrix: { task: [fix-add], arm: [${arms}], rep: 2 }
    agent: { adapter: command, command: '${READS_CONTEXT.replace(/'/g, "''")}' }
${ARMS}
    sandbox: { backend: local, egress: open }
  verify-${name}:
    kind: verify
    needs: [materialize, attempts-${name}]
    matrix: { task: [fix-add], arm: [${arms}], rep: 2 }
    sandbox: { backend: local, egress: open }
  audit-${name}:
    kind: audit
    needs: [attempts-${name}, verify-${name}]
    matrix: { task: [fix-add], arm: [${arms}], rep: 2 }
`;
  const config = `concurrency: { global: 2 }
steps:
  materialize: { kind: materialize, matrix: { task: [fix-add] } }
  certify:
    kind: certify
    needs: [materialize]
    matrix: { task: [fix-add] }
    sandbox: { backend: local, egress: open }
    policy: { repeats: 1 }
${stage('pilot', 'raw, full', 'materialize, certify')}
  pilot:
    kind: analyze
    needs: [audit-pilot]
    control: raw
    treatments: [full]
    bootstrap: { resamples: 200, seed: 1 }
  pilot-gate:
    kind: gate
    needs: [pilot]
    analysis: pilot
    require: { treatment: full, min_effect: 0.5 }
${stage('middle', 'graph, rules', 'materialize, certify, pilot-gate')}
  factorial:
    kind: analyze
    version: 1
    needs: [audit-pilot, audit-middle]
    control: raw
    treatments: [graph, rules, full]
    comparisons: [[full, graph], [full, rules]]
    bootstrap: { resamples: 200, seed: 1 }
`;

  it('a closed gate stops before the middle arms and says why, and what was observed still exports; an open one runs them', async () => {
    rig.write('fixtures/graph.md', 'callers of add: none\n');
    rig.write('fixtures/rules.md', 'Keep functions small.\n');
    rig.write('fixtures/full.md', 'Keep functions small.\n');
    const exported = `${config}  export:
    kind: export
    needs: [materialize, certify, attempts-pilot, verify-pilot, audit-pilot, attempts-middle, verify-middle, audit-middle, factorial]
`;
    rig.write('bench.config.yaml', exported);
    const closed = await rig.cli('run', '--json');
    // A closed gate is a preregistered outcome, not a failure.
    expect(closed.code, closed.stdout).toBe(0);
    const nodes = nodesOf(closed.stdout);
    const gate = nodes.find((n) => n.node === 'pilot-gate')!;
    expect(gate.status).toBe('executed');
    const decision = rig.recordOutputJson(gate.key!, 'gate.json');
    expect(decision).toMatchObject({ pass: false });
    expect(decision.because).toContain('full vs raw on the pilot: +0 pp');
    expect(decision.because).toContain('the effect is below the preregistered +50 pp');
    // No middle attempt ran an agent: each is marked not run, with why; the pilot's ran.
    const middle = nodes.filter((n) => n.node.startsWith('attempts-middle/'));
    expect(middle).toHaveLength(4);
    for (const n of middle) expect(rig.recordOutputJson(n.key!, 'not-run.json').not_run).toContain('gate pilot-gate is closed');
    expect(executed(nodes).filter((n) => n.startsWith('attempts-pilot/'))).toHaveLength(4);
    // The human output names the gate and its reason, beside the pilot's verdict.
    const human = await rig.cli('run');
    expect(human.stdout).toMatch(
      /warning: factorial: 4 attempt\(s\) were not run, as preregistered: gate pilot-gate is closed: full vs raw on the pilot: \+0 pp/,
    );
    expect(human.stdout).toMatch(/factorial: full vs raw {2}\S+/);
    // What was observed is published: a bundle that verifies, the middle arms marked not run.
    const out = join(rig.dir, 'closed-bundle');
    const written = await rig.cli('export', '--out', out);
    expect(written.code, written.stderr).toBe(0);
    expect((await rig.cli('verify-bundle', out)).code).toBe(0);
    const report = readFileSync(join(out, 'report.md'), 'utf8');
    expect(report).toContain('were not run, as preregistered: gate pilot-gate is closed');
    expect(report).toMatch(/arm "graph" has no attempts/);

    // A pilot whose full arm carries the rule (a new project: the first one's cohorts are frozen):
    // the gate opens, the middle arms run, and the cohort compares full against each single lever
    // as well as each arm against raw (one Holm family).
    const second = new Rig();
    try {
      calculatorTask(second.dir);
      second.write('fixtures/graph.md', 'callers of add: none\n');
      second.write('fixtures/rules.md', 'Keep functions small.\n');
      second.write('fixtures/full.md', 'Always use + in add().\n');
      second.write('bench.config.yaml', config);
      const open = await second.cli('run', '--json');
      expect(open.code, open.stderr + open.stdout).toBe(0);
      const after = nodesOf(open.stdout);
      expect(executed(after).filter((n) => n.startsWith('attempts-middle/'))).toHaveLength(4);
      const analysis = second.recordOutputJson(after.find((n) => n.node === 'factorial')!.key!, 'analysis.json');
      const pairs = analysis.comparisons.map((c: { treatment: string; control: string; delta: number }) => [c.treatment, c.control, c.delta]);
      expect(pairs).toEqual([
        ['graph', 'raw', 0],
        ['rules', 'raw', 0],
        ['full', 'raw', 1],
        ['full', 'graph', 1],
        ['full', 'rules', 1],
      ]);
    } finally {
      second.cleanup();
    }
  });
});

describe('a judge beside the verifier (gortex)', () => {
  it('reads a class only from the first line of the reply; anything else is unclassified, never guessed', () => {
    expect(parseJudgement('(c) The tool pointed at the wrong call site.\nMore detail.')).toEqual({
      classification: 'c',
      reason: 'The tool pointed at the wrong call site.\nMore detail.',
    });
    expect(parseJudgement('**B** answered better')).toMatchObject({ classification: null });
    expect(parseJudgement('a) helped')).toEqual({ classification: 'a', reason: 'helped' });
    expect(parseJudgement('Arm B is better, so (a).')).toMatchObject({ classification: null, reason: 'unclassified reply: Arm B is better, so (a).' });
  });

  it('the report shows judge and verifier (a)/(b)/(c) side by side, their agreement, and warns when no task is (c)', async () => {
    // A second task on the same repository, in another category.
    copyTask(rig.dir, 'fix-add', 'fix-add-b', (y) => y.replace('family: fix-add-b', 'family: arithmetic').replace('category: bugfix', 'category: impact'));
    rig.write('fixtures/CLAUDE.md', 'Always use + in add().\n');
    rig.write(
      'judge.json',
      JSON.stringify({
        turns: [],
        completions: [
          { match: 'The task \\(fix-add-b,', text: '(b) Both arms end with the same module; the difference is cosmetic.' },
          { match: 'The task \\(fix-add,', text: '(a) Arm B fixed add(); arm A left it subtracting.' },
        ],
      }),
    );
    const m = `matrix: { task: [fix-add, fix-add-b], arm: [without, with], rep: 1 }`;
    rig.write(
      'bench.config.yaml',
      `concurrency: { global: 2 }
steps:
  materialize: { kind: materialize, matrix: { task: [fix-add, fix-add-b] } }
  certify:
    kind: certify
    needs: [materialize]
    matrix: { task: [fix-add, fix-add-b] }
    sandbox: { backend: local, egress: open }
    policy: { repeats: 1 }
  attempts:
    kind: run
    needs: [materialize, certify]
    ${m}
    agent: { adapter: command, command: '${READS_CONTEXT.replace(/'/g, "''")}' }
    arms:
      without: {}
      with: { files: { CLAUDE.md: fixtures/CLAUDE.md } }
    sandbox: { backend: local, egress: open }
  verify:
    kind: verify
    needs: [materialize, attempts]
    ${m}
    sandbox: { backend: local, egress: open }
  audit:
    kind: audit
    needs: [attempts, verify]
    ${m}
  judge:
    kind: judge
    needs: [materialize, attempts, verify]
    matrix: { task: [fix-add, fix-add-b] }
    control: without
    treatment: with
    rubric: |
      (a) helped: arm B solved what arm A did not. (b) no difference. (c) hurt: arm A solved what arm B did not.
    model: { name: judge-fake-1, fake_script: judge.json }
  gortex:
    kind: analyze
    needs: [audit, judge]
    control: without
    treatments: [with]
    judge: judge
    bootstrap: { resamples: 200, seed: 1 }
  export:
    kind: export
    needs: [materialize, certify, attempts, verify, audit, judge, gortex]
    cohort: gortex
`,
    );
    const r = await rig.cli('run', '--json');
    expect(r.code, r.stderr + r.stdout).toBe(0);
    // The judge saw both arms' diffs, never the verifier's verdict.
    const request = await rig.outputText('judge/fix-add', 'request.md');
    expect(request).toContain('-export const add = (a, b) => a - b;\n+export const add = (a, b) => a + b;');
    expect(request).toContain('# Arm A (control: without)');
    expect(request).not.toMatch(/pass|fail/i);
    const out = join(rig.dir, 'bundle');
    const exp = await rig.cli('export', '--out', out);
    expect(exp.code, exp.stderr).toBe(0);
    const report = readFileSync(join(out, 'report.md'), 'utf8');
    expect(report).toContain('## Judge and verifier: with vs without');
    const judged = report.slice(report.indexOf('## Judge'), report.indexOf('## Arms'));
    expect(judged).toContain('Agreement: 1 of 2 tasks both classified (50.0%)');
    expect(report).toMatch(/\| fix-add \| bugfix \| \(a\) \| \(a\) \| yes \| Arm B fixed add\(\); arm A left it subtracting\. \|/);
    expect(report).toMatch(/\| fix-add-b \| impact \| \(b\) \| \(a\) \| \*\*no\*\* \|/);
    expect(report).toContain('the judge classified no task (c) hurt');
    expect(report).toContain('the verifier found no task (c) hurt');
    expect(report).toContain("the judge's classifications were scripted");
    // Per category and the three mechanism claims.
    expect(report).toMatch(/\| bugfix \| 1 \| 1 \| 0 \| 0 \| 0 \|/);
    expect(report).toMatch(/- mechanism: delivered \d+, used \d+, outcome changed 2 of 2 valid pairs/);
    const html = readFileSync(join(out, 'report.html'), 'utf8');
    expect(html).toContain('<section id="judge">');
    // The judgements are in the bundle, hashed like everything else.
    expect((await rig.cli('verify-bundle', out)).code).toBe(0);
    expect(readFileSync(join(out, 'nodes/judge/fix-add-b/judgement.json'), 'utf8')).toContain('"classification": "b"');
    // Each attempt's patch, each task's spec and its verifier's bytes are in the bundle.
    expect(readFileSync(join(out, 'nodes/attempts/fix-add/with/1/patch.diff'), 'utf8')).toBe(
      'diff --git a/src/add.mjs b/src/add.mjs\nindex dc1ead9..d0f87bf 100644\n--- a/src/add.mjs\n+++ b/src/add.mjs\n@@ -1 +1 @@\n-export const add = (a, b) => a - b;\n+export const add = (a, b) => a + b;\n',
    );
    expect(readFileSync(join(out, 'nodes/attempts/fix-add/without/1/patch.diff'), 'utf8')).toBe('');
    expect(JSON.parse(readFileSync(join(out, 'tasks/fix-add-b/task.json'), 'utf8'))).toMatchObject({
      id: 'fix-add-b',
      category: 'impact',
      verifier: { fail_to_pass: { add_works: 'node "$VERIFIER_DIR/test_add.mjs"' } },
    });
    expect(readFileSync(join(out, 'tasks/fix-add/verifier/test_add.mjs'), 'utf8')).toBe(rig.read('tasks/fix-add/verifier/test_add.mjs'));
  });
});

describe('a Stele task must need the memory under test', () => {
  function setup(decisions: string, memory: string): void {
    const [c] = makeRepo(join(rig.dir, 'repos', 'ledger'), [{ 'src/add.mjs': 'export const add = (a, b) => a - b;\n', 'docs/decisions.md': decisions }]);
    rig.write(
      'tasks/ledger-add/task.yaml',
      rig
        .read('tasks/fix-add/task.yaml')
        .replace('id: fix-add', 'id: ledger-add')
        .replace('repos/calc', 'repos/ledger')
        .replace(/commit: [0-9a-f]{40}/, `commit: ${c}`) + 'facts: ["add must use the plus operator"]\n',
    );
    rig.write('tasks/ledger-add/solution.patch', rig.read('tasks/fix-add/solution.patch'));
    rig.write('tasks/ledger-add/verifier/test_add.mjs', rig.read('tasks/fix-add/verifier/test_add.mjs'));
    rig.write('fixtures/memory/graph.json', memory);
    rig.write(
      'bench.config.yaml',
      `steps:
  materialize: { kind: materialize, matrix: { task: [ledger-add] } }
  certify:
    kind: certify
    needs: [materialize]
    matrix: { task: [ledger-add] }
    sandbox: { backend: local, egress: open }
    policy: { repeats: 1 }
    memory_arms: [memory]
  attempts:
    kind: run
    needs: [materialize, certify]
    matrix: { task: [ledger-add], arm: [disabled, memory], rep: 1 }
    agent: { adapter: command, command: 'true' }
    arms:
      disabled: {}
      memory: { files: { .stele/graph.json: fixtures/memory/graph.json } }
    sandbox: { backend: local, egress: open }
`,
    );
  }
  const verdict = async () => JSON.parse(await rig.outputText('certify/ledger-add', 'verdict.json')) as { verdict: string; reasons: string[] };

  it('rejects a task whose fact is in the visible tree, naming the file and line', async () => {
    // The fact, wrapped over two lines of a tracked file: visible to an agent without the memory.
    setup('# Decisions\n\nWe decided that add Must\n  use the plus operator.\n', '{"decisions": ["add must use the plus operator"]}\n');
    await rig.cli('run', '--json');
    const v = await verdict();
    expect(v.verdict).toBe('rejected');
    expect(v.reasons).toContain(
      'memory-not-needed: the fact "add must use the plus operator" the answer depends on is visible without the memory, in tree docs/decisions.md:3: an agent can answer without the memory under test (remove it from the task\'s tree or prompt, or choose another fact)',
    );
    expect(v.reasons.some((r) => r.startsWith('memory-missing-fact'))).toBe(false);
  });

  it('rejects a task whose fact is not in the memory arm; certifies one whose fact only the memory holds', async () => {
    setup('# Decisions\n\nSee the memory.\n', '{"decisions": ["subtract is elsewhere"]}\n');
    await rig.cli('run', '--json');
    let v = await verdict();
    expect(v.verdict).toBe('rejected');
    expect(v.reasons).toEqual([expect.stringMatching(/^memory-missing-fact: the fact "add must use the plus operator" is in no treatment of arm memory/)]);

    rig.write('fixtures/memory/graph.json', '{"decisions": ["add must use the plus operator"]}\n');
    await rig.cli('run', '--json');
    v = await verdict();
    expect(v).toMatchObject({ verdict: 'certified', reasons: [] });
  });
});
