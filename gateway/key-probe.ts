/**
 * One request that proves a provider key, sent the way an attempt's requests go: through a
 * gateway that adds the host's key (the probe never holds it). doctor sends it once per key.
 */
import { startGateway } from './gateway.js';
import { errorExcerpt, MODEL_PROVIDERS, type ProviderName } from './providers.js';
import { errorMessage } from '../pipeline/result.js';

export interface KeyProbeAnswer {
  /** The provider's status, or null when it was not reached (then `message` says why). */
  status: number | null;
  /** What it said: `type: message` of its error, or nothing for a success. */
  message: string;
  ms: number;
}

/** How long doctor waits for the provider's answer: a refused key is answered at once. */
const PROBE_TIMEOUT_MS = 30_000;

export async function probeKey(provider: ProviderName, upstream: string, key: string, model: string): Promise<KeyProbeAnswer> {
  const p = MODEL_PROVIDERS[provider];
  const started = performance.now();
  const gateway = await startGateway({ upstream, listen: { port: 0 }, provider, upstreamAuth: p.auth(key) });
  try {
    const probe = p.keyProbe(model);
    const res = await fetch(gateway.url + probe.path, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...probe.headers },
      body: JSON.stringify(probe.body),
      signal: AbortSignal.timeout(PROBE_TIMEOUT_MS),
    });
    const text = await res.text();
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {
      // not JSON: quoted as text
    }
    const gatewayError = gateway.summary().provider_error;
    // The gateway's own 502 (the upstream was not reached) is not the provider's answer.
    if (gatewayError?.status === null) return { status: null, message: gatewayError.message, ms: performance.now() - started };
    return { status: res.status, message: res.ok ? '' : errorExcerpt(body), ms: performance.now() - started };
  } catch (e) {
    return { status: null, message: `no answer within ${PROBE_TIMEOUT_MS / 1000} s (${errorMessage(e)})`, ms: performance.now() - started };
  } finally {
    await gateway.close();
  }
}
