import { basename, dirname } from 'node:path';
import { gitApply } from '../sandboxes/git-apply.js';
import { minimalTrajectory, type AgentAdapter } from './adapter.js';

/** `nop`: does nothing; the untouched tree must fail a discriminating verifier. */
export const nopAgent: AgentAdapter = {
  name: 'nop',
  needsModel: false,
  version: () => 'builtin-1',
  invocation: () => ({ argv: ['true'], env: {}, mounts: [] }),
  deliveryScope: () => null,
  parse: (_r, ctx, version) => ({
    turns: 0,
    toolCalls: 0,
    hitTurnCap: false,
    trajectory: minimalTrajectory('nop', version, 'none', ctx.prompt, 'nop agent: no action'),
  }),
};

/** Where a solve script's directory is mounted, in the oracle's sandbox only (Harbor's /solution). */
const SOLUTION_INSIDE = '/solution';

/** `oracle`: applies the task's reference solution (patch on the host side, or solve script in the sandbox). */
export const oracleAgent: AgentAdapter = {
  name: 'oracle',
  needsModel: false,
  version: () => 'builtin-1',
  deliveryScope: () => null,
  async beforeRun(ctx, hostWorkspace) {
    if (!ctx.solution?.patch) return;
    const r = await gitApply(hostWorkspace, ctx.solution.patch);
    if (!r.ok) throw new Error(`the reference patch does not apply: ${r.stderr}`);
  },
  invocation(ctx) {
    if (ctx.solution?.script) {
      // As Harbor runs it: with bash (a `set -o pipefail` script fails under dash), its whole
      // solution/ directory at /solution (solve.sh may read files beside it); sh only where there is no bash.
      const run = (script: string) => ['sh', '-c', 'if command -v bash >/dev/null 2>&1; then exec bash "$0"; else exec sh "$0"; fi', script];
      if (ctx.sandboxed === false) return { argv: run(ctx.solution.script), env: {}, mounts: [] };
      return {
        argv: run(`${SOLUTION_INSIDE}/${basename(ctx.solution.script)}`),
        env: {},
        mounts: [{ host: dirname(ctx.solution.script), target: SOLUTION_INSIDE, readOnly: true }],
      };
    }
    if (!ctx.solution?.patch) throw new Error('the oracle agent needs the task to have a solution (patch or script)');
    return { argv: ['true'], env: {}, mounts: [] };
  },
  parse: (_r, ctx, version) => ({
    turns: 0,
    toolCalls: 0,
    hitTurnCap: false,
    trajectory: minimalTrajectory('oracle', version, 'none', ctx.prompt, 'oracle agent: applied the reference solution'),
  }),
};

/** `command`: any shell command; the prompt and the gateway URL are in its environment. */
export const commandAgent: AgentAdapter = {
  name: 'command',
  needsModel: true,
  // A user's command has no version pairbench can read: its text (in the key) is its identity.
  version: () => 'user-command',
  // A user's agent has no instruction source pairbench knows of: anywhere in what its model receives.
  deliveryScope: () => ({ kind: 'anywhere' }),
  invocation(ctx) {
    if (!ctx.command) throw new Error('the command agent needs agent.command');
    const env: Record<string, string> = { PAIRBENCH_PROMPT: ctx.prompt, PAIRBENCH_MODEL: ctx.model };
    if (ctx.gatewayUrl) env['PAIRBENCH_MODEL_URL'] = ctx.gatewayUrl;
    return { argv: ['sh', '-c', ctx.command], env, mounts: [] };
  },
  parse: (r, ctx, version) => ({
    turns: 0,
    toolCalls: 0,
    hitTurnCap: false,
    trajectory: minimalTrajectory('command', version, ctx.model, ctx.prompt, `command agent; exit ${r.exitCode}`),
  }),
};
