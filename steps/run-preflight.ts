import { agentAdapters } from '../agents/index.js';
import { installCommand, pinnedSpec, pinnedVersion } from '../pipeline/installed-package.js';
import type { StepConfig } from '../pipeline/config/load.js';
import type { HostEnv, PreflightCheck, PreflightContext } from '../pipeline/step-kind.js';
import { missing, pass, stepList } from '../pipeline/preflight.js';
import { specOf } from './step-spec.js';

/**
 * The run kind's preflight (loaded by doctor only): each agent CLI its steps use installed at
 * the version package.json pins (the version is part of every attempt's key), and the
 * provider credential each arm needs, by name (its value is never read into a message).
 */
export function runPreflight(steps: readonly StepConfig[], ctx: PreflightContext): PreflightCheck[] {
  return [...agentChecks(steps), ...credentialChecks(steps, ctx.env)];
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

const LOCAL_HOSTS = new Set(['127.0.0.1', 'localhost', '::1', '[::1]']);

/** Whether an upstream URL is this machine (a local model or a fake): then no provider key is needed. */
export function isLocalUpstream(url: string): boolean {
  try {
    const host = new URL(url).hostname.toLowerCase();
    return LOCAL_HOSTS.has(host) || host.endsWith('.localhost') || /^127\./.test(host);
  } catch {
    return false;
  }
}

function credentialChecks(steps: readonly StepConfig[], env: HostEnv): PreflightCheck[] {
  const needs = new Map<string, { upstreams: Set<string>; steps: string[]; adapter: string }>();
  for (const s of steps) {
    const spec = specOf(s, 'run');
    const adapter = spec.agent.adapter;
    const upstream = spec.model?.upstream;
    if (!upstream || spec.model?.fake_script || isLocalUpstream(upstream)) continue;
    const variable = agentAdapters.get(adapter)?.cli?.credential;
    if (!variable) continue;
    const n = needs.get(variable) ?? { upstreams: new Set<string>(), steps: [], adapter };
    n.upstreams.add(upstream);
    n.steps.push(s.name);
    needs.set(variable, n);
  }
  return [...needs].map(([variable, n]) => {
    const name = `credential ${variable} (${stepList(n.steps)})`;
    const where = [...n.upstreams].join(', ');
    // Only whether it is there: its value is never read into a message.
    return (env[variable] ?? '').trim() !== ''
      ? pass(name, `set in the environment (for ${n.adapter} -> ${where})`)
      : missing(
          name,
          `not set: ${n.adapter} talks to ${where}, which needs a provider key`,
          `export ${variable}=<key> before running pairbench (a key for ${where}; an interactive CLI login cannot be lent to the gateway)`,
        );
  });
}
