/**
 * Carries a script's actions out with the tools the attempt's agent offered (the request's own
 * tool list): each action becomes a call of the agent's shell tool, built as its adapter declares
 * (`ShellTool`), or of an MCP server's tool under the agent's name for it (`McpToolName`). A call
 * the agent was not offered a tool for is a script problem: the attempt is an infrastructure
 * fault naming it and what was offered, never a silent `done`.
 */
import { posix } from 'node:path';
import type { FakeAction, FakeToolCall, FakeTurn, ScriptedCall, ScriptTurn } from './fake-script.js';

/** An agent's shell tool as its adapter declares it: the call that runs `command` in the workspace. */
export type ShellTool = (command: string) => FakeToolCall;

/** The name an agent offers an MCP server's tool under, as a request lists it (gateway/markers.ts toolNames). */
export type McpToolName = (server: string, tool: string) => string;

/** How an agent's tools carry a script's actions: its adapter's declared mapping. */
export interface AgentTools {
  shell?: ShellTool;
  mcpTool?: McpToolName;
}

/** Claude Code's names for MCP tools (mcp__<server>__<tool>), which Qwen Code and Codex (its namespaces) share. */
export const claudeMcpToolName: McpToolName = (server, tool) => `mcp__${server}__${tool}`;

/** A named call of an MCP tool in Claude Code's naming, passed on as written (the treatment's readiness check judges it). */
const isMcpTool = (name: string) => name.startsWith('mcp__');

const quote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;

/** The shell command that performs an action (no command substitution: some agents refuse one). */
export function actionCommand(a: FakeAction): string {
  switch (a.action) {
    case 'shell':
      return a.command;
    case 'read':
      return `cat -- ${quote(a.path)}`;
    case 'write': {
      const dir = posix.dirname(a.path);
      const b64 = Buffer.from(a.content, 'utf8').toString('base64');
      return `${dir === '.' ? '' : `mkdir -p -- ${quote(dir)} && `}printf %s ${b64} | base64 -d > ${quote(a.path)}`;
    }
    case 'mcp':
      throw new Error('an mcp action is a tool call, not a shell command');
    case 'edit': {
      const args = Buffer.from(JSON.stringify([a.path, a.old, a.new]), 'utf8').toString('base64');
      // Replaces the first occurrence, as an agent's edit tool does; fails when the old text is not there.
      const program = `const fs=require("fs");const [p,o,n]=JSON.parse(Buffer.from(process.argv[1],"base64").toString());const s=fs.readFileSync(p,"utf8");if(!s.includes(o)){console.error("edit: the old text is not in "+p);process.exit(1)}fs.writeFileSync(p,s.replace(o,()=>n))`;
      return `node -e ${quote(program)} ${args}`;
    }
  }
}

const isAction = (c: ScriptedCall): c is FakeAction => 'action' in c;

/** What one scripted call asks for, in words a fault message can name. */
function asked(c: ScriptedCall): string {
  if (!isAction(c)) return `tool ${c.name}`;
  if (c.action === 'mcp') return `tool ${c.tool} of MCP server ${c.server} (action mcp)`;
  return `a ${c.action === 'shell' ? 'shell' : `${c.action} of a file`} (action ${c.action})`;
}

/** The agent's call for one scripted call: a named tool as written, an action through the agent's own tools. */
function callOf(c: ScriptedCall, tools: AgentTools): FakeToolCall | undefined {
  if (!isAction(c)) return c;
  if (c.action === 'mcp') return { name: (tools.mcpTool ?? claudeMcpToolName)(c.server, c.tool), input: c.input ?? {} };
  return tools.shell?.(actionCommand(c));
}

/**
 * The turn with its calls in the agent's own tools, or the problem: a call this request offers
 * no tool for. A named MCP tool (mcp__...) that is not offered is passed on (the treatment's
 * readiness check judges it); an optional mcp action whose tool is not offered is left out.
 */
export function resolveTurn(turn: ScriptTurn, offered: readonly string[], tools: AgentTools): { turn: FakeTurn } | { problem: string } {
  const calls: FakeToolCall[] = [];
  for (const c of turn.tool_calls ?? []) {
    const call = callOf(c, tools);
    // A named call to an agent pairbench does not know (a user's command, no shell tool declared) is its own affair.
    const unknownAgent = !tools.shell && !isAction(c);
    if (call && (unknownAgent || offered.includes(call.name) || (!isAction(c) && isMcpTool(call.name)))) {
      calls.push(call);
      continue;
    }
    // A tool the arm may not have (its treatment), called only when offered.
    if (isAction(c) && c.action === 'mcp' && c.optional) continue;
    const list = offered.length ? offered.join(', ') : 'no tools';
    return {
      problem: `the script asks for ${asked(c)}${call && isAction(c) ? `, carried by tool ${call.name}` : ''}; this agent offered: ${list}${
        !isAction(c) ? ' (write the call as an action, e.g. {"action": "shell", "command": ...}, to run it with any agent\'s own tool)' : ''
      }`,
    };
  }
  const { tool_calls: _, ...rest } = turn;
  return { turn: calls.length ? { ...rest, tool_calls: calls } : rest };
}
