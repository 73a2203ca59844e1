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

/**
 * The shipped example as a user changes it: bench.config.yaml with only its `adapter:` line
 * changed (its scripted model speaks in actions, its CLAUDE.md is the arm's `instructions:`).
 */
function shippedExampleFor(a: AdapterCase): string {
  cpSync(join(ROOT, 'examples', 'toy'), join(rig.dir, 'examples', 'toy'), { recursive: true });
  cpSync(join(ROOT, 'examples', 'cohorts', 'fixtures', 'repos', 'money'), join(rig.dir, 'examples', 'cohorts', 'fixtures', 'repos', 'money'), {
    recursive: true,
  });
  const shipped = readFileSync(join(ROOT, 'bench.config.yaml'), 'utf8');
  const line = /^ {4}agent: \{ adapter: claude-code, /m;
  expect(shipped).toMatch(line);
  return shipped.replace(line, `    agent: { adapter: ${a.adapter}, `);
}

/** Two of the example's tasks: one only the context file makes pass (the house format), one plain arithmetic. */
const EXAMPLE_PICK = { 'format-amount': { control: false, 'claude-md': true }, 'sum-cents': { control: true, 'claude-md': true } } as const;

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

    it(`the shipped example with only its adapter line changed: every attempt runs the script's actions with ${a.adapter}'s own tools, the context arrives as ${a.instructions}, and the verdicts are the example's`, async () => {
      rig.write('bench.config.yaml', shippedExampleFor(a));
      const r = await rig.cli('run', ...Object.keys(EXAMPLE_PICK).map((t) => `verify/${t}`));
      expect(r.code, r.stderr).toBe(0);
      for (const [task, expected] of Object.entries(EXAMPLE_PICK))
        for (const arm of ['control', 'claude-md'] as const)
          for (const rep of [1, 2]) {
            const attempt = `attempts/${task}/${arm}/${rep}`;
            const result = await rig.outputJson(attempt, 'result.json');
            expect(result.exit_reason, `${attempt}: ${await rig.outputText(attempt, 'agent.log')}`).toBe('done');
            expect(result.sandbox.backend).toBe('bubblewrap');
            expect(result.files_changed, attempt).toBe(1);
            const trajectory = await rig.outputJson(attempt, 'trajectory.json');
            expect(atifProblems(trajectory), attempt).toEqual([]);
            // One source: result.json counts the trajectory's calls, both of the script's actions through the agent's shell tool.
            expect(result.tool_calls, attempt).toBe(2);
            const calls = trajectory.steps.flatMap((s: { tool_calls?: { function_name: string }[] }) => s.tool_calls ?? []);
            expect(calls.map((c: { function_name: string }) => c.function_name)).toEqual([a.shell('').name, a.shell('').name]);
            // Delivered as this agent's own instruction file, proven from what the model received.
            expect(result.delivered, attempt).toEqual(arm === 'claude-md' ? { 'claude-md': true } : {});
            expect(result.delivery.marker?.scope ?? null).toEqual(arm === 'claude-md' ? { kind: 'instruction-file', file: a.instructions } : null);
            expect((await rig.outputText(attempt, 'gateway.jsonl')).includes('ISO 4217 currency code'), attempt).toBe(arm === 'claude-md');
            expect((await rig.outputJson(`verify/${task}/${arm}/${rep}`, 'verdict.json')).pass, `${task} ${arm}`).toBe(expected[arm]);
          }
    });

    it('a script that calls a tool this agent does not offer: an infrastructure fault naming the call and the tools offered, never a silent done', async () => {
      const foreign = a.adapter === 'claude-code' ? 'run_shell_command' : 'Bash';
      rig.write(SCRIPT, JSON.stringify({ turns: [{ tool_calls: [{ name: foreign, input: { command: "sed -i 's/a - b/a + b/' src/add.mjs" } }] }] }));
      rig.write(
        'bench.config.yaml',
        config(a, 'bubblewrap') + '  audit: { kind: audit, needs: [attempts, verify], matrix: { task: [fix-add], arm: [control, treatment], rep: 1 } }\n',
      );
      const r = await rig.cli('run', '--json');
      expect(r.code, r.stderr).toBe(0);
      const nodes = JSON.parse(r.stdout).nodes as { node: string; key?: string }[];
      const audit = rig.recordOutputJson(nodes.find((n) => n.node === 'audit/fix-add/control/1')!.key!, 'audit.json');
      expect(audit).toMatchObject({ admission: 'excluded', reason_code: 'infra-script', exit_reason: 'infra-error' });
      expect(audit.infra_cause).toContain(`scripted model: the script asks for tool ${foreign}; this agent offered: `);
      expect(audit.infra_cause).toContain(a.shell('').name);
      // Not cached: it is no outcome of the agent.
      await expect(rig.outputText('attempts/fix-add/control/1', 'result.json')).rejects.toThrow('has no cached output');
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
