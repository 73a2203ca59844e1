import { cpSync, existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { claudeBinary } from '../agents/claude-code.js';
import { atifProblems } from './atif.js';
import { cliOutputProblems } from './cli-schema.js';
import { calculatorTask } from './fixtures.js';
import { Rig } from './rig.js';

// What only Claude Code does, the REAL CLI against the scripted fake model through pairbench's
// recording gateway: MCP servers, the system-prompt addition, a refused key, caps, the Harbor
// layout. What every adapter must do is test/agent-adapters.test.ts.
let rig: Rig;
beforeEach(() => {
  rig = new Rig();
  calculatorTask(rig.dir);
  rig.write('fixtures/CLAUDE.md', 'House rule 7f3a: add() must use the plus operator.\n');
  rig.write(
    'fixtures/fix-add.script.json',
    JSON.stringify({
      turns: [
        {
          tool_calls: [{ name: 'Bash', input: { command: "sed -i 's/a - b/a + b/' src/add.mjs && cat src/add.mjs", description: 'fix add' } }],
          usage: { input_tokens: 1200, output_tokens: 40, cache_creation_input_tokens: 300, cache_read_input_tokens: 50 },
        },
        { text: 'Fixed add() to use +.', usage: { input_tokens: 1300, output_tokens: 12 } },
      ],
    }),
  );
});
afterEach(() => rig.cleanup());

function config(backend: string, extra = ''): string {
  const sandbox = backend === 'local' ? '{ backend: local, egress: open }' : `{ backend: ${backend}, egress: none }`;
  return `steps:
  materialize:
    kind: materialize
    matrix: { task: [fix-add] }
  attempts:
    kind: run
    needs: [materialize]
    matrix: { task: [fix-add], arm: [control, treatment], rep: 1 }
    agent: { adapter: claude-code, model: claude-fake-1 }
    arms:
      control: {}
      treatment: { files: { CLAUDE.md: fixtures/CLAUDE.md } }
    limits: { turns: 6, wall_seconds: 120${extra} }
    sandbox: ${sandbox}
    model: { fake_script: fixtures/fix-add.script.json }
  verify:
    kind: verify
    needs: [materialize, attempts]
    matrix: { task: [fix-add], arm: [control, treatment], rep: 1 }
    sandbox: ${sandbox}
`;
}

/** A minimal MCP stdio server: one tool, `ping`. */
const MCP_SERVER = `import { createInterface } from 'node:readline';
const send = (m) => process.stdout.write(JSON.stringify(m) + '\\n');
for await (const line of createInterface({ input: process.stdin })) {
  const msg = JSON.parse(line);
  if (msg.method === 'initialize') send({ jsonrpc: '2.0', id: msg.id, result: { protocolVersion: msg.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'probe', version: '1.0.0' } } });
  else if (msg.method === 'tools/list') send({ jsonrpc: '2.0', id: msg.id, result: { tools: [{ name: 'ping', description: 'Answers pong.', inputSchema: { type: 'object', properties: {} } }] } });
  else if (msg.method === 'tools/call') send({ jsonrpc: '2.0', id: msg.id, result: { content: [{ type: 'text', text: 'pong from the probe' }] } });
  else if (msg.id !== undefined) send({ jsonrpc: '2.0', id: msg.id, result: {} });
}
`;

/** Arm `arm` an MCP server (`server`'s source, as probe) on `backend`, the cohort audited; its model calls the probe's tool. */
function mcpArm(backend: string, arm: string, server: string): void {
  rig.write('fixtures/probe-server.mjs', server);
  rig.write(
    'fixtures/mcp.script.json',
    JSON.stringify({ turns: [{ tool_calls: [{ name: 'mcp__probe__ping', input: {} }] }, { text: 'The probe answered.' }] }),
  );
  rig.write(
    'bench.config.yaml',
    config(backend)
      .replace(
        'treatment: { files: { CLAUDE.md: fixtures/CLAUDE.md } }',
        `${arm}: { files: { .tools/probe.mjs: fixtures/probe-server.mjs }, mcp_servers: { probe: { command: node, args: [.tools/probe.mjs] } } }`,
      )
      .replace('fake_script: fixtures/fix-add.script.json', 'fake_script: fixtures/mcp.script.json')
      .replace(/arm: \[control, treatment\]/g, `arm: [control, ${arm}]`) +
      `  audit: { kind: audit, needs: [attempts, verify], matrix: { task: [fix-add], arm: [control, ${arm}], rep: 1 } }
`,
  );
}

describe.skipIf(!existsSync(claudeBinary()))('Claude Code end to end', () => {
  it('export --harbor-layout: a Harbor jobs directory (one trial per attempt, ATIF trajectories, Harbor-shaped results) around the same bundle', async () => {
    rig.write(
      'bench.config.yaml',
      config('bubblewrap') +
        `  audit: { kind: audit, needs: [attempts, verify], matrix: { task: [fix-add], arm: [control, treatment], rep: 1 } }
  analyze: { kind: analyze, needs: [audit], control: control, treatments: [treatment], bootstrap: { resamples: 200, seed: 7 } }
  export: { kind: export, needs: [materialize, attempts, verify, audit, analyze], cohort: calc-claude }
`,
    );
    expect((await rig.cli('run')).code).toBe(0);
    const plain = join(rig.dir, 'plain');
    const jobs = join(rig.dir, 'jobs');
    expect((await rig.cli('export', '--out', plain)).code).toBe(0);
    const r = await rig.cli('export', '--out', jobs, '--harbor-layout', '--json');
    expect(r.code, r.stderr).toBe(0);
    expect(cliOutputProblems('#/definitions/export', JSON.parse(r.stdout))).toBe('');
    const out = JSON.parse(r.stdout).bundles[0];
    // The job is the cohort at its registered version.
    const { cohort, version } = JSON.parse(readFileSync(join(plain, 'results.json'), 'utf8'));
    const job = join(jobs, `${cohort}-v${version}`);
    expect(out.harbor_job).toEqual({ dir: job, trials: 2 });
    // The bundle inside the job is the same bundle, and still verifies.
    expect(out.dir).toBe(join(job, 'pairbench'));
    expect(out.root_digest).toBe(JSON.parse((await rig.cli('verify-bundle', plain, '--json')).stdout).root_digest);
    expect((await rig.cli('verify-bundle', out.dir, '--root', `sha256:${out.root_digest}`)).code).toBe(0);
    // The --json shapes of verify-bundle (clean and tampered) and freeze, as published.
    expect(cliOutputProblems('#/definitions/verify_bundle', JSON.parse((await rig.cli('verify-bundle', plain, '--json')).stdout))).toBe('');
    expect(cliOutputProblems('#/definitions/freeze', JSON.parse((await rig.cli('freeze', '--json')).stdout))).toBe('');
    const copy = join(rig.dir, 'tampered');
    cpSync(plain, copy, { recursive: true });
    writeFileSync(join(copy, 'report.md'), readFileSync(join(copy, 'report.md'), 'utf8') + 'tampered\n');
    const tampered = await rig.cli('verify-bundle', copy, '--json');
    expect(tampered.code).toBe(1);
    expect(JSON.parse(tampered.stdout)).toMatchObject({ ok: false, differs: ['report.md'] });
    expect(cliOutputProblems('#/definitions/verify_bundle', JSON.parse(tampered.stdout))).toBe('');
    // What Harbor's JobScanner lists: job directories, and trials as the directories holding a result.json.
    expect(readdirSync(jobs)).toEqual([`${cohort}-v${version}`]);
    const trials = readdirSync(job).filter((d) => existsSync(join(job, d, 'result.json')));
    expect(trials.sort()).toEqual(['fix-add__control__1', 'fix-add__treatment__1']);
    const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
    const jobResult = JSON.parse(readFileSync(join(job, 'result.json'), 'utf8'));
    expect(jobResult.id).toMatch(uuid);
    expect(jobResult).toMatchObject({ n_total_trials: 2, stats: { n_completed_trials: 2, n_errored_trials: 0 } });
    expect(Object.keys(jobResult.stats.evals).sort()).toEqual(['claude-code__claude-fake-1__control', 'claude-code__claude-fake-1__treatment']);
    expect(JSON.parse(readFileSync(join(job, 'config.json'), 'utf8'))).toMatchObject({
      job_name: `${cohort}-v${version}`,
      agents: [{ name: 'claude-code', model_name: 'claude-fake-1' }],
      tasks: [{ path: 'fix-add' }],
    });
    for (const t of trials) {
      const result = JSON.parse(readFileSync(join(job, t, 'result.json'), 'utf8'));
      // TrialResult's required fields, in Harbor's types.
      expect(result.id).toMatch(uuid);
      expect(result).toMatchObject({
        task_name: 'fix-add',
        trial_name: t,
        task_id: { path: 'fix-add' },
        config: { task: { path: 'fix-add' }, trial_name: t },
        agent_info: { name: 'claude-code', version: '2.1.197', model_info: { name: 'claude-fake-1' } },
      });
      expect(result.trial_uri).toBe(pathToFileURL(join(job, t)).href);
      expect(typeof result.task_checksum).toBe('string');
      expect(result.verifier_result).toEqual({ rewards: { reward: 1 } });
      expect(result.agent_result.metadata.pairbench).toMatchObject({ admission: 'accepted', reason_code: 'ok' });
      const trajectory = JSON.parse(readFileSync(join(job, t, 'agent', 'trajectory.json'), 'utf8'));
      expect(atifProblems(trajectory)).toEqual([]);
      // Harbor's n_input_tokens and ATIF's total_prompt_tokens: one definition (every input token).
      expect(result.agent_result.n_input_tokens).toBe(trajectory.final_metrics.total_prompt_tokens);
      expect(result.agent_result.n_input_tokens).toBe(2500 + 300 + 50);
      expect(readFileSync(join(job, t, 'verifier', 'test-stdout.txt'), 'utf8')).not.toBe('');
    }
    // An existing, non-empty destination is refused, and nothing is left half-written.
    const again = await rig.cli('export', '--out', jobs, '--harbor-layout');
    expect(again.code).not.toBe(0);
    expect(again.stderr).toContain('exists and is not empty');
    expect(readdirSync(rig.dir).filter((d) => d.includes('.partial-'))).toEqual([]);
  });

  it('an MCP server arm: its tools are offered to the model (delivery) and called through MCP inside the sandbox', async () => {
    mcpArm('bubblewrap', 'mcp', MCP_SERVER);
    const r = await rig.cli('run', 'attempts');
    expect(r.code, r.stderr).toBe(0);
    const mcp = JSON.parse(await rig.outputText('attempts/fix-add/mcp/1', 'result.json'));
    expect(mcp.delivered).toEqual({ mcp: true });
    const log = await rig.outputText('attempts/fix-add/mcp/1', 'gateway.jsonl');
    expect(log).toContain('pong from the probe'); // the tool result went back to the model
    // The control arm's requests never offer the tool (its scripted model still asks for it).
    const offered = (log: string) =>
      log
        .split('\n')
        .filter(Boolean)
        .flatMap((l) => ((JSON.parse(l).request_body?.tools ?? []) as { name: string }[]).map((t) => t.name));
    expect(offered(await rig.outputText('attempts/fix-add/control/1', 'gateway.jsonl')).filter((n) => n.startsWith('mcp__'))).toEqual([]);
    expect(offered(log)).toContain('mcp__probe__ping');
    const changes = JSON.parse(await rig.outputText('attempts/fix-add/mcp/1', 'changes.json'));
    expect(changes.written).toEqual({}); // the server file is treatment, not a change
  });

  it("an MCP server that is not up at the first turn: that try is an infrastructure fault naming the server, retried at once, the try kept on the attempt's record", async () => {
    // The server crashes on its first start (it leaves a mark on the host: the local backend), then serves.
    const mark = join(rig.dir, 'probe-started-once');
    mcpArm(
      'local',
      'treatment',
      `import { existsSync, writeFileSync } from 'node:fs';\nif (!existsSync(${JSON.stringify(mark)})) { writeFileSync(${JSON.stringify(mark)}, ''); process.exit(1); }\n` +
        MCP_SERVER,
    );
    const r = await rig.cli('run', '--progress', 'plain');
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout + r.stderr).toMatch(
      /treatment not ready: the model's first turn was not offered the tools of MCP server\(s\) probe .*; trying again now \(try 2 of 3\)/,
    );
    // The attempt that counts is the second try: delivered and used; the first is on its record, as an infrastructure fault.
    const audit = JSON.parse(await rig.outputText('audit/fix-add/treatment/1', 'audit.json'));
    expect(audit).toMatchObject({ admission: 'accepted', mechanism: { delivered: true, used: true } });
    expect(audit.tries).toEqual([expect.objectContaining({ exit_reason: 'infra-error', infra_error: expect.stringContaining('treatment not ready') })]);
  });

  it('an MCP server that never comes up: after three tries the attempt is excluded as infra-treatment, not cached; the model calls to its tool failed, so nothing was delivered or used', async () => {
    mcpArm('local', 'treatment', 'process.exit(1);\n');
    const r = await rig.cli('run', '--json');
    expect(r.code, r.stderr).toBe(0);
    const nodes = JSON.parse(r.stdout).nodes as { node: string; key?: string }[];
    const audit = rig.recordOutputJson(nodes.find((n) => n.node === 'audit/fix-add/treatment/1')!.key!, 'audit.json');
    expect(audit).toMatchObject({ admission: 'excluded', reason_code: 'infra-treatment', mechanism: { delivered: false, used: false } });
    expect(audit.explanation).toContain("treatment not ready: the model's first turn was not offered the tools of MCP server(s) probe");
    expect(audit.tries).toHaveLength(2);
    // Not cached: the next run tries again.
    await expect(rig.outputText('attempts/fix-add/treatment/1', 'result.json')).rejects.toThrow('has no cached output');
  });

  it('a prompt addition and its ablation go to the system prompt (--append-system-prompt), never into the task prompt', async () => {
    rig.write(
      'bench.config.yaml',
      config('local')
        .replace(/arm: \[control, treatment\]/g, 'arm: [steered, ablated]')
        .replace(
          '      control: {}\n      treatment: { files: { CLAUDE.md: fixtures/CLAUDE.md } }',
          '      steered: { prompt_append: "Prefer the graph tools over grep.\\nAnswer in one line." }\n      ablated: { ablate: { from: steered, drop_lines: ["prefer the graph"] } }',
        ),
    );
    const r = await rig.cli('run', 'attempts');
    expect(r.code, r.stderr).toBe(0);
    const texts = async (arm: string) => {
      const first = JSON.parse(
        (await rig.outputText(`attempts/fix-add/${arm}/1`, 'gateway.jsonl')).split('\n').find((l) => JSON.parse(l).request_body?.tools?.length)!,
      );
      const system = (first.request_body.system as { text: string }[]).map((b) => b.text).join('\n');
      const user = JSON.stringify(first.request_body.messages);
      return { system, user };
    };
    const steered = await texts('steered');
    expect(steered.system).toContain('Prefer the graph tools over grep.');
    expect(steered.user).not.toContain('Prefer the graph tools');
    const ablated = await texts('ablated');
    expect(ablated.system).toContain('Answer in one line.');
    expect(ablated.system).not.toContain('Prefer the graph tools');
    // Delivery is proven where the text went: the system prompt.
    expect(JSON.parse(await rig.outputText('attempts/fix-add/steered/1', 'result.json')).delivered).toEqual({ steered: true });
  });

  it('a real upstream gets the key from the host (never the agent); doctor finds its 401 in one request, and a run records it as infra-provider', async () => {
    const { createServer } = await import('node:http');
    const seen: string[] = [];
    const server = createServer((req, res) => {
      seen.push(String(req.headers['x-api-key'] ?? ''));
      res.writeHead(401, { 'content-type': 'application/json' }).end('{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    try {
      rig.env = { PROVIDER_KEY: 'sk-test-host-only' };
      // Claude Code retries a 401 with backoff for minutes; the provider's first refusal ends the attempt (no wall cap does).
      rig.write(
        'bench.config.yaml',
        config('local').replace(
          'model: { fake_script: fixtures/fix-add.script.json }',
          `model: { upstream: "http://127.0.0.1:${port}", api_key_env: PROVIDER_KEY }`,
        ) +
          `  audit:
    kind: audit
    needs: [attempts, verify]
    matrix: { task: [fix-add], arm: [control, treatment], rep: 1 }
`,
      );
      // doctor proves the key before any attempt: one request, refused, named with the variable.
      const doctor = await rig.cli('doctor');
      expect(doctor.code, doctor.stdout).toBe(1);
      expect(seen).toEqual(['sk-test-host-only']);
      expect(doctor.stdout).toMatch(
        /^MISSING {2}credential PROVIDER_KEY \(step attempts\): .* refused the key in PROVIDER_KEY: HTTP 401: authentication_error: invalid x-api-key$/m,
      );
      seen.length = 0;

      const r = await rig.cli('run', 'audit/fix-add/control');
      expect(r.code, r.stderr).toBe(0);
      expect(seen.length).toBeGreaterThan(0);
      expect(new Set(seen)).toEqual(new Set(['sk-test-host-only']));
      expect(r.stderr).toContain('not cached (the next run tries again)');
      // The provider's refusal is named as such: the agent did start (it made a request).
      expect(r.stderr).toContain('the model provider failed or refused');
      expect(r.stderr).not.toContain('agent did not start');
      // The attempt is not cached (the next run tries again); its audit is, under the key that run reports.
      const again = await rig.cli('run', 'audit/fix-add/control', '--json');
      const keys = new Map((JSON.parse(again.stdout).nodes as { node: string; key: string }[]).map((n) => [n.node, n.key]));
      const audit = rig.recordOutputJson(keys.get('audit/fix-add/control/1')!, 'audit.json');
      expect(audit.infra_cause).toBe('model provider: HTTP 401: authentication_error: invalid x-api-key');
      expect(audit).toMatchObject({ admission: 'excluded', reason_code: 'infra-provider', pass: null, infra_error: true });
      expect((await rig.cli('plan')).stdout).toContain('to run  attempts/fix-add/control/1');
      // The key is nowhere in the store (the gateway log and the receipts redact it).
      const { spawnSync } = await import('node:child_process');
      const grep = spawnSync('grep', ['-rl', 'sk-test-host-only', join(rig.dir, '.pairbench')], { encoding: 'utf8' });
      expect(grep.stdout).toBe('');
      expect(grep.status).toBe(1); // grep: no match
    } finally {
      server.close();
    }
  });

  it('a token cap ends the attempt as token-cap (the gateway refuses the request past the budget)', async () => {
    rig.write('bench.config.yaml', config('local', ', tokens: 1000'));
    const r = await rig.cli('run', 'attempts/fix-add/control');
    expect(r.code, r.stderr).toBe(0);
    const result = JSON.parse(await rig.outputText('attempts/fix-add/control/1', 'result.json'));
    expect(result.exit_reason).toBe('token-cap');
  });

  it('a cost cap ends the attempt as cost-cap', async () => {
    rig.write('bench.config.yaml', config('local', ', cost_usd: 0.001'));
    const r = await rig.cli('run', 'attempts/fix-add/control');
    expect(r.code, r.stderr).toBe(0);
    const result = JSON.parse(await rig.outputText('attempts/fix-add/control/1', 'result.json'));
    expect(result.exit_reason).toBe('cost-cap');
    // The cap counts the scripted usage at list price; the record states no cost: nothing reached a priced provider.
    expect(result.cost_usd).toBeNull();
    expect(result.cost_confidence).toBe('none');
    expect(result.model_source).toBe('scripted');
  });

  it('a turn cap ends the attempt as turn-cap', async () => {
    rig.write('bench.config.yaml', config('local').replace('turns: 6', 'turns: 1'));
    const r = await rig.cli('run', 'attempts/fix-add/control');
    expect(r.code, r.stderr).toBe(0);
    const result = JSON.parse(await rig.outputText('attempts/fix-add/control/1', 'result.json'));
    expect(result.exit_reason).toBe('turn-cap');
  });
});
