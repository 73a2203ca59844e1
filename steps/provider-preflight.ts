/**
 * What doctor checks of a step's real model (loaded by doctor only): that the host holds the key
 * the step names, and that the provider accepts it, proven by one request through a gateway
 * exactly as an attempt's go (gateway/key-probe.ts). A refused key fails doctor in seconds,
 * instead of each attempt finding it after minutes of the agent's retries.
 */
import type { StepConfig } from '../pipeline/config/load.js';
import type { HostEnv, PreflightCheck, PreflightContext } from '../pipeline/step-kind.js';
import { missing, pass, stepList } from '../pipeline/preflight.js';
import { MODEL_PROVIDERS, type ProviderName } from '../gateway/providers.js';
import { anySpecOf } from './step-spec.js';

/** One step's real model: where it is, how it is spoken to, and which host variable holds its key (null: none named). */
export interface ProviderUse {
  step: string;
  provider: ProviderName;
  upstream: string;
  variable: string | null;
  model: string;
  /** The variable that usually holds this provider's key, to suggest when none is named. */
  usualVariable: string;
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

export async function providerChecks(uses: readonly ProviderUse[], env: HostEnv): Promise<PreflightCheck[]> {
  // One probe per key and place: the steps that share them share the check.
  const groups = new Map<string, ProviderUse[]>();
  for (const u of uses) {
    const k = JSON.stringify([u.variable, u.upstream, u.provider]);
    groups.set(k, [...(groups.get(k) ?? []), u]);
  }
  return Promise.all([...groups.values()].map((g) => keyCheck(g, env))).then((checks) => checks.flat());
}

async function keyCheck(uses: readonly ProviderUse[], env: HostEnv): Promise<PreflightCheck[]> {
  const { provider, upstream, variable, usualVariable } = uses[0]!;
  const steps = stepList(uses.map((u) => u.step));
  if (variable === null) {
    // A model on this machine may need no key (the gateway sends none): it must answer, though.
    if (isLocalUpstream(upstream)) return [await localModelCheck(uses, steps)];
    // A provider does need one, and the gateway sends only the one named.
    return [
      missing(
        `credential ${usualVariable} (${steps})`,
        `no model.api_key_env: the gateway has no key to send to ${upstream}, so the provider refuses every request`,
        `set model.api_key_env: ${usualVariable} in ${steps}, and export ${usualVariable}=<key> before running pairbench`,
      ),
    ];
  }
  const name = `credential ${variable} (${steps})`;
  // Only whether it is there, and what the provider says of it: its value is never put in a message.
  const key = (env[variable] ?? '').trim();
  if (key === '')
    return [
      missing(
        name,
        `not set: ${provider} at ${upstream} needs the key model.api_key_env names`,
        `export ${variable}=<key> before running pairbench (a key for ${upstream}; an interactive CLI login cannot be lent to the gateway)`,
      ),
    ];
  const { probeKey } = await import('../gateway/key-probe.js');
  const model = uses[0]!.model;
  const a = await probeKey(provider, upstream, key, model);
  const said = `${a.status === null ? 'no answer' : `HTTP ${a.status}`}${a.message ? `: ${a.message}` : ''}`;
  const took = `${Math.round(a.ms)} ms`;
  if (a.status === null)
    return [missing(name, `${upstream} was not reached: ${a.message}`, `check model.upstream in ${steps}, and that this machine reaches it`)];
  if (a.status >= 200 && a.status < 300) return [pass(name, `accepted by ${upstream} (one ${provider} key probe: HTTP ${a.status} in ${took})`)];
  if (a.status === 401 || a.status === 403)
    return [missing(name, `${upstream} refused the key in ${variable}: ${said}`, `export ${variable}=<a valid key for ${upstream}> (this one was refused)`)];
  // Not refused, yet not an answer: the key holds, and the run would meet the same.
  const warning = (why: string, fix: string): PreflightCheck => ({
    name,
    ok: true,
    detail: `the key was not refused, but ${upstream} answered ${said} (${why})`,
    fix,
  });
  if (a.status === 404) return [warning(`model ${model}?`, `check the model name in ${steps}: the provider did not find it`)];
  if (a.status === 429 || a.status >= 500)
    return [
      warning('rate limited or overloaded', 'attempts that meet this are excluded as infra-provider and retried; lower concurrency.kinds.run, or run later'),
    ];
  return [missing(name, `${upstream} did not accept the probe: ${said}`, `check model.upstream and the model in ${steps}`)];
}

/** A model on this machine, no key named: one keyless probe says whether it is there and takes requests. */
async function localModelCheck(uses: readonly ProviderUse[], steps: string): Promise<PreflightCheck> {
  const { provider, upstream, model } = uses[0]!;
  const name = `model at ${upstream} (${steps}: no model.api_key_env, a model on this machine)`;
  const { probeKey } = await import('../gateway/key-probe.js');
  const a = await probeKey(provider, upstream, '', model);
  if (a.status === null) return missing(name, `${upstream} was not reached: ${a.message}`, `start the model server, or correct model.upstream in ${steps}`);
  if (a.status === 401 || a.status === 403)
    return missing(
      name,
      `${upstream} refused a request without a key (HTTP ${a.status}${a.message ? `: ${a.message}` : ''})`,
      `set model.api_key_env in ${steps} to the variable that holds its key`,
    );
  return pass(name, `reached without a key (HTTP ${a.status} in ${Math.round(a.ms)} ms): the gateway sends none`);
}

/** The preflight of a kind that calls a model itself (context, judge): its model's key, proven. */
export async function modelCallPreflight(steps: readonly StepConfig[], ctx: PreflightContext): Promise<PreflightCheck[]> {
  const uses = steps.flatMap((s): ProviderUse[] => {
    const spec = anySpecOf(s);
    const m = 'model' in spec && spec.model && 'name' in spec.model ? spec.model : undefined;
    if (!m?.upstream || m.fake_script) return [];
    const provider = MODEL_PROVIDERS[m.provider ?? 'anthropic'];
    return [
      { step: s.name, provider: provider.name, upstream: m.upstream, variable: m.api_key_env ?? null, model: m.name, usualVariable: provider.usualVariable },
    ];
  });
  return providerChecks(uses, ctx.env);
}
