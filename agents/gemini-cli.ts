import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { agentPackageDir, nodeCliVersion, writeSettingsThenRun } from './node-cli.js';
import { isRecord, type AgentAdapter, type AtifStep, type AttemptContext, type ParsedRun, viaBase64 } from './adapter.js';
import { countOr, jsonLines, stringOr } from './untrusted-json.js';

const PACKAGE = '@google/gemini-cli';

function geminiPackage(): string {
  return agentPackageDir(PACKAGE);
}

/** Its bundled entry point, run by the host's node. */
export function geminiCli(): string {
  return join(geminiPackage(), 'bundle', 'gemini.js');
}

const MOUNT = '/run/agent/gemini';
let cachedVersion: string | undefined;

/**
 * Its settings, written into its private home before it starts: the API key as its auth (with a
 * base URL set it would pick a gateway auth that headless mode refuses), no folder-trust prompt,
 * no usage statistics (they look up Google's telemetry host and probe the GPU), telemetry,
 * update check or IDE, and the turn cap.
 */
function settings(ctx: AttemptContext): string {
  return JSON.stringify({
    security: { auth: { selectedType: 'gemini-api-key' }, folderTrust: { enabled: false } },
    privacy: { usageStatisticsEnabled: false },
    telemetry: { enabled: false },
    general: { enableAutoUpdate: false, enableAutoUpdateNotification: false },
    ide: { enabled: false },
    model: { maxSessionTurns: ctx.limits.turns },
    ...(ctx.mcpServers && Object.keys(ctx.mcpServers).length ? { mcpServers: ctx.mcpServers } : {}),
  });
}
const WRITE_SETTINGS_THEN_RUN = writeSettingsThenRun('$GEMINI_CLI_HOME/.gemini/settings.json');

/** One stream-json line, its fields checked; the rest is dropped. */
function eventLine(v: Record<string, unknown>) {
  if (typeof v['type'] !== 'string') return undefined;
  const stats = isRecord(v['stats']) ? v['stats'] : {};
  return {
    type: v['type'],
    role: stringOr(v['role']),
    content: stringOr(v['content']),
    session: stringOr(v['session_id']),
    model: stringOr(v['model']),
    tool: stringOr(v['tool_name']),
    toolId: stringOr(v['tool_id']),
    parameters: isRecord(v['parameters']) ? v['parameters'] : undefined,
    output: stringOr(v['output']),
    status: stringOr(v['status']),
    error: isRecord(v['error']) ? JSON.stringify(v['error']).slice(0, 300) : stringOr(v['error']),
    stats: { input: countOr(stats['input_tokens']), output: countOr(stats['output_tokens']), cached: countOr(stats['cached']) },
  };
}
type EventLine = NonNullable<ReturnType<typeof eventLine>>;

/** stream-json -> ATIF-v1.7: the assistant's text (streamed in deltas) between tool calls as one step, each tool call a step with its result. */
function toAtif(lines: EventLine[], ctx: AttemptContext, version: string): ParsedRun {
  const steps: AtifStep[] = [{ step_id: 1, source: 'user', message: ctx.prompt }];
  const byCall = new Map<string, AtifStep>();
  let text: AtifStep | null = null;
  let toolCalls = 0;
  for (const l of lines) {
    if (l.type === 'message' && l.role === 'assistant' && l.content !== undefined) {
      if (!text) steps.push((text = { step_id: steps.length + 1, source: 'agent', model_name: ctx.model, message: '' }));
      text.message += l.content;
    } else if (l.type === 'tool_use' && l.tool && l.toolId) {
      text = null;
      toolCalls++;
      const step: AtifStep = {
        step_id: steps.length + 1,
        source: 'agent',
        model_name: ctx.model,
        message: '',
        tool_calls: [{ tool_call_id: l.toolId, function_name: l.tool, arguments: l.parameters ?? {} }],
      };
      byCall.set(l.toolId, step);
      steps.push(step);
    } else if (l.type === 'tool_result' && l.toolId) {
      const step = byCall.get(l.toolId);
      if (step)
        step.observation = {
          results: [{ source_call_id: l.toolId, content: l.output ?? l.status ?? '', ...(l.status === 'error' ? { extra: { is_error: true } } : {}) }],
        };
    }
  }
  const init = lines.find((l) => l.type === 'init');
  const result = lines.find((l) => l.type === 'result');
  const failed = result?.status === 'error' ? (result.error ?? 'the result says error') : lines.find((l) => l.type === 'error')?.error;
  const input = result?.stats.input ?? 0;
  return {
    turns: steps.filter((s) => s.source === 'agent').length,
    toolCalls,
    hitTurnCap: false,
    ...(failed ? { failed } : {}),
    trajectory: {
      schema_version: 'ATIF-v1.7',
      ...(init?.session ? { session_id: init.session } : {}),
      agent: { name: 'gemini-cli', version, model_name: init?.model ?? ctx.model },
      steps,
      final_metrics: {
        // Its input tokens are the prompt's, cached ones included (Gemini's promptTokenCount).
        total_prompt_tokens: input,
        total_completion_tokens: result?.stats.output ?? 0,
        total_cached_tokens: result?.stats.cached ?? 0,
        total_steps: steps.length,
      },
    },
  };
}

/** `gemini-cli`: the real Gemini CLI (Node, its bundle), headless with stream-json output, speaking Gemini's generateContent to the gateway. */
export const geminiCliAgent: AgentAdapter = {
  name: 'gemini-cli',
  instructionFile: 'GEMINI.md',
  scriptedShell: (command) => ({ name: 'run_shell_command', input: { command: viaBase64(command), description: 'scripted action' } }),
  // Gemini CLI offers an MCP server's tools as mcp_<server>_<tool>.
  mcpToolName: (server, tool) => `mcp_${server}_${tool}`,
  needsModel: true,
  provider: 'google',
  cli: { package: PACKAGE, credential: 'GEMINI_API_KEY' },
  // Gemini CLI puts GEMINI.md into its system instruction as "--- Context from: GEMINI.md ---".
  deliveryScope: (dest) => (dest.split('/').pop() === 'GEMINI.md' ? { kind: 'instruction-file', file: 'GEMINI.md' } : null),
  binary: () => geminiCli(),
  version() {
    cachedVersion ??= nodeCliVersion(geminiCli(), { GEMINI_CLI_NO_RELAUNCH: 'true' });
    return cachedVersion;
  },
  invocation(ctx) {
    if (!existsSync(geminiCli())) throw new Error(`Gemini CLI is not installed (no ${geminiCli()}); 'pairbench doctor' names the command that installs it`);
    const sandboxed = ctx.sandboxed !== false;
    return {
      argv: [
        '/bin/sh',
        '-c',
        WRITE_SETTINGS_THEN_RUN,
        sandboxed ? `${MOUNT}/bundle/gemini.js` : geminiCli(),
        `--prompt=${ctx.prompt}`,
        '--model',
        ctx.model,
        '--output-format',
        'stream-json',
        '--approval-mode',
        'yolo',
        '--skip-trust',
        ...ctx.flags,
      ],
      env: {
        HOME: ctx.home,
        GEMINI_CLI_HOME: ctx.home,
        GOOGLE_GEMINI_BASE_URL: ctx.gatewayUrl ?? '',
        GEMINI_API_KEY: 'sk-pairbench-gateway', // the gateway holds any real credential; the agent never sees one
        GEMINI_CLI_NO_RELAUNCH: 'true',
        PAIRBENCH_AGENT_SETTINGS: settings(ctx),
      },
      mounts: sandboxed ? [{ host: geminiPackage(), target: MOUNT, readOnly: true }] : [],
    };
  },
  parse: (r, ctx, version) => toAtif(jsonLines(r.stdout, eventLine), ctx, version),
};
