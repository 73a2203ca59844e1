/**
 * One model call from a step that is not an agent (a context generator, a judge):
 * through the recording gateway, in front of the real provider (the host holds the
 * key) or a scripted fake, with usage and cost taken from the provider's reply.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseFakeScript, type FakeScript } from '../gateway/fake-script.js';
import type { StepConfig } from '../pipeline/config/load.js';
import type { Diagnostic } from '../pipeline/diagnostic.js';
import { err, errorMessage, ok, type Result } from '../pipeline/result.js';
import type { ExecutionContext, FileInputSpec } from '../pipeline/step-kind.js';
import { normalizedPath } from './treatment-files.js';
import { MODEL_PROVIDERS } from '../gateway/providers.js';
import { anySpecOf } from './step-spec.js';
import { isRecord } from '../agents/adapter.js';
import type { ModelCall } from './config-types.generated.js';
import { artifact } from '../pipeline/artifact.js';

/** The exchange a model-calling step (context, judge) records beside what it was asked. */
export const MODEL_EXCHANGE = artifact('exchange.jsonl', 'the model exchange (credentials redacted)');

/** `model:` of a context or judge step. */
export type ModelCallSpec = ModelCall;

export interface ModelReply {
  text: string;
  usage: { input_tokens: number; output_tokens: number; cache_write_tokens: number; cache_read_tokens: number } | null;
  cost_usd: number | null;
  cost_confidence: string;
  model_source: 'scripted' | 'provider';
}

export function checkModelSpec(step: StepConfig): Diagnostic[] {
  const spec = anySpecOf(step);
  const m = 'model' in spec && spec.model && 'name' in spec.model ? spec.model : undefined;
  const at = (f: string[]) => ({ field: `steps.${step.name}.${f.join('.')}`, location: step.source.locate([...step.path, ...f]) });
  if (!m?.name) return [{ ...at(['model']), message: `a ${step.kind} step needs model.name and either model.upstream (URL) or model.fake_script` }];
  if (!m.fake_script && !m.upstream)
    return [{ ...at(['model']), message: `step ${step.name} needs model.upstream (the provider's URL, with api_key_env) or model.fake_script` }];
  if (m.fake_script) {
    let parsed: ReturnType<typeof parseFakeScript>;
    try {
      parsed = parseFakeScript(JSON.parse(readFileSync(resolve(step.rootDir, m.fake_script), 'utf8')));
    } catch (e) {
      return [{ ...at(['model', 'fake_script']), message: `${m.fake_script}: ${errorMessage(e)}` }];
    }
    if (!parsed.ok) return [{ ...at(['model', 'fake_script']), message: `${m.fake_script}: ${parsed.error.path}: ${parsed.error.message}` }];
  }
  return [];
}

export function modelKey(m: ModelCallSpec) {
  return {
    name: m.name,
    provider: m.provider ?? 'anthropic',
    upstream: m.upstream ?? null,
    fake: Boolean(m.fake_script),
    api_key_env: m.api_key_env ?? null,
    max_tokens: m.max_tokens ?? 4096,
  };
}

export function modelInputs(m: ModelCallSpec): FileInputSpec[] {
  return m.fake_script ? [{ pattern: m.fake_script, field: ['model', 'fake_script'] }] : [];
}

function replyText(provider: 'anthropic' | 'openai', body: unknown): string {
  // The provider's reply is checked as it is read: a field of the wrong shape reads as no text.
  const records = (v: unknown): Record<string, unknown>[] => (Array.isArray(v) ? v.filter(isRecord) : []);
  const texts = (blocks: Record<string, unknown>[], type: string) =>
    blocks
      .filter((c) => c['type'] === type && typeof c['text'] === 'string')
      .map((c) => String(c['text']))
      .join('');
  if (!isRecord(body)) return '';
  if (provider === 'anthropic') return texts(records(body['content']), 'text');
  return texts(
    records(body['output'])
      .filter((o) => o['type'] === 'message')
      .flatMap((o) => records(o['content'])),
    'output_text',
  );
}

/**
 * Sends `user` (and `system`) as one request; the exchange is logged to `logFile`.
 * A provider that fails or refuses is an infrastructure error, never an answer.
 */
export async function callModel(
  ctx: ExecutionContext,
  m: ModelCallSpec,
  request: { system: string; user: string },
  logFile: string,
): Promise<Result<ModelReply, string>> {
  const provider = m.provider ?? 'anthropic';
  const fakeEntry = m.fake_script ? ctx.files.find((f) => f.path === normalizedPath(m.fake_script!))?.entry : undefined;
  if (m.fake_script && fakeEntry?.type !== 'file') return err(`model.fake_script ${m.fake_script} was not staged`);
  let fakeScript: FakeScript | undefined;
  if (fakeEntry?.type === 'file') {
    const parsed = parseFakeScript(JSON.parse(ctx.artifacts.read(fakeEntry.digest).toString('utf8')));
    if (!parsed.ok) return err(`model.fake_script ${m.fake_script}: ${parsed.error.path}: ${parsed.error.message}`);
    fakeScript = parsed.value;
  }
  const key = m.api_key_env && !fakeScript ? (ctx.hostEnv[m.api_key_env] ?? '') : undefined;
  if (m.api_key_env && !fakeScript && !key) return err(`the host variable ${m.api_key_env} (model.api_key_env) is not set`);
  const { openModel } = await import('./model-session.js');
  const session = await openModel({
    ...(fakeScript ? { fakeScript } : { upstream: m.upstream! }),
    caps: {},
    markers: {},
    provider,
    logFile,
    ...(key ? { upstreamAuth: MODEL_PROVIDERS[provider].auth(key) } : {}),
  });
  try {
    const maxTokens = m.max_tokens ?? 4096;
    const body =
      provider === 'anthropic'
        ? { model: m.name, max_tokens: maxTokens, system: request.system, messages: [{ role: 'user', content: request.user }] }
        : { model: m.name, max_output_tokens: maxTokens, instructions: request.system, input: request.user };
    const res = await fetch(`${session.url}${provider === 'anthropic' ? '/v1/messages' : '/v1/responses'}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(provider === 'anthropic' ? { 'anthropic-version': '2023-06-01' } : {}) },
      body: JSON.stringify(body),
      signal: ctx.signal,
    });
    const text = await res.text();
    if (!res.ok) return err(`the model provider answered HTTP ${res.status}: ${text.slice(0, 300)}`);
    const answer = replyText(provider, JSON.parse(text));
    const gw = session.summary();
    return ok({
      text: answer,
      usage: gw.usage ?? null,
      // A scripted model is no provider: its replies have no price.
      cost_usd: fakeScript ? null : (gw.cost_usd ?? null),
      cost_confidence: fakeScript ? 'none' : gw.cost_confidence,
      model_source: fakeScript ? 'scripted' : 'provider',
    });
  } catch (e) {
    return err(`the model call failed: ${errorMessage(e)}`);
  } finally {
    await session.close();
  }
}
