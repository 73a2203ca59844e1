/**
 * Carries a script's actions out with the tools the attempt's agent offered (the request's own
 * tool list): each action becomes a call of the agent's shell tool, built as its adapter declares
 * (`ShellTool`). A call the agent was not offered a tool for is a script problem: the attempt is
 * an infrastructure fault naming it and what was offered, never a silent `done`.
 */
import { posix } from 'node:path';
import type { FakeAction, FakeToolCall, FakeTurn, ScriptedCall, ScriptTurn } from './fake-script.js';

/** An agent's shell tool as its adapter declares it: the call that runs `command` in the workspace. */
export type ShellTool = (command: string) => FakeToolCall;

/** An MCP server's tool as Claude Code names them (mcp__<server>__<tool>). */
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
  return isAction(c) ? `a ${c.action === 'shell' ? 'shell' : `${c.action} of a file`} (action ${c.action})` : `tool ${c.name}`;
}

/**
 * The turn with its calls in the agent's own tools, or the problem: a call this request offers
 * no tool for. An MCP tool that is not offered is not the script's problem (the treatment was
 * not ready: the gateway's readiness check says so).
 */
export function resolveTurn(turn: ScriptTurn, offered: readonly string[], shell: ShellTool | undefined): { turn: FakeTurn } | { problem: string } {
  const calls: FakeToolCall[] = [];
  for (const c of turn.tool_calls ?? []) {
    const call = isAction(c) ? shell?.(actionCommand(c)) : c;
    // A named call to an agent pairbench does not know (a user's command, no shell tool declared) is its own affair.
    const unknownAgent = !shell && !isAction(c);
    if (call && (unknownAgent || offered.includes(call.name) || isMcpTool(call.name))) {
      calls.push(call);
      continue;
    }
    const tools = offered.length ? offered.join(', ') : 'no tools';
    return {
      problem: `the script asks for ${asked(c)}${call && isAction(c) ? `, carried by tool ${call.name}` : ''}; this agent offered: ${tools}${
        !isAction(c) ? ' (write the call as an action, e.g. {"action": "shell", "command": ...}, to run it with any agent\'s own tool)' : ''
      }`,
    };
  }
  const { tool_calls: _, ...rest } = turn;
  return { turn: calls.length ? { ...rest, tool_calls: calls } : rest };
}
