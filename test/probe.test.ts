import { cpSync, existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { claudeBinary } from '../agents/claude-code.js';
import type { LoadedConfig } from '../cli/command-context.js';
import { runProbe, type ProbeReport } from '../cli/probe.js';
import { buildGraph } from '../pipeline/dag.js';
import { loadConfig } from '../pipeline/config/load.js';
import { plan, resolveInputs, type EngineContext } from '../pipeline/engine.js';
import { Store } from '../pipeline/store/store.js';
import { builtinStepKinds } from '../steps/index.js';
import { calculatorTask } from './fixtures.js';
import { Rig } from './rig.js';
import { cliOutputProblems } from './cli-schema.js';

/** The config loaded the way cli/main.ts's load() does. */
function load(configFile: string): LoadedConfig {
  const config = loadConfig(configFile);
  if (!config.ok) throw new Error(JSON.stringify(config.error));
  const graph = buildGraph(config.value, builtinStepKinds);
  if (!graph.ok) throw new Error(JSON.stringify(graph.error));
  const ctx: EngineContext = { config: config.value, graph: graph.value, store: new Store(config.value.storeDir) };
  const inputs = resolveInputs(ctx, graph.value.nodes);
  if (!inputs.ok) throw new Error(JSON.stringify(inputs.error));
  return { config: config.value, graph: graph.value, ctx, inputs: inputs.value };
}

async function probe(rig: Rig, json: boolean, node?: string) {
  let stdout = '';
  let stderr = '';
  const code = await runProbe(
    load(join(rig.dir, 'bench.config.yaml')),
    { stdout: { write: (s: string) => (stdout += s) }, stderr: { write: (s: string) => (stderr += s) }, env: { PATH: process.env['PATH'], CI: '1' } },
    json,
    node,
  );
  return { code, stdout, stderr };
}

/** Two model turns with known usage; the same script drives Claude Code and the command agent below. */
const SCRIPT_USAGE = [
  { input_tokens: 1200, output_tokens: 40, cache_creation_input_tokens: 300, cache_read_input_tokens: 50 },
  { input_tokens: 1300, output_tokens: 12, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
];
const PER_ATTEMPT = { input_tokens: 2500, output_tokens: 52, cache_write_tokens: 300, cache_read_tokens: 50 };
const WEIGHTED = 2500 + 1.25 * 300 + 0.1 * 50 + 5 * 52;

/** A stand-in agent that speaks the Anthropic Messages API to the gateway: two turns, then done. */
const COMMAND_AGENT = `const url = process.env.PAIRBENCH_MODEL_URL + '/v1/messages';
const tools = [{ name: 'noop', description: 'does nothing', input_schema: { type: 'object', properties: {} } }];
const post = (messages) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': 'k', 'anthropic-version': '2023-06-01' }, body: JSON.stringify({ model: 'claude-fake-1', max_tokens: 64, tools, messages }) }).then((r) => r.json());
const first = [{ role: 'user', content: process.env.PAIRBENCH_PROMPT }];
const a = await post(first);
await post([...first, { role: 'assistant', content: a.content }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: a.content.find((b) => b.type === 'tool_use').id, content: 'ok' }] }]);
`;

function config(agent: string): string {
  return `steps:
  materialize:
    kind: materialize
    matrix: { task: [fix-add, fix-add-2] }
  certify:
    kind: certify
    needs: [materialize]
    matrix: { task: [fix-add, fix-add-2] }
    sandbox: { backend: local, egress: open }
    policy: { repeats: 1 }
  attempts:
    kind: run
    needs: [materialize, certify]
    matrix: { task: [fix-add, fix-add-2], arm: [control, treatment], rep: 3 }
    agent: ${agent}
    arms:
      control: {}
      treatment: { files: { CLAUDE.md: fixtures/CLAUDE.md } }
    limits: { turns: 6, wall_seconds: 120 }
    sandbox: { backend: local, egress: open }
    model: { fake_script: fixtures/script.json }
  verify:
    kind: verify
    needs: [materialize, attempts]
    matrix: { task: [fix-add, fix-add-2], arm: [control, treatment], rep: 3 }
    sandbox: { backend: local, egress: open }
`;
}

let rig: Rig;
beforeEach(() => {
  rig = new Rig();
  const { taskDir } = calculatorTask(rig.dir);
  // A second task on the same repository and commit.
  cpSync(taskDir, join(rig.dir, 'tasks', 'fix-add-2'), { recursive: true });
  rig.write('tasks/fix-add-2/task.yaml', rig.read('tasks/fix-add/task.yaml').replace('id: fix-add', 'id: fix-add-2'));
  rig.write('fixtures/CLAUDE.md', 'House rule 7f3a: add() must use the plus operator.\n');
  rig.write('fixtures/agent.mjs', COMMAND_AGENT);
  rig.write(
    'fixtures/script.json',
    JSON.stringify({
      turns: [
        { tool_calls: [{ name: 'Bash', input: { command: "sed -i 's/a - b/a + b/' src/add.mjs", description: 'fix add' } }], usage: SCRIPT_USAGE[0] },
        { text: 'Fixed add() to use +.', usage: SCRIPT_USAGE[1] },
      ],
    }),
  );
});
afterEach(() => rig.cleanup());

/** Nothing but the materialize nodes was recorded: no attempt, no certify, no verify. */
function expectOnlyMaterializeRecorded(): void {
  const loaded = load(join(rig.dir, 'bench.config.yaml'));
  const entries = plan(loaded.ctx, loaded.inputs, loaded.graph.nodes, { PATH: process.env['PATH'] });
  const status = Object.fromEntries(entries.map((e) => [e.node, e.status]));
  expect(status['materialize/fix-add']).toBe('cached');
  expect(status['attempts/fix-add/control/1']).toBe('run');
  expect(status['certify/fix-add']).toBe('run');
  for (const e of entries.filter((e) => !e.node.startsWith('materialize/'))) expect(e.status, e.node).toBe('run');
  // (It waits on certify, which the probe never runs.)
  expect(entries.find((e) => e.node === 'attempts/fix-add/control/1')).toMatchObject({
    reasons: ['upstream certify/fix-add will run first (cached again if its output is unchanged)'],
  });
  // The node index knows only the materialize node the probe built (never an attempt or verify).
  for (const n of loaded.graph.nodes.filter((n) => n.step.name !== 'materialize')) expect(loaded.ctx.store.nodes.get(n.id), n.id).toBeUndefined();
  const records = readdirSync(join(rig.dir, '.pairbench', 'ac'), { recursive: true }).filter((f) => String(f).endsWith('.json'));
  expect(records.length).toBe(1); // materialize/fix-add only
  // The work dir of the attempt is gone.
  expect(readdirSync(join(rig.dir, '.pairbench', 'tmp')).filter((f) => f.startsWith('probe-'))).toEqual([]);
}

function expectProjection(r: ProbeReport, attempts: number): void {
  expect(r.cohort.attempts).toBe(attempts);
  expect(r.cohort.dimensions).toEqual({ task: 2, arm: 2, rep: 3 });
  const p = r.per_attempt;
  const c = r.cohort.projected;
  expect(p.usage).toEqual(PER_ATTEMPT);
  expect(p.total_tokens).toBe(2500 + 52 + 300 + 50);
  expect(p.weighted_tokens).toBeCloseTo(WEIGHTED, 9);
  expect(c.usage).toEqual({
    input_tokens: 2500 * attempts,
    output_tokens: 52 * attempts,
    cache_write_tokens: 300 * attempts,
    cache_read_tokens: 50 * attempts,
  });
  expect(c.total_tokens).toBe(p.total_tokens! * attempts);
  expect(c.weighted_tokens).toBeCloseTo(p.weighted_tokens! * attempts, 6);
  // The model is scripted: no request reached a priced provider, so there is no cost to project.
  expect(p.cost_usd).toBeNull();
  expect(c.cost_usd).toBeNull();
  expect(c.wall_ms_total).toBe(p.wall_ms * attempts);
  expect(c.wall_ms_elapsed).toBe(p.wall_ms * Math.ceil(attempts / r.cohort.concurrency));
  expect(r.cost_confidence).toBe('none');
  expect(r.caveats).toContain(
    'no request reached a priced provider (the model is scripted, or was never reached): there is no cost to project; the tokens and weighted cost are the figures',
  );
  expect(r.caveats[0]).toMatch(/^one attempt is one sample/);
}

describe('pairbench probe', () => {
  it('command agent: one unrecorded attempt; the projection is per-attempt usage x tasks x arms x reps', async () => {
    rig.write('bench.config.yaml', config(`{ adapter: command, command: 'node ${join(rig.dir, 'fixtures', 'agent.mjs')}' }`));
    const r = await probe(rig, true);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const report = JSON.parse(r.stdout) as ProbeReport;
    expect(cliOutputProblems('#/definitions/probe', report)).toBe('');
    expect(report).toMatchObject({ ok: true, node: 'attempts/fix-add/control/1', step: 'attempts', source: 'probe', exit_reason: 'done' });
    expect(report.weights).toEqual({ input: 1, cache_write: 1.25, cache_read: 0.1, output: 5 });
    expectProjection(report, 12);
    expect(report.cohort.concurrency).toBe(4);
    expect(report.caveats).toContain('arm treatment adds context the probed arm does not have, so its attempts may cost more');
    expect(report.caveats).toContain('certify was not run by the probe: a task it rejects would not be attempted at all');
    expectOnlyMaterializeRecorded();
  });

  it('the text form prints per attempt and cohort figures; NODE picks the arm', async () => {
    rig.write('bench.config.yaml', config(`{ adapter: command, command: 'node ${join(rig.dir, 'fixtures', 'agent.mjs')}' }`));
    const r = await probe(rig, false, 'attempts/fix-add/treatment');
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe('probe attempt attempts/fix-add/treatment/1: done (command user-command, model default)');
    expect(lines[1]).toBe('  per attempt   tokens 2,902 (input 2,500, cache write 300, cache read 50, output 52)');
    expect(lines[2]).toBe(
      `                weighted ${Math.round(WEIGHTED).toLocaleString('en-US')} (input + 1.25 x cache_write + 0.1 x cache_read + 5 x output)`,
    );
    expect(lines[3]).toMatch(/^ {16}cost none \(no priced provider\), wall [\d.]+ s, 2 turns$/);
    expect(lines[4]).toBe('  cohort        12 attempts of step attempts (2 tasks x 2 arms x 3 reps)');
    expect(lines[5]).toBe(
      `                tokens ${(2902 * 12).toLocaleString('en-US')}, weighted ${Math.round(WEIGHTED * 12).toLocaleString('en-US')}, cost none (no priced provider)`,
    );
    expect(lines[6]).toMatch(/^ {16}wall [\d.]+ s of agent time; about [\d.]+ s elapsed at concurrency 4$/);
    expect(r.stdout).toContain('note: one attempt is one sample');
    expect(r.stderr).toContain('probe: attempts/fix-add/treatment/1 (one attempt, not recorded; no certify, no verify)');
    expect(r.stdout).not.toContain('arm treatment adds context'); // the probed arm is the one with context
  });

  it('a recorded attempt is priced from its record: nothing new runs', async () => {
    rig.write('bench.config.yaml', config(`{ adapter: command, command: 'node ${join(rig.dir, 'fixtures', 'agent.mjs')}' }`));
    const ran = await rig.cli('run', 'attempts/fix-add/control/1');
    expect(ran.code, ran.stderr).toBe(0);
    const r = await probe(rig, true, 'attempts/fix-add/control/1');
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout) as ProbeReport;
    expect(cliOutputProblems('#/definitions/probe', report)).toBe('');
    expect(report.source).toBe('recorded');
    expectProjection(report, 12);
  });

  it('NODE that is not a run node, or matches nothing, is a usage error', async () => {
    rig.write('bench.config.yaml', config(`{ adapter: command, command: 'true' }`));
    const v = await probe(rig, false, 'verify/fix-add/control/1');
    expect(v.code).toBe(2);
    expect(v.stderr).toContain('verify/fix-add/control/1 is a verify node; probe runs one attempt of a run step');
    const u = await probe(rig, false, 'atempts');
    expect(u.code).toBe(2);
    expect(u.stderr).toContain('no run node matches "atempts"');
    expect(existsSync(join(rig.dir, '.pairbench', 'ac'))).toBe(false); // nothing ran
  });

  it.skipIf(!existsSync(claudeBinary()))('the real Claude Code CLI against the fake model: real usage from the gateway, projected', async () => {
    rig.write('bench.config.yaml', config('{ adapter: claude-code, model: claude-fake-1 }'));
    const r = await probe(rig, true);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const report = JSON.parse(r.stdout) as ProbeReport;
    expect(cliOutputProblems('#/definitions/probe', report)).toBe('');
    expect(report).toMatchObject({ source: 'probe', exit_reason: 'done', agent: { adapter: 'claude-code', version: '2.1.197', model: 'claude-fake-1' } });
    // The usage is what the gateway read from the (fake) provider's replies, exactly.
    expectProjection(report, 12);
    expectOnlyMaterializeRecorded();
  });
});
