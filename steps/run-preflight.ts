import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { agentAdapters } from '../agents/index.js';
import type { StepConfig } from '../pipeline/config/load.js';
import { packageRoot } from '../pipeline/package-root.js';
import type { HostEnv, PreflightCheck, PreflightContext } from '../pipeline/step-kind.js';
import { missing, pass, stepList } from './preflight.js';
import { specOf } from './step-spec.js';

/**
 * The run kind's preflight (loaded by doctor only): each agent CLI its steps use installed at
 * the version package.json pins (the version is part of every attempt's key), and the
 * provider credential each arm needs, by name (its value is never read into a message).
 */
export function runPreflight(steps: readonly StepConfig[], ctx: PreflightContext): PreflightCheck[] {
  return [...agentChecks(steps), ...credentialChecks(steps, ctx.env)];
}

/** Agent CLIs installed as npm packages, and the environment variable holding their provider's key. */
const AGENT_PACKAGES: Record<string, { pkg: string; credential: string }> = {
  'claude-code': { pkg: '@anthropic-ai/claude-code', credential: 'ANTHROPIC_API_KEY' },
  codex: { pkg: '@openai/codex', credential: 'OPENAI_API_KEY' },
};

function pinnedVersion(pkg: string): string | null {
  try {
    const json = JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as {
      dependencies?: Record<string, string>;
      devDependencies?: Record<string, string>;
    };
    return json.devDependencies?.[pkg] ?? json.dependencies?.[pkg] ?? null;
  } catch {
    return null;
  }
}

function agentChecks(steps: readonly StepConfig[]): PreflightCheck[] {
  const byAdapter = new Map<string, string[]>();
  for (const s of steps) {
    const a = specOf(s, 'run').agent.adapter;
    if (a && AGENT_PACKAGES[a]) byAdapter.set(a, [...(byAdapter.get(a) ?? []), s.name]);
  }
  const out: PreflightCheck[] = [];
  for (const [name, stepNames] of byAdapter) {
    const pkg = AGENT_PACKAGES[name]!.pkg;
    const label = `agent ${name} (${stepList(stepNames)})`;
    const version = agentAdapters.get(name)!.version();
    const pinned = pinnedVersion(pkg);
    const install = `run npm ci in ${packageRoot()} (installs ${pkg}${pinned ? `@${pinned}` : ''})`;
    if (version === 'not-installed') out.push(missing(label, `the ${name} CLI is not installed (or does not run: --version failed)`, install));
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
    const variable = AGENT_PACKAGES[adapter]?.credential;
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
