/**
 * The shared adapter suite: every agent CLI adapter, run for real against the scripted model
 * through the recording gateway, on the same task with the same script (its shell tool by its
 * own name), held to the same: the verifier passes, usage comes from the gateway, delivery of
 * its instruction file is proven in the treatment only, its trajectory is valid ATIF, the
 * provider's key never reaches it, doctor finds it at its pinned version and its canary runs, and it survives a provider's 429 and 529 with every try on
 * the record. Adding an adapter is adding its line to ADAPTERS; what only one adapter does
 * (MCP, caps, a refused key, egress) stays in its own test file.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { claudeBinary } from '../agents/claude-code.js';
import { codexBinary } from '../agents/codex.js';
import { qwenCli } from '../agents/qwen-code.js';
import { opencodeBinary } from '../agents/opencode.js';
import { geminiCli } from '../agents/gemini-cli.js';
import type { FakeToolCall } from '../gateway/fake-script.js';
import { atifProblems, promptTokens } from './atif.js';
import { calculatorTask } from './fixtures.js';
import { PROVIDER_FAULTS, survivesProviderFaults } from './provider-faults.js';
import { Rig } from './rig.js';
import { fixAddConfig } from './fix-add-config.js';

interface AdapterCase {
  adapter: string;
  installed: () => boolean;
  version: string;
  provider: string;
  model: string;
  /** The file the arm delivers, which this agent hands its model as instructions. */
  instructions: string;
  /** Its shell tool, as it offers it, running `command`. */
  shell: (command: string) => FakeToolCall;
  /** It retries a stream the provider broke with an error event (Qwen Code gives up: infra-provider, qwen-code.test.ts). */
  retriesBrokenStream: boolean;
}

const ADAPTERS: AdapterCase[] = [
  {
    adapter: 'claude-code',
    installed: () => existsSync(claudeBinary()),
    version: '2.1.197',
    provider: 'anthropic',
    model: 'claude-fake-1',
    instructions: 'CLAUDE.md',
    shell: (command) => ({ name: 'Bash', input: { command, description: 'fix add' } }),
    retriesBrokenStream: true,
  },
  {
    adapter: 'codex',
    installed: () => existsSync(codexBinary()),
    version: '0.171.0',
    provider: 'openai',
    model: 'gpt-fake',
    instructions: 'AGENTS.md',
    shell: (cmd) => ({ name: 'exec_command', input: { cmd } }),
    retriesBrokenStream: true,
  },
  {
    adapter: 'qwen-code',
    installed: () => existsSync(qwenCli()),
    version: '0.15.10',
    provider: 'openai',
    model: 'qwen-fake',
    instructions: 'QWEN.md',
    shell: (command) => ({ name: 'run_shell_command', input: { command, description: 'fix add' } }),
    retriesBrokenStream: false,
  },
  {
    adapter: 'opencode',
    installed: () => existsSync(opencodeBinary()),
    version: '1.18.33',
    provider: 'openai',
    model: 'opencode-fake',
    instructions: 'AGENTS.md',
    shell: (command) => ({ name: 'bash', input: { command, description: 'fix add' } }),
    retriesBrokenStream: true,
  },
  {
    adapter: 'gemini-cli',
    installed: () => existsSync(geminiCli()),
    version: '0.61.0',
    provider: 'google',
    model: 'gemini-2.5-flash',
    instructions: 'GEMINI.md',
    shell: (command) => ({ name: 'run_shell_command', input: { command, description: 'fix add' } }),
    retriesBrokenStream: true,
  },
];

const SCRIPT = 'fixtures/model.script.json';
/** What the script's two turns add up to at the gateway, whichever wire format carried them. */
const USAGE = { input_tokens: 2000, output_tokens: 35, cache_read_tokens: 100 };

const config = (a: AdapterCase, backend: string, turns?: number) =>
  fixAddConfig({ adapter: a.adapter, model: a.model, instructions: a.instructions, script: SCRIPT, backend, ...(turns ? { turns } : {}) });

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
/** The shipped example's tasks (bench.config.yaml). */
const EXAMPLE_TASKS = ['format-amount', 'parse-amount', 'signed-amount', 'statement-line', 'is-amount', 'csv-amount', 'sum-cents', 'split-cents'];

/**
 * The shipped example (examples/toy: its tasks, its fixture repository, its CLAUDE.md and its
 * scripted model) for agent `a`: the model's turns with each shell command offered as `a`'s
 * own shell tool, and the context file delivered (and read) under `a`'s instruction file name.
 */
function exampleFor(a: AdapterCase): string {
  cpSync(join(ROOT, 'examples', 'toy'), join(rig.dir, 'examples', 'toy'), { recursive: true });
  cpSync(join(ROOT, 'examples', 'cohorts', 'fixtures', 'repos', 'money'), join(rig.dir, 'examples', 'cohorts', 'fixtures', 'repos', 'money'), {
    recursive: true,
  });
  type Turn = { text?: string; tool_calls?: { name: string; input: { command: string } }[]; usage?: unknown };
  const script = JSON.parse(readFileSync(join(ROOT, 'examples', 'toy', 'model.json'), 'utf8')) as { turns: Turn[] };
  // Gemini CLI refuses a shell command with a command substitution in it ("Blocked: command substitution detected"),
  // which the example's program (a heredoc of JavaScript with template literals) looks like: every agent gets it as base64 piped to sh.
  const command = (c: string) => (/[`$]/.test(c) ? `printf %s ${Buffer.from(c).toString('base64')} | base64 -d | sh` : c);
  const turns = script.turns.map((t) => ({
    ...t,
    tool_calls: t.tool_calls?.map((c) => a.shell(command(c.input.command.replaceAll('CLAUDE.md', a.instructions)))),
  }));
  rig.write('example-model.json', JSON.stringify({ turns }));
  const sandbox = '{ backend: bubblewrap, egress: none }';
  return `steps:
  materialize: { kind: materialize, tasks: &tasks examples/toy/tasks, matrix: &task { task: &ids [${EXAMPLE_TASKS.join(', ')}] } }
  certify: { kind: certify, needs: [materialize], tasks: *tasks, matrix: *task, sandbox: ${sandbox}, policy: { repeats: 1 } }
  attempts:
    kind: run
    needs: [materialize, certify]
    tasks: *tasks
    matrix: &attempt { task: *ids, arm: [context], rep: 1 }
    agent: { adapter: ${a.adapter}, model: ${a.model} }
    arms: { context: { files: { ${a.instructions}: examples/toy/context/CLAUDE.md } } }
    limits: { turns: 8, wall_seconds: 180 }
    sandbox: ${sandbox}
    model: { fake_script: example-model.json }
  verify: { kind: verify, needs: [materialize, attempts], tasks: *tasks, matrix: *attempt, sandbox: ${sandbox} }
`;
}

beforeAll(() => {
  execFileSync(process.execPath, [join(ROOT, 'scripts', 'build-fixtures.mjs'), '--quiet'], { stdio: 'inherit' });
});

let rig: Rig;
afterEach(() => rig.cleanup());

for (const a of ADAPTERS) {
  describe.skipIf(!a.installed())(`the ${a.adapter} adapter`, () => {
    beforeEach(() => {
      rig = new Rig();
      calculatorTask(rig.dir);
      rig.write(`fixtures/${a.instructions}`, 'House rule 7f3a: arithmetic helpers use the obvious operator.\n');
      rig.write(
        SCRIPT,
        JSON.stringify({
          turns: [
            { tool_calls: [a.shell("sed -i 's/a - b/a + b/' src/add.mjs")], usage: { input_tokens: 1000, output_tokens: 30, cache_read_input_tokens: 100 } },
            { text: 'Fixed.', usage: { input_tokens: 1000, output_tokens: 5 } },
          ],
        }),
      );
    });

    for (const backend of ['local', 'bubblewrap']) {
      it(`${backend}: edits, passes the verifier; usage, turns and ${a.instructions} delivery from the gateway; a valid ATIF trajectory`, async () => {
        rig.write('bench.config.yaml', config(a, backend));
        const r = await rig.cli('run');
        expect(r.code, r.stderr).toBe(0);
        for (const arm of ['control', 'treatment']) {
          const attempt = `attempts/fix-add/${arm}/1`;
          const result = await rig.outputJson(attempt, 'result.json');
          expect(result.exit_reason, await rig.outputText(attempt, 'agent.log')).toBe('done');
          expect(result.agent).toEqual({ adapter: a.adapter, version: a.version, model: a.model, provider: a.provider });
          expect(result.sandbox.backend).toBe(backend);
          expect(result.tool_calls).toBe(1);
          expect(result.turns).toBeGreaterThanOrEqual(2);
          expect(result.usage).toMatchObject(USAGE);
          expect(result.delivered).toEqual(arm === 'treatment' ? { treatment: true } : {});
          expect((await rig.outputJson(`verify/fix-add/${arm}/1`, 'verdict.json')).pass).toBe(true);
          const trajectory = await rig.outputJson(attempt, 'trajectory.json');
          expect(atifProblems(trajectory)).toEqual([]);
          expect(trajectory.agent).toMatchObject({ name: a.adapter, version: a.version });
          expect(trajectory.steps.some((s: { tool_calls?: { function_name: string }[] }) => s.tool_calls?.[0]?.function_name === a.shell('').name)).toBe(true);
          // ATIF's prompt tokens: every input token, cached or not, whatever the agent's own convention.
          expect(trajectory.final_metrics).toMatchObject({
            total_prompt_tokens: promptTokens(result.usage),
            total_cached_tokens: 100,
            total_completion_tokens: 35,
          });
          const gatewayLog = await rig.outputText(attempt, 'gateway.jsonl');
          expect(gatewayLog).not.toContain('sk-pairbench-gateway');
          expect(gatewayLog.includes('House rule 7f3a')).toBe(arm === 'treatment');
        }
      });
    }

    it(`bubblewrap: completes the example's ${EXAMPLE_TASKS.length} tasks with its CLAUDE.md delivered as ${a.instructions}: each verifies (six of them only by following it), each trajectory validates`, async () => {
      rig.write('bench.config.yaml', exampleFor(a));
      const r = await rig.cli('run');
      expect(r.code, r.stderr).toBe(0);
      for (const task of EXAMPLE_TASKS) {
        const attempt = `attempts/${task}/context/1`;
        const result = await rig.outputJson(attempt, 'result.json');
        expect(result.exit_reason, `${task}: ${await rig.outputText(attempt, 'agent.log')}`).toBe('done');
        expect(result.sandbox.backend).toBe('bubblewrap');
        expect(result.delivered, task).toEqual({ context: true });
        expect((await rig.outputJson(`verify/${task}/context/1`, 'verdict.json')).pass, task).toBe(true);
        expect(atifProblems(await rig.outputJson(attempt, 'trajectory.json')), task).toEqual([]);
        expect(await rig.outputText(attempt, 'gateway.jsonl'), task).toContain('the house format');
      }
    });

    it('bubblewrap: limits.turns bounds its turns: a model that would go on calling tools is stopped', async () => {
      const turns = Array.from({ length: 6 }, (_, i) => ({
        tool_calls: [a.shell(`echo turn ${i + 1} >> turns.log`)],
        usage: { input_tokens: 100, output_tokens: 10 },
      }));
      rig.write(SCRIPT, JSON.stringify({ turns: [...turns, { text: 'Done.', usage: { input_tokens: 100, output_tokens: 5 } }] }));
      rig.write('bench.config.yaml', config(a, 'bubblewrap', 2));
      const r = await rig.cli('run', 'attempts');
      expect(r.code, r.stderr).toBe(0);
      const result = await rig.outputJson('attempts/fix-add/control/1', 'result.json');
      expect(result.tool_calls, await rig.outputText('attempts/fix-add/control/1', 'agent.log')).toBeLessThanOrEqual(2);
      expect(result.tool_calls).toBeGreaterThan(0);
      expect(result.exit_reason).toBe('turn-cap');
    });

    it("doctor: the pinned version is installed, and its canary turn runs in the step's sandbox", async () => {
      rig.write('bench.config.yaml', config(a, 'bubblewrap'));
      const r = await rig.cli('doctor');
      expect(r.code, r.stdout).toBe(0);
      const v = a.version.replaceAll('.', '\\.');
      expect(r.stdout).toMatch(new RegExp(`^ok {7}agent ${a.adapter} \\(step attempts\\): \\S+ ${v} installed \\(the pinned version\\)$`, 'm'));
      expect(r.stdout).toMatch(new RegExp(`^ok {7}agent canary \\(step attempts: ${a.adapter} ${v} in bubblewrap\\): `, 'm'));
    });

    it(`bubblewrap: survives a 429 (retry after 1 s) and a 529${a.retriesBrokenStream ? ' and a stream broken by an error event' : ''}: each try recorded and billed, its wait in the wall time`, async () => {
      await survivesProviderFaults(rig, config(a, 'bubblewrap'), SCRIPT, 1000, a.retriesBrokenStream ? PROVIDER_FAULTS : PROVIDER_FAULTS.slice(0, 2));
    });
  });
}
