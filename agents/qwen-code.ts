import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { agentPackageDir, nodeCliVersion, writeSettingsThenRun } from './node-cli.js';
import { viaBase64, type AgentAdapter } from './adapter.js';
import { streamLine, toAtif } from './claude-code.js';
import { jsonLines } from './untrusted-json.js';

const PACKAGE = '@qwen-code/qwen-code';

/** The package's directory (its bundled cli.js, run by the host's node), wherever Node finds it from pairbench. */
function qwenPackage(): string {
  return agentPackageDir(PACKAGE);
}

export function qwenCli(): string {
  return join(qwenPackage(), 'cli.js');
}

const MOUNT = '/run/agent/qwen';
let cachedVersion: string | undefined;

/**
 * Its settings, written into the attempt's private HOME before it starts (it rewrites the file on
 * its first run, so it must be a writable copy): no usage statistics or telemetry, no update
 * check, and no memory extraction after the task (a background model call with tools, which a
 * scripted model would answer as a turn), the key from the command line.
 */
const SETTINGS = {
  privacy: { usageStatisticsEnabled: false },
  telemetry: { enabled: false },
  general: { enableAutoUpdate: false },
  memory: { enableManagedAutoMemory: false, enableManagedAutoDream: false },
  security: { auth: { selectedType: 'openai' } },
};
const WRITE_SETTINGS_THEN_RUN = writeSettingsThenRun('$HOME/.qwen/settings.json');

/** Qwen Code ends its result with this when the provider failed it, and exits 0 all the same. */
const API_ERROR = /^\[API Error/;

/**
 * `qwen-code`: the real Qwen Code CLI (Node, its bundled cli.js), headless with stream-json
 * output (Claude Code's shape), speaking OpenAI's Chat Completions to the gateway.
 */
export const qwenCodeAgent: AgentAdapter = {
  name: 'qwen-code',
  instructionFile: 'QWEN.md',
  scriptedShell: (command) => ({ name: 'run_shell_command', input: { command: viaBase64(command), description: 'scripted action' } }),
  needsModel: true,
  provider: 'openai',
  cli: { package: PACKAGE, credential: 'OPENAI_API_KEY' },
  systemPrompt: true,
  // Qwen Code puts QWEN.md and AGENTS.md into its system prompt as "--- Context from: QWEN.md ---".
  deliveryScope: (dest) => {
    const file = dest.split('/').pop()!;
    return file === 'QWEN.md' || file === 'AGENTS.md' ? { kind: 'instruction-file', file } : null;
  },
  binary: () => qwenCli(),
  version() {
    cachedVersion ??= nodeCliVersion(qwenCli());
    return cachedVersion;
  },
  invocation(ctx) {
    if (!existsSync(qwenCli())) throw new Error(`Qwen Code is not installed (no ${qwenCli()}); 'pairbench doctor' names the command that installs it`);
    const sandboxed = ctx.sandboxed !== false;
    return {
      argv: [
        '/bin/sh',
        '-c',
        WRITE_SETTINGS_THEN_RUN,
        sandboxed ? `${MOUNT}/cli.js` : qwenCli(),
        // The prompt as its positional query (after `--` it would be no query at all); one that
        // begins with a dash would read as an option, so it is given as --prompt=... instead.
        ctx.prompt.startsWith('-') ? `--prompt=${ctx.prompt}` : ctx.prompt,
        '--auth-type',
        'openai',
        '--openai-base-url',
        `${ctx.gatewayUrl ?? ''}/v1`,
        '--openai-api-key',
        'sk-pairbench-gateway', // the gateway holds any real credential; the agent never sees one
        '--model',
        ctx.model,
        '--approval-mode',
        'yolo',
        '--max-session-turns',
        String(ctx.limits.turns),
        '--output-format',
        'stream-json',
        ...(ctx.systemPromptAppend ? ['--append-system-prompt', ctx.systemPromptAppend] : []),
        ...(ctx.mcpServers && Object.keys(ctx.mcpServers).length ? ['--mcp-config', JSON.stringify({ mcpServers: ctx.mcpServers })] : []),
        ...ctx.flags,
      ],
      env: {
        HOME: ctx.home,
        PAIRBENCH_AGENT_SETTINGS: JSON.stringify(SETTINGS),
        QWEN_CODE_DISABLE_PRECONNECT: '1',
        QWEN_CODE_NO_RELAUNCH: 'true',
      },
      mounts: sandboxed ? [{ host: qwenPackage(), target: MOUNT, readOnly: true }] : [],
    };
  },
  parse: (r, ctx, version) => {
    const parsed = toAtif(jsonLines(r.stdout, streamLine), ctx, version, { agent: 'qwen-code', inputIncludesCache: true });
    return { ...parsed, ...(parsed.result && API_ERROR.test(parsed.result) ? { failed: parsed.result.slice(0, 300) } : {}) };
  },
};
