import type { AgentAdapter } from './adapter.js';
import { claudeCodeAgent } from './claude-code.js';
import { codexAgent } from './codex.js';
import { commandAgent, nopAgent, oracleAgent } from './simple.js';
import { qwenCodeAgent } from './qwen-code.js';
import { opencodeAgent } from './opencode.js';
import { geminiCliAgent } from './gemini-cli.js';

/** Built-in agent adapters by name. */
export const agentAdapters: ReadonlyMap<string, AgentAdapter> = new Map(
  [nopAgent, oracleAgent, commandAgent, claudeCodeAgent, codexAgent, qwenCodeAgent, opencodeAgent, geminiCliAgent].map((a) => [a.name, a]),
);
