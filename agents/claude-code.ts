import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { binaryVersion } from './binary-version.js';
import { agentPackageDir } from './node-cli.js';
import { isRecord, type AgentAdapter, type AtifStep, type AtifTrajectory, type AttemptContext } from './adapter.js';
import { arrayOf, countOr, countsOr, jsonLines, stringOr } from './untrusted-json.js';

const PACKAGE = '@anthropic-ai/claude-code';

/** The CLI's native binary inside its npm package, wherever Node finds the package from pairbench (or where it would be). */
export function claudeBinary(): string {
  return join(agentPackageDir(PACKAGE), 'bin', 'claude.exe');
}

const MOUNT = '/run/agent/claude';
let cachedVersion: string | undefined;

interface StreamLine {
  type: string;
  subtype?: string;
  session_id?: string;
  tools?: string[];
  model?: string;
  message?: { content?: ContentBlock[]; usage?: Record<string, number>; model?: string };
  num_turns?: number;
  total_cost_usd?: number;
  usage?: Record<string, number>;
  /** The result line's final text. */
  result?: string;
}
type ContentBlock =
  | { type: 'text'; text: string }
  | { type: 'tool_use'; id: string; name: string; input: unknown }
  | { type: 'tool_result'; tool_use_id: string; content: unknown; is_error: boolean };

function contentBlock(b: unknown): ContentBlock | undefined {
  if (!isRecord(b)) return undefined;
  if (b['type'] === 'text' && typeof b['text'] === 'string') return { type: 'text', text: b['text'] };
  if (b['type'] === 'tool_use' && typeof b['id'] === 'string' && typeof b['name'] === 'string')
    return { type: 'tool_use', id: b['id'], name: b['name'], input: b['input'] };
  if (b['type'] === 'tool_result' && typeof b['tool_use_id'] === 'string')
    return { type: 'tool_result', tool_use_id: b['tool_use_id'], content: b['content'], is_error: b['is_error'] === true };
  return undefined; // thinking, images, a forged block: nothing the trajectory takes
}

/** One stream-json line, its fields checked (see untrusted-json.ts); a line without a string `type` is dropped. */
export function streamLine(v: Record<string, unknown>): StreamLine | undefined {
  if (typeof v['type'] !== 'string') return undefined;
  const m = v['message'];
  return {
    type: v['type'],
    subtype: stringOr(v['subtype']),
    session_id: stringOr(v['session_id']),
    tools: arrayOf(v['tools'], stringOr),
    model: stringOr(v['model']),
    message: isRecord(m) ? { content: arrayOf(m['content'], contentBlock), usage: countsOr(m['usage']), model: stringOr(m['model']) } : undefined,
    num_turns: countOr(v['num_turns']),
    result: stringOr(v['result']),
    total_cost_usd: countOr(v['total_cost_usd']),
    usage: countsOr(v['usage']),
  };
}

/** stream-json -> ATIF-v1.7: one agent step per assistant block, tool results as observations. */
export function toAtif(
  lines: StreamLine[],
  ctx: AttemptContext,
  version: string,
  /** Whose stream it is, and whether its input_tokens already count the cache reads (an OpenAI-speaking agent's do). */
  as: { agent: string; inputIncludesCache: boolean } = { agent: 'claude-code', inputIncludesCache: false },
): { trajectory: AtifTrajectory; turns: number; toolCalls: number; hitTurnCap: boolean; result: string | undefined } {
  const init = lines.find((l) => l.type === 'system' && l.subtype === 'init');
  const result = lines.find((l) => l.type === 'result');
  const steps: AtifStep[] = [{ step_id: 1, source: 'user', message: ctx.prompt }];
  const byCall = new Map<string, AtifStep>();
  let toolCalls = 0;
  for (const l of lines) {
    const blocks = l.message?.content ?? [];
    if (l.type === 'assistant') {
      for (const b of blocks) {
        const step: AtifStep = { step_id: steps.length + 1, source: 'agent', model_name: l.message?.model ?? ctx.model, message: '' };
        if (b.type === 'text') step.message = b.text;
        else if (b.type === 'tool_use') {
          step.tool_calls = [{ tool_call_id: b.id, function_name: b.name, arguments: isRecord(b.input) ? b.input : { input: b.input } }];
          byCall.set(b.id, step);
          toolCalls++;
        } else continue;
        steps.push(step);
      }
    } else if (l.type === 'user') {
      for (const b of blocks) {
        if (b.type !== 'tool_result') continue;
        const step = byCall.get(b.tool_use_id);
        if (!step) continue;
        const content = typeof b.content === 'string' ? b.content : JSON.stringify(b.content);
        // A call that failed (no such tool, an MCP server not connected) is marked: it used nothing.
        const result = { source_call_id: b.tool_use_id, content, ...(b.is_error ? { extra: { is_error: true } } : {}) };
        step.observation = { results: [...(step.observation?.results ?? []), result] };
      }
    }
  }
  const usage = result?.usage ?? {};
  const session = init?.session_id ?? result?.session_id;
  const cacheRead = usage['cache_read_input_tokens'] ?? 0;
  const cacheWrite = usage['cache_creation_input_tokens'] ?? 0;
  return {
    turns: result?.num_turns ?? steps.filter((s) => s.source === 'agent').length,
    toolCalls,
    hitTurnCap: result?.subtype === 'error_max_turns',
    result: result?.result,
    trajectory: {
      schema_version: 'ATIF-v1.7',
      ...(session ? { session_id: session, trajectory_id: session } : {}),
      agent: { name: as.agent, version, model_name: init?.model ?? ctx.model, extra: { tools: init?.tools ?? [] } },
      steps,
      final_metrics: {
        // ATIF's prompt tokens are every input token: Anthropic's input_tokens leave out cache reads and writes.
        total_prompt_tokens: (usage['input_tokens'] ?? 0) + (as.inputIncludesCache ? 0 : cacheRead) + cacheWrite,
        total_completion_tokens: usage['output_tokens'] ?? 0,
        total_cached_tokens: cacheRead,
        // No total_cost_usd: the CLI's own price table is not evidence; cost comes from the gateway.
        total_steps: steps.length,
        extra: { result_subtype: result?.subtype ?? null, total_cache_creation_input_tokens: cacheWrite, total_cache_read_input_tokens: cacheRead },
      },
    },
  };
}

/** `claude-code`: the real Claude Code CLI, `claude -p ... --output-format stream-json`, pointed at the gateway. */
export const claudeCodeAgent: AgentAdapter = {
  name: 'claude-code',
  needsModel: true,
  provider: 'anthropic',
  cli: { package: PACKAGE, credential: 'ANTHROPIC_API_KEY' },
  systemPrompt: true,
  instructionFile: 'CLAUDE.md',
  scriptedShell: (command) => ({ name: 'Bash', input: { command, description: 'scripted action' } }),
  // Claude Code loads CLAUDE.md (and CLAUDE.local.md) from the project into a <system-reminder>
  // "Contents of /work/CLAUDE.md (project instructions ...)"; any other file is only there to be read.
  deliveryScope: (dest) => {
    const file = dest.split('/').pop()!;
    return file === 'CLAUDE.md' || file === 'CLAUDE.local.md' ? { kind: 'instruction-file', file } : null;
  },
  binary: () => claudeBinary(),
  version() {
    cachedVersion ??= binaryVersion(claudeBinary(), () => {
      const r = spawnSync(claudeBinary(), ['--version'], { encoding: 'utf8', env: { HOME: '/nonexistent', PATH: process.env['PATH'] ?? '' } });
      return r.status === 0 ? String(r.stdout).trim().split(' ')[0]! : 'not-installed';
    });
    return cachedVersion;
  },
  invocation(ctx) {
    const bin = claudeBinary();
    if (!existsSync(bin)) throw new Error(`Claude Code is not installed (no ${bin}); 'pairbench doctor' names the command that installs it`);
    const sandboxed = ctx.sandboxed !== false;
    const exe = sandboxed ? `${MOUNT}/claude.exe` : bin;
    return {
      argv: [
        exe,
        '-p',
        ctx.prompt,
        '--output-format',
        'stream-json',
        '--verbose',
        '--max-turns',
        String(ctx.limits.turns),
        '--dangerously-skip-permissions',
        '--model',
        ctx.model,
        // MCP servers reach the agent only from the arm, never from a user's or project's settings.
        ...(ctx.systemPromptAppend ? ['--append-system-prompt', ctx.systemPromptAppend] : []),
        '--strict-mcp-config',
        ...(ctx.mcpServers && Object.keys(ctx.mcpServers).length ? ['--mcp-config', JSON.stringify({ mcpServers: ctx.mcpServers })] : []),
        ...ctx.flags,
      ],
      env: {
        ANTHROPIC_BASE_URL: ctx.gatewayUrl ?? '',
        ANTHROPIC_API_KEY: 'sk-pairbench-gateway', // the gateway holds any real credential; the agent never sees one
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
        DISABLE_AUTOUPDATER: '1',
        DISABLE_TELEMETRY: '1',
        DISABLE_ERROR_REPORTING: '1',
        IS_SANDBOX: '1',
        HOME: ctx.home,
      },
      mounts: sandboxed ? [{ host: dirname(bin), target: MOUNT, readOnly: true }] : [],
    };
  },
  parse: (r, ctx, version) => toAtif(jsonLines(r.stdout, streamLine), ctx, version),
};
