import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../pipeline/package-root.js';
import { binaryVersion } from './binary-version.js';
import { installedPackageDir } from '../pipeline/installed-package.js';
import { isRecord, type AgentAdapter, type AtifStep, type AttemptContext, type ParsedRun } from './adapter.js';
import { countOr, jsonLines, stringOr } from './untrusted-json.js';

const PACKAGE = 'opencode-ai';

/** Its native binary, from the platform package npm installed beside opencode-ai (the wrapper's own bin is a stub until a postinstall links it). */
function platformPackage(): string {
  const os = process.platform === 'win32' ? 'windows' : process.platform;
  return `opencode-${os}-${process.arch}`;
}

export function opencodeBinary(): string {
  const dir = installedPackageDir(platformPackage()) ?? join(packageRoot(), 'node_modules', platformPackage());
  return join(dir, 'bin', 'opencode');
}

const MOUNT = '/run/agent/opencode';
let cachedVersion: string | undefined;

/**
 * Before it starts: its config directory seeded as if its plugin package were installed (else it
 * runs `npm install @opencode-ai/plugin` from the registry on every start), then the prompt on
 * its standard input (as one argument, a prompt with spaces reaches the model in quotes).
 */
const SEED_THEN_RUN = [
  'c="$XDG_CONFIG_HOME/opencode"',
  'mkdir -p "$c/node_modules"',
  `printf %s '{"dependencies":{"@opencode-ai/plugin":"*"}}' > "$c/package.json"`,
  `printf %s '{"lockfileVersion":3,"packages":{"":{"dependencies":{"@opencode-ai/plugin":"*"}}}}' > "$c/package-lock.json"`,
  'printf %s "$PAIRBENCH_PROMPT" | "$0" "$@"',
].join(' && ');

/** Its whole configuration, in the environment: the gateway as an OpenAI-compatible provider, every tool allowed, nothing shared or updated. */
function config(ctx: AttemptContext): string {
  return JSON.stringify({
    provider: {
      pairbench: {
        npm: '@ai-sdk/openai-compatible',
        name: 'pairbench',
        options: { baseURL: `${ctx.gatewayUrl ?? ''}/v1`, apiKey: 'sk-pairbench-gateway' }, // the gateway holds any real credential
        models: { [ctx.model]: { name: ctx.model, tool_call: true } },
      },
    },
    model: `pairbench/${ctx.model}`,
    // `opencode run` is its build agent: limits.turns bounds its agentic iterations (then it must answer in text).
    agent: { build: { steps: ctx.limits.turns } },
    autoupdate: false,
    share: 'disabled',
    permission: 'allow',
    ...(ctx.mcpServers && Object.keys(ctx.mcpServers).length
      ? {
          mcp: Object.fromEntries(
            Object.entries(ctx.mcpServers).map(([name, m]) => [
              name,
              { type: 'local', command: [m.command, ...(m.args ?? [])], environment: m.env ?? {}, enabled: true },
            ]),
          ),
        }
      : {}),
  });
}

interface Part {
  type: string;
  text?: string;
  tool?: string;
  callID?: string;
  input?: Record<string, unknown>;
  output?: string;
  tokens?: { input: number; output: number; reasoning: number; cacheRead: number; cacheWrite: number };
}

/** One `--format json` line, its fields checked; the rest is dropped. */
function eventLine(v: Record<string, unknown>): { type: string; session?: string; part?: Part; error?: string } | undefined {
  if (typeof v['type'] !== 'string') return undefined;
  const p = v['part'];
  const state = isRecord(p) && isRecord(p['state']) ? p['state'] : {};
  const t = isRecord(p) && isRecord(p['tokens']) ? p['tokens'] : undefined;
  const cache = t && isRecord(t['cache']) ? t['cache'] : {};
  const e = v['error'];
  const session = stringOr(v['sessionID']);
  return {
    type: v['type'],
    ...(session ? { session } : {}),
    ...(isRecord(p)
      ? {
          part: {
            type: stringOr(p['type']) ?? '',
            text: stringOr(p['text']),
            tool: stringOr(p['tool']),
            callID: stringOr(p['callID']),
            input: isRecord(state['input']) ? state['input'] : undefined,
            output: stringOr(state['output']),
            tokens: t
              ? {
                  input: countOr(t['input']) ?? 0,
                  output: countOr(t['output']) ?? 0,
                  reasoning: countOr(t['reasoning']) ?? 0,
                  cacheRead: countOr(cache['read']) ?? 0,
                  cacheWrite: countOr(cache['write']) ?? 0,
                }
              : undefined,
          },
        }
      : {}),
    ...(isRecord(e) ? { error: JSON.stringify(e).slice(0, 300) } : {}),
  };
}

/** `--format json` -> ATIF-v1.7: each text and each tool call an agent step, a tool's output its observation; usage from the step_finish lines. */
function toAtif(lines: NonNullable<ReturnType<typeof eventLine>>[], ctx: AttemptContext, version: string): ParsedRun {
  const steps: AtifStep[] = [{ step_id: 1, source: 'user', message: ctx.prompt }];
  let toolCalls = 0;
  let turns = 0;
  const sum = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };
  for (const l of lines) {
    const p = l.part;
    if (l.type === 'text' && p?.text !== undefined) steps.push({ step_id: steps.length + 1, source: 'agent', model_name: ctx.model, message: p.text });
    else if (l.type === 'tool_use' && p?.tool && p.callID) {
      toolCalls++;
      steps.push({
        step_id: steps.length + 1,
        source: 'agent',
        model_name: ctx.model,
        message: '',
        tool_calls: [{ tool_call_id: p.callID, function_name: p.tool, arguments: p.input ?? {} }],
        ...(p.output !== undefined ? { observation: { results: [{ source_call_id: p.callID, content: p.output }] } } : {}),
      });
    } else if (l.type === 'step_finish' && p?.tokens) {
      turns++;
      sum.input += p.tokens.input;
      sum.output += p.tokens.output;
      sum.cacheRead += p.tokens.cacheRead;
      sum.cacheWrite += p.tokens.cacheWrite;
    }
  }
  const error = lines.find((l) => l.type === 'error')?.error;
  const session = lines.find((l) => l.session)?.session;
  return {
    turns,
    toolCalls,
    hitTurnCap: false,
    ...(error ? { failed: error } : {}),
    trajectory: {
      schema_version: 'ATIF-v1.7',
      ...(session ? { session_id: session } : {}),
      agent: { name: 'opencode', version, model_name: ctx.model },
      steps,
      final_metrics: {
        // Its input tokens leave out the cache reads and writes; ATIF's prompt tokens count every input token.
        total_prompt_tokens: sum.input + sum.cacheRead + sum.cacheWrite,
        total_completion_tokens: sum.output,
        total_cached_tokens: sum.cacheRead,
        total_steps: steps.length,
      },
    },
  };
}

/** `opencode`: the real OpenCode CLI (a native binary), `opencode run --format json`, its provider the gateway (Chat Completions). */
export const opencodeAgent: AgentAdapter = {
  name: 'opencode',
  instructionFile: 'AGENTS.md',
  scriptedShell: (command) => ({ name: 'bash', input: { command, description: 'scripted action' } }),
  // OpenCode offers an MCP server's tools as <server>_<tool>.
  mcpToolName: (server, tool) => `${server}_${tool}`,
  needsModel: true,
  provider: 'openai',
  cli: { package: PACKAGE, credential: 'OPENAI_API_KEY' },
  // OpenCode puts AGENTS.md into its system prompt as "Instructions from: /work/AGENTS.md"
  // (CLAUDE.md too, unless told not to: it is told not to read Claude Code's files).
  deliveryScope: (dest) => (dest.split('/').pop() === 'AGENTS.md' ? { kind: 'instruction-file', file: 'AGENTS.md' } : null),
  binary: () => opencodeBinary(),
  version() {
    cachedVersion ??= binaryVersion(opencodeBinary(), () => {
      const r = spawnSync(opencodeBinary(), ['--version'], { encoding: 'utf8', env: { HOME: '/nonexistent', PATH: process.env['PATH'] ?? '' } });
      return r.status === 0 ? String(r.stdout).trim().split('\n').pop()!.trim() : 'not-installed';
    });
    return cachedVersion;
  },
  invocation(ctx) {
    const bin = opencodeBinary();
    if (!existsSync(bin)) throw new Error(`OpenCode is not installed (no ${bin}); 'pairbench doctor' names the command that installs it`);
    const sandboxed = ctx.sandboxed !== false;
    const xdg = (dir: string) => join(ctx.home, dir);
    return {
      argv: ['/bin/sh', '-c', SEED_THEN_RUN, sandboxed ? `${MOUNT}/opencode` : bin, 'run', '--format', 'json', '--title', 'pairbench', ...ctx.flags],
      env: {
        HOME: ctx.home,
        XDG_CONFIG_HOME: xdg('.config'),
        XDG_DATA_HOME: xdg('.local/share'),
        XDG_CACHE_HOME: xdg('.cache'),
        XDG_STATE_HOME: xdg('.local/state'),
        OPENCODE_CONFIG_CONTENT: config(ctx),
        OPENCODE_DISABLE_MODELS_FETCH: '1',
        OPENCODE_DISABLE_AUTOUPDATE: '1',
        OPENCODE_DISABLE_DEFAULT_PLUGINS: '1',
        OPENCODE_DISABLE_LSP_DOWNLOAD: '1',
        OPENCODE_DISABLE_SHARE: '1',
        OPENCODE_DISABLE_CLAUDE_CODE: '1',
        PAIRBENCH_PROMPT: ctx.prompt,
      },
      mounts: sandboxed ? [{ host: join(bin, '..'), target: MOUNT, readOnly: true }] : [],
    };
  },
  parse: (r, ctx, version) => toAtif(jsonLines(r.stdout, eventLine), ctx, version),
};
