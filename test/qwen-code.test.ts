import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { qwenCli } from '../agents/qwen-code.js';
import { atifProblems, promptTokens } from './atif.js';
import { calculatorTask } from './fixtures.js';
import { PROVIDER_FAULTS, survivesProviderFaults, withFaults } from './provider-faults.js';
import { Rig } from './rig.js';

// The REAL Qwen Code CLI (npm optional dependency, run by this Node) against the scripted fake
// model (OpenAI Chat Completions), through the recording gateway; QWEN.md is the treatment.
let rig: Rig;
beforeEach(() => {
  rig = new Rig();
  calculatorTask(rig.dir);
  rig.write('fixtures/QWEN.md', 'Convention 3e8a: arithmetic helpers use the obvious operator.\n');
  rig.write(
    'fixtures/qwen.script.json',
    JSON.stringify({
      turns: [
        {
          tool_calls: [{ name: 'run_shell_command', input: { command: "sed -i 's/a - b/a + b/' src/add.mjs", description: 'fix add' } }],
          usage: { input_tokens: 800, output_tokens: 30, cache_read_input_tokens: 100 },
        },
        { text: 'Fixed.', usage: { input_tokens: 1000, output_tokens: 5 } },
      ],
    }),
  );
});
afterEach(() => rig.cleanup());

function config(backend: string): string {
  const sandbox = backend === 'local' ? '{ backend: local, egress: open }' : `{ backend: ${backend}, egress: none }`;
  return `steps:
  materialize: { kind: materialize, matrix: { task: [fix-add] } }
  attempts:
    kind: run
    needs: [materialize]
    matrix: { task: [fix-add], arm: [control, treatment], rep: 1 }
    agent: { adapter: qwen-code, model: qwen-fake }
    arms:
      control: {}
      treatment: { files: { QWEN.md: fixtures/QWEN.md } }
    limits: { turns: 6, wall_seconds: 180 }
    sandbox: ${sandbox}
    model: { fake_script: fixtures/qwen.script.json }
  verify:
    kind: verify
    needs: [materialize, attempts]
    matrix: { task: [fix-add], arm: [control, treatment], rep: 1 }
    sandbox: ${sandbox}
`;
}

const AUDIT = `  audit:
    kind: audit
    needs: [attempts, verify]
    matrix: { task: [fix-add], arm: [control, treatment], rep: 1 }
`;

describe.skipIf(!existsSync(qwenCli()))('Qwen Code end to end', () => {
  for (const backend of ['local', 'bubblewrap']) {
    it(`${backend}: edits, passes the verifier; usage from the gateway; QWEN.md delivery proven; an ATIF trajectory`, async () => {
      rig.write('bench.config.yaml', config(backend));
      const r = await rig.cli('run');
      expect(r.code, r.stderr).toBe(0);
      for (const arm of ['control', 'treatment']) {
        const result = await rig.outputJson(`attempts/fix-add/${arm}/1`, 'result.json');
        expect(result.exit_reason, await rig.outputText(`attempts/fix-add/${arm}/1`, 'agent.log')).toBe('done');
        expect(result.agent).toMatchObject({ adapter: 'qwen-code', version: '0.15.10', model: 'qwen-fake', provider: 'openai' });
        expect(result.tool_calls).toBe(1);
        // Chat Completions' prompt tokens include the cached ones; the gateway splits them out.
        expect(result.usage).toMatchObject({ input_tokens: 1800, output_tokens: 35, cache_read_tokens: 100 });
        expect(result.delivered).toEqual(arm === 'treatment' ? { treatment: true } : {});
        expect((await rig.outputJson(`verify/fix-add/${arm}/1`, 'verdict.json')).pass).toBe(true);
        const trajectory = await rig.outputJson(`attempts/fix-add/${arm}/1`, 'trajectory.json');
        expect(trajectory.agent).toMatchObject({ name: 'qwen-code', version: '0.15.10' });
        expect(trajectory.steps.some((s: { tool_calls?: { function_name: string }[] }) => s.tool_calls?.[0]?.function_name === 'run_shell_command')).toBe(true);
        expect(atifProblems(trajectory)).toEqual([]);
        expect(trajectory.final_metrics.total_prompt_tokens).toBeGreaterThan(0);
        expect(promptTokens(result.usage)).toBe(1900);
        // Its memory extraction after the task (a model call with tools) is off: one request per scripted turn.
        const exchanges = (await rig.outputText(`attempts/fix-add/${arm}/1`, 'gateway.jsonl')).trim().split('\n');
        expect(exchanges.filter((l) => (JSON.parse(l).request_body?.tools ?? []).length > 0)).toHaveLength(2);
      }
    });
  }

  it("doctor: the pinned version is installed, and its canary turn runs in the step's sandbox", async () => {
    rig.write('bench.config.yaml', config('bubblewrap'));
    const r = await rig.cli('doctor');
    expect(r.code, r.stdout).toBe(0);
    expect(r.stdout).toMatch(/^ok {7}agent qwen-code \(step attempts\): @qwen-code\/qwen-code 0\.15\.10 installed \(the pinned version\)$/m);
    expect(r.stdout).toMatch(/^ok {7}agent canary \(step attempts: qwen-code 0\.15\.10 in bubblewrap\): /m);
  });

  it('bubblewrap: survives a 429 (retry after 1 s) and a 529: each try recorded, its wait in the wall time', async () => {
    await survivesProviderFaults(rig, config('bubblewrap'), 'fixtures/qwen.script.json', 800, PROVIDER_FAULTS.slice(0, 2));
  });

  it('a stream broken by an error event, which Qwen Code does not retry (it says "[API Error ...]" and exits 0): the provider failed, not the agent', async () => {
    rig.write(
      'fixtures/faults.script.json',
      withFaults(readFileSync(join(rig.dir, 'fixtures/qwen.script.json'), 'utf8'), [{ request: 1, stream_error: 'overloaded_error' }]),
    );
    rig.write('bench.config.yaml', config('local').replaceAll('fixtures/qwen.script.json', 'fixtures/faults.script.json') + AUDIT);
    const r = await rig.cli('run', 'audit/fix-add/control', '--json');
    expect(r.code, r.stderr).toBe(0);
    const key = (JSON.parse(r.stdout).nodes as { node: string; key: string }[]).find((n) => n.node === 'audit/fix-add/control/1')!.key;
    const audit = rig.recordOutputJson(key, 'audit.json');
    expect(audit).toMatchObject({ admission: 'excluded', reason_code: 'infra-provider', infra_error: true });
    expect(audit.infra_cause).toBe('model provider: HTTP 200: error event mid-stream: server_error: overloaded_error (scripted, mid-stream)');
  });
});
