import { agentAdapters } from '../agents/index.js';
import { installCommand, pinnedSpec, pinnedVersion } from '../pipeline/installed-package.js';
import type { StepConfig } from '../pipeline/config/load.js';
import type { PreflightCheck, PreflightContext } from '../pipeline/step-kind.js';
import { missing, pass, stepList } from '../pipeline/preflight.js';
import { specOf } from './step-spec.js';
import { providerChecks, type ProviderUse } from './provider-preflight.js';
import { MODEL_PROVIDERS } from '../gateway/providers.js';

/**
 * The run kind's preflight (loaded by doctor only): each agent CLI its steps use installed at
 * the version package.json pins (the version is part of every attempt's key), and the
 * provider key each step names, proven by one request (provider-preflight.ts).
 */
export async function runPreflight(steps: readonly StepConfig[], ctx: PreflightContext): Promise<PreflightCheck[]> {
  return [...agentChecks(steps), ...(await providerChecks(providerUses(steps), ctx.env))];
}

function agentChecks(steps: readonly StepConfig[]): PreflightCheck[] {
  const byAdapter = new Map<string, string[]>();
  for (const s of steps) {
    const a = specOf(s, 'run').agent.adapter;
    if (a && agentAdapters.get(a)?.cli) byAdapter.set(a, [...(byAdapter.get(a) ?? []), s.name]);
  }
  const out: PreflightCheck[] = [];
  for (const [name, stepNames] of byAdapter) {
    const adapter = agentAdapters.get(name)!;
    const pkg = adapter.cli!.package;
    const label = `agent ${name} (${stepList(stepNames)})`;
    const version = adapter.version();
    const pinned = pinnedVersion(pkg);
    const install = installCommand(pinnedSpec(pkg));
    if (version === 'not-installed') out.push(missing(label, `the ${name} CLI (${pkg}) is not installed (or does not run: --version failed)`, install));
    else if (pinned && version !== pinned)
      out.push(missing(label, `installed ${version}, but package.json pins ${pkg}@${pinned}; the version is part of every attempt's key`, install));
    else out.push(pass(label, `${pkg} ${version} installed${pinned ? ' (the pinned version)' : ''}`));
  }
  return out;
}

/** Each run step's real model, for the key check (an adapter with no provider of its own, a user's command, is not probed). */
function providerUses(steps: readonly StepConfig[]): ProviderUse[] {
  return steps.flatMap((s): ProviderUse[] => {
    const spec = specOf(s, 'run');
    const adapter = agentAdapters.get(spec.agent.adapter);
    const upstream = spec.model?.upstream;
    if (!adapter?.provider || !upstream || spec.model?.fake_script) return [];
    const provider = MODEL_PROVIDERS[adapter.provider];
    return [
      {
        step: s.name,
        provider: provider.name,
        upstream,
        variable: spec.model?.api_key_env ?? null,
        model: spec.agent.model ?? provider.defaultModel,
        usualVariable: adapter.cli?.credential ?? provider.usualVariable,
      },
    ];
  });
}
