import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { packageRoot } from '../pipeline/package-root.js';
import { binaryVersion } from './binary-version.js';
import { installedPackageDir } from '../pipeline/installed-package.js';
import { isRecord, type AgentAdapter, type AtifStep, type AttemptContext, type ParsedRun } from './adapter.js';
import { arrayOf, countOr, jsonLines, stringOr } from './untrusted-json.js';

const PACKAGE = '@openai/codex';
const PLATFORM_PACKAGE = '@openai/codex-linux-x64';

/**
 * The statically linked (musl) binary inside the platform package @openai/codex installs
 * beside itself: it runs in any sandbox as it is.
 */
export function codexBinary(): string {
  const codex = installedPackageDir(PACKAGE);
  const platform = (codex && installedPackageDir(PLATFORM_PACKAGE, codex)) ?? join(packageRoot(), 'node_modules', PLATFORM_PACKAGE);
  return join(platform, 'vendor', 'x86_64-unknown-linux-musl', 'bin', 'codex');
}

const MOUNT = '/run/agent/codex';
let cachedVersion: string | undefined;

interface CodexEvent {
  type: string;
  thread_id?: string;
  item?: CodexItem;
  usage?: { input_tokens?: number; cached_input_tokens?: number; output_tokens?: number };
}

/** The item types `codex exec --json` reports (codex-rs exec events). */
interface CodexItem {
  id: string;
  type: string;
  command?: string;
  aggregated_output?: string;
  exit_code?: number | null;
  text?: string;
  message?: string;
  /** file_change: the files and how each changed. */
  changes?: { path: string; kind: string }[];
  status?: string;
  /** mcp_tool_call */
  server?: string;
  tool?: string;
  arguments?: unknown;
  result?: unknown;
  error?: unknown;
  /** web_search */
  query?: string;
  /** todo_list */
  items?: { text: string; completed: boolean }[];
}

/** One `codex exec --json` event, its fields checked (see untrusted-json.ts): an item without a string id and type is dropped. */
function codexEvent(v: Record<string, unknown>): CodexEvent | undefined {
  if (typeof v['type'] !== 'string') return undefined;
  const u = v['usage'];
  return {
    type: v['type'],
    thread_id: stringOr(v['thread_id']),
    item: codexItem(v['item']),
    usage: isRecord(u)
      ? { input_tokens: countOr(u['input_tokens']), cached_input_tokens: countOr(u['cached_input_tokens']), output_tokens: countOr(u['output_tokens']) }
      : undefined,
  };
}

function codexItem(it: unknown): CodexItem | undefined {
  if (!isRecord(it) || typeof it['id'] !== 'string' || typeof it['type'] !== 'string') return undefined;
  const exit = it['exit_code'];
  return {
    id: it['id'],
    type: it['type'],
    command: stringOr(it['command']),
    aggregated_output: stringOr(it['aggregated_output']),
    exit_code: exit === null || (typeof exit === 'number' && Number.isInteger(exit)) ? exit : undefined,
    text: stringOr(it['text']),
    message: stringOr(it['message']),
    changes: arrayOf(it['changes'], (c) =>
      isRecord(c) && typeof c['path'] === 'string' && typeof c['kind'] === 'string' ? { path: c['path'], kind: c['kind'] } : undefined,
    ),
    status: stringOr(it['status']),
    server: stringOr(it['server']),
    tool: stringOr(it['tool']),
    arguments: it['arguments'],
    result: it['result'],
    error: it['error'],
    query: stringOr(it['query']),
    items: arrayOf(it['items'], (t) =>
      isRecord(t) && typeof t['text'] === 'string' && typeof t['completed'] === 'boolean' ? { text: t['text'], completed: t['completed'] } : undefined,
    ),
  };
}

/** `codex exec --json` events -> turns, tool calls and an ATIF-v1.7 trajectory. */
export function parseCodex(stdout: string, ctx: AttemptContext, version: string): ParsedRun {
  const events = jsonLines(stdout, codexEvent);
  const steps: AtifStep[] = [{ step_id: 1, source: 'user', message: ctx.prompt }];
  let toolCalls = 0;
  let turns = 0;
  const usage = { input: 0, cached: 0, output: 0 };
  // A reasoning item's text belongs to the agent step that follows it.
  let reasoning: string | undefined;
  const push = (step: Omit<AtifStep, 'step_id' | 'source' | 'model_name'>) => {
    steps.push({ step_id: steps.length + 1, source: 'agent', model_name: ctx.model, ...(reasoning ? { reasoning_content: reasoning } : {}), ...step });
    reasoning = undefined;
  };
  const call = (it: CodexItem, name: string, args: Record<string, unknown>, content: string) => {
    toolCalls++;
    push({
      message: '',
      tool_calls: [{ tool_call_id: it.id, function_name: name, arguments: args }],
      observation: { results: [{ source_call_id: it.id, content }] },
    });
  };
  for (const e of events) {
    if (e.type === 'turn.completed') {
      turns++;
      usage.input += e.usage?.input_tokens ?? 0;
      usage.cached += e.usage?.cached_input_tokens ?? 0;
      usage.output += e.usage?.output_tokens ?? 0;
    }
    if (e.type !== 'item.completed' || !e.item) continue;
    const it = e.item;
    switch (it.type) {
      case 'command_execution':
        call(it, 'exec_command', { cmd: it.command ?? '' }, `${it.aggregated_output ?? ''}\n[exit ${it.exit_code}]`);
        break;
      case 'file_change':
        call(
          it,
          'apply_patch',
          { changes: it.changes ?? [] },
          `${it.status ?? 'completed'}: ${(it.changes ?? []).map((c) => `${c.kind} ${c.path}`).join(', ')}`,
        );
        break;
      case 'mcp_tool_call':
        call(
          it,
          `mcp__${it.server ?? 'unknown'}__${it.tool ?? 'unknown'}`,
          isRecord(it.arguments) ? it.arguments : { arguments: it.arguments ?? null },
          JSON.stringify(it.error ?? it.result ?? null),
        );
        break;
      case 'web_search':
        call(it, 'web_search', { query: it.query ?? '' }, '');
        break;
      case 'agent_message':
        push({ message: it.text ?? '' });
        break;
      case 'reasoning':
        reasoning = [reasoning, it.text].filter(Boolean).join('\n');
        break;
      case 'todo_list':
        push({ message: (it.items ?? []).map((t) => `[${t.completed ? 'x' : ' '}] ${t.text}`).join('\n') });
        break;
      case 'error':
        steps.push({ step_id: steps.length + 1, source: 'system', message: it.message ?? 'error' });
        break;
    }
  }
  if (reasoning) push({ message: '' }); // reasoning that no step followed is kept on one of its own
  const thread = events.find((e) => e.type === 'thread.started')?.thread_id;
  return {
    turns,
    toolCalls,
    hitTurnCap: false, // codex has no turn cap of its own: the gateway's caps bound it
    trajectory: {
      schema_version: 'ATIF-v1.7',
      ...(thread ? { session_id: thread, trajectory_id: thread } : {}),
      agent: { name: 'codex', version, model_name: ctx.model },
      steps,
      // OpenAI's input_tokens already include the cached ones: ATIF's prompt tokens as they are.
      final_metrics: { total_prompt_tokens: usage.input, total_completion_tokens: usage.output, total_cached_tokens: usage.cached, total_steps: steps.length },
    },
  };
}

/** An MCP server as a TOML inline table (codex's -c takes TOML values). */
function tomlInline(m: { command: string; args?: string[]; env?: Record<string, string> }): string {
  const str = (v: string) => JSON.stringify(v); // a JSON string is a valid TOML basic string
  const parts = [`command=${str(m.command)}`, `args=[${(m.args ?? []).map(str).join(',')}]`];
  if (m.env)
    parts.push(
      `env={${Object.entries(m.env)
        .map(([k, v]) => `${str(k)}=${str(v)}`)
        .join(',')}}`,
    );
  return `{${parts.join(',')}}`;
}

/**
 * How often Codex retries a request or a stream the provider failed (429, 5xx, a broken stream),
 * as it would against the real API: the gateway records each try, and a refused key (401/403)
 * ends the attempt at once whatever the count.
 */
const RETRIES = 4;

/** `codex`: the real Codex CLI, `codex exec --json`, its provider pointed at the gateway by -c overrides. */
export const codexAgent: AgentAdapter = {
  name: 'codex',
  instructionFile: 'AGENTS.md',
  scriptedShell: (cmd) => ({ name: 'exec_command', input: { cmd } }),
  needsModel: true,
  provider: 'openai',
  cli: { package: PACKAGE, credential: 'OPENAI_API_KEY' },
  // Codex hands AGENTS.md to the model as a user message "# AGENTS.md instructions for /work".
  deliveryScope: (dest) => (dest.split('/').pop() === 'AGENTS.md' ? { kind: 'instruction-file', file: 'AGENTS.md' } : null),
  binary: () => codexBinary(),
  version() {
    cachedVersion ??= binaryVersion(codexBinary(), () => {
      const r = spawnSync(codexBinary(), ['--version'], { encoding: 'utf8', env: { HOME: '/nonexistent', PATH: process.env['PATH'] ?? '' } });
      return r.status === 0 ? String(r.stdout).trim().split(' ').pop()! : 'not-installed';
    });
    return cachedVersion;
  },
  invocation(ctx) {
    const bin = codexBinary();
    if (!existsSync(bin)) throw new Error(`Codex is not installed (no ${bin}); 'pairbench doctor' names the command that installs it`);
    const sandboxed = ctx.sandboxed !== false;
    const provider = `{name="pairbench",base_url="${ctx.gatewayUrl ?? ''}/v1",env_key="OPENAI_API_KEY",wire_api="responses",request_max_retries=${RETRIES},stream_max_retries=${RETRIES}}`;
    return {
      argv: [
        sandboxed ? `${MOUNT}/codex` : bin,
        'exec',
        '--json',
        '--skip-git-repo-check',
        '-c',
        `model="${ctx.model}"`,
        '-c',
        'model_provider="pairbench"',
        '-c',
        'approval_policy="never"',
        '-c',
        'sandbox_mode="danger-full-access"', // pairbench's sandbox is the boundary
        // Nothing but the model is called: release builds flush usage metrics to OpenAI at exit
        // (with no egress the flush waits ~5 s for nothing) and sync a plugin catalogue from
        // chatgpt.com and GitHub at start. A step's own flags come after these and win.
        '-c',
        'otel.metrics_exporter="none"',
        '-c',
        'analytics.enabled=false',
        '-c',
        'features.plugins=false',
        '-c',
        `model_providers.pairbench=${provider}`,
        ...Object.entries(ctx.mcpServers ?? {}).flatMap(([name, m]) => ['-c', `mcp_servers.${name}=${tomlInline(m)}`]),
        ...ctx.flags,
        ctx.prompt,
      ],
      env: { OPENAI_API_KEY: 'sk-pairbench-gateway', HOME: ctx.home, CODEX_HOME: ctx.home },
      mounts: sandboxed ? [{ host: dirname(bin), target: MOUNT, readOnly: true }] : [],
    };
  },
  parse: (r, ctx, version) => parseCodex(r.stdout, ctx, version),
};
