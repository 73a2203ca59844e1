/**
 * The model providers the gateway speaks to, each with what it alone knows: the endpoints
 * that may carry the host's key, how the key is sent, and the cheapest request that proves
 * a key (doctor sends it before any attempt starts).
 */

export interface ModelProvider {
  name: ProviderName;
  /** Whether a path (no query) is one of its model endpoints (POST), forwarded with the host's credential; every other path is refused. */
  isEndpoint(pathname: string): boolean;
  /** The headers that carry the host's key on an upstream request. */
  auth(key: string): Record<string, string>;
  /** A model to probe a key with when a step names none (the agent's own default is not known here). */
  defaultModel: string;
  /** The host variable that usually holds this provider's key (suggested when a step names none). */
  usualVariable: string;
  /** The cheapest request the provider authenticates: free where the API has one, else one that bills a handful of tokens. */
  keyProbe(model: string): { path: string; headers: Record<string, string>; body: unknown };
}

export type ProviderName = 'anthropic' | 'openai' | 'google';

const anthropic: ModelProvider = {
  name: 'anthropic',
  isEndpoint: (p) => p === '/v1/messages' || p === '/v1/messages/count_tokens',
  auth: (key) => ({ 'x-api-key': key }),
  defaultModel: 'claude-haiku-4-5',
  usualVariable: 'ANTHROPIC_API_KEY',
  // Counting tokens is free and checks the key and the model name.
  keyProbe: (model) => ({
    path: '/v1/messages/count_tokens',
    headers: { 'anthropic-version': '2023-06-01' },
    body: { model, messages: [{ role: 'user', content: 'ping' }] },
  }),
};

const openai: ModelProvider = {
  name: 'openai',
  isEndpoint: (p) => p === '/v1/responses' || p === '/v1/chat/completions',
  auth: (key) => ({ authorization: `Bearer ${key}` }),
  defaultModel: 'gpt-5-mini',
  usualVariable: 'OPENAI_API_KEY',
  // The smallest reply the Responses API allows (16 output tokens at most).
  keyProbe: (model) => ({ path: '/v1/responses', headers: {}, body: { model, input: 'ping', max_output_tokens: 16, store: false } }),
};

/** Google's Gemini API: the model in the path, the method after a colon. */
export const GEMINI_ENDPOINT = /^\/v1(?:beta)?\/models\/([A-Za-z0-9][A-Za-z0-9._-]*):(streamGenerateContent|generateContent|countTokens)$/;

const google: ModelProvider = {
  name: 'google',
  isEndpoint: (p) => GEMINI_ENDPOINT.test(p),
  auth: (key) => ({ 'x-goog-api-key': key }),
  defaultModel: 'gemini-2.5-flash',
  usualVariable: 'GEMINI_API_KEY',
  // Counting tokens is free and checks the key and the model name.
  keyProbe: (model) => ({ path: `/v1beta/models/${model}:countTokens`, headers: {}, body: { contents: [{ role: 'user', parts: [{ text: 'ping' }] }] } }),
};

export const MODEL_PROVIDERS: Readonly<Record<ProviderName, ModelProvider>> = { anthropic, openai, google };

/** A status that is the provider's failure or refusal (auth, rate limit, overload, server error), not an answer to the agent's request. */
export function isProviderFault(status: number): boolean {
  return status === 401 || status === 403 || status === 408 || status === 429 || status >= 500;
}

/** What a provider's error reply says, short enough to quote in a record: `type: message` of its error object, else the body's start. */
export function errorExcerpt(body: unknown, max = 300): string {
  const error = typeof body === 'object' && body !== null && 'error' in body ? (body as { error: unknown }).error : undefined;
  let text: string;
  if (typeof error === 'object' && error !== null) {
    // Anthropic names the kind `type`, OpenAI `code`, Google `status`.
    const { type, message, code, status } = error as Record<string, unknown>;
    const kind = typeof type === 'string' ? type : typeof code === 'string' ? code : typeof status === 'string' ? status : '';
    text = typeof message === 'string' ? (kind ? `${kind}: ${message}` : message) : JSON.stringify(error);
  } else text = typeof body === 'string' ? body : body === undefined || body === null ? '' : JSON.stringify(body);
  text = text.replace(/\s+/g, ' ').trim();
  return text.length > max ? `${text.slice(0, max)}...` : text;
}
