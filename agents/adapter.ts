import type { MarkerScope } from '../gateway/markers.js';
import { claudeMcpToolName, type McpToolName, type ShellTool } from '../gateway/fake-actions.js';
import type { ProviderName } from '../gateway/providers.js';
import type { ExecResult, Mount } from '../sandboxes/sandbox.js';

/** Everything an adapter may use to build one attempt's command. */
export interface AttemptContext {
  prompt: string;
  /** Workspace path as the sandbox sees it. */
  workdir: string;
  model: string;
  flags: string[];
  limits: { turns: number; wallSeconds: number };
  /** Base URL of the recording gateway as the sandbox sees it (absent for agents that need no model). */
  gatewayUrl?: string;
  /** MCP servers the arm offers (commands run inside the sandbox, from the workspace). */
  mcpServers?: Record<string, McpServer>;
  /** The arm's prompt addition, for an adapter that appends it to the agent's system prompt. */
  systemPromptAppend?: string;
  /** The user's command, for the `command` adapter. */
  command?: string;
  /** A private, empty HOME outside the workspace (as the sandbox sees it). */
  home: string;
  /** False for the local backend: mounts are not possible, host paths are used as they are. */
  sandboxed?: boolean;
  /** The task's reference solution (the oracle only): diff text, or a host path to a script. */
  solution?: { patch: string | null; script: string | null };
}

export interface McpServer {
  command: string;
  args?: string[];
  env?: Record<string, string>;
}

export interface AgentInvocation {
  argv: string[];
  env: Record<string, string>;
  mounts: Mount[];
}

/**
 * An ATIF-v1.7 trajectory, as Harbor's models define it (schemas/atif-v1.7.schema.json holds
 * the same field by field). Optional fields are omitted when unknown, never stubbed. Token
 * totals follow the spec: prompt tokens are every input token, cached ones included (for
 * Anthropic: input + cache reads + cache writes); cached tokens are the cache hits among them.
 */
export interface AtifTrajectory {
  schema_version: 'ATIF-v1.7';
  session_id?: string;
  trajectory_id?: string;
  agent: { name: string; version: string; model_name?: string; tool_definitions?: unknown[]; extra?: Record<string, unknown> };
  steps: AtifStep[];
  notes?: string;
  final_metrics?: {
    total_prompt_tokens?: number;
    total_completion_tokens?: number;
    total_cached_tokens?: number;
    total_cost_usd?: number;
    total_steps?: number;
    extra?: Record<string, unknown>;
  };
}

export interface AtifStep {
  step_id: number;
  timestamp?: string;
  source: 'system' | 'user' | 'agent';
  model_name?: string;
  message: string;
  reasoning_content?: string;
  tool_calls?: { tool_call_id: string; function_name: string; arguments: Record<string, unknown> }[];
  /** `extra.is_error`: the agent reported the call failed (its tool did not exist or broke). */
  observation?: { results: { source_call_id?: string; content?: string; extra?: { is_error?: boolean } }[] };
  metrics?: { prompt_tokens?: number; completion_tokens?: number; cached_tokens?: number };
}

export interface ParsedRun {
  turns: number;
  toolCalls: number;
  trajectory: AtifTrajectory;
  /** The agent's own statement that it stopped at its turn cap. */
  hitTurnCap: boolean;
  /**
   * The agent's own statement that it gave up on an error, whatever its exit code (Qwen Code
   * exits 0 after its retries against a failing provider): the attempt did not end normally.
   */
  failed?: string;
}

/** An agent adapter: `{name, ...a few methods}` in a registry. */
export interface AgentAdapter {
  name: string;
  /** Whether attempts need the model gateway. */
  needsModel: boolean;
  /** The model provider whose API the agent speaks (the gateway forwards only its endpoints, and sends the key its way); unset: any. */
  provider?: ProviderName;
  /** The agent takes an addition to its system prompt (an arm's prompt_append goes there, not into the task prompt). */
  systemPrompt?: boolean;
  /** Version of the agent binary (recorded and part of the run key); memoised by the adapter. */
  version(): string;
  /** The file the agent runs from (a native binary or a Node script), whose bytes are its identity (doctor's canary is cached by them). */
  binary?(): string;
  /** An agent that is an npm package: its name (doctor checks it is installed at the pinned version) and its provider key's variable. */
  cli?: { package: string; credential: string };
  invocation(ctx: AttemptContext): AgentInvocation | null;
  /** Work done on the host before the sandboxed command (the oracle applies a patch). */
  beforeRun?(ctx: AttemptContext, hostWorkspace: string): Promise<void>;
  parse(result: ExecResult, ctx: AttemptContext, version: string): ParsedRun;
  /**
   * Where this agent gives the model a treatment file (`dest`, relative to the
   * workspace) as an instruction, or null when it does not (the file is only there to
   * be read): delivery is counted there and nowhere else.
   */
  deliveryScope(dest: string): MarkerScope | null;
  /** The agent's own instruction file, where an arm's `instructions:` is delivered (CLAUDE.md, AGENTS.md, GEMINI.md, QWEN.md). */
  instructionFile?: string;
  /** The call of its shell tool that runs `command`: how a scripted model's actions reach this agent (gateway/fake-actions.ts). */
  scriptedShell?: ShellTool;
  /**
   * The name it offers the model an MCP server's tool under, as the gateway lists a request's
   * tools (default: Claude Code's mcp__<server>__<tool>): the treatment's delivery and readiness,
   * its use in the trajectory, and a scripted model's mcp actions go by it.
   */
  mcpToolName?: McpToolName;
}

/** An agent's name for an MCP server's tool (its adapter's, else Claude Code's). */
export function mcpToolNameOf(adapter: Pick<AgentAdapter, 'mcpToolName'>, server: string, tool: string): string {
  return (adapter.mcpToolName ?? claudeMcpToolName)(server, tool);
}

export function minimalTrajectory(agent: string, version: string, model: string, prompt: string, notes: string): AtifTrajectory {
  return {
    schema_version: 'ATIF-v1.7',
    agent: { name: agent, version, ...(model && model !== 'none' ? { model_name: model } : {}) },
    steps: [{ step_id: 1, source: 'user', message: prompt }],
    notes,
    final_metrics: { total_steps: 1 },
  };
}

/** A JSON object (ATIF's tool-call arguments must be one). */
export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * A shell call whose command travels as base64 piped to sh: Gemini CLI and Qwen Code refuse a
 * command with a command substitution in it ("Blocked: command substitution detected"), which a
 * scripted program (a heredoc with template literals) looks like.
 */
export function viaBase64(command: string): string {
  return `echo ${Buffer.from(command, 'utf8').toString('base64')} | base64 -d | sh`;
}
