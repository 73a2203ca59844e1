/** How a provider takes the host's key on upstream requests: Anthropic's x-api-key, or a bearer token (OpenAI and compatible). */
export function upstreamAuth(provider: 'anthropic' | 'openai' | 'bearer', key: string): Record<string, string> {
  return provider === 'anthropic' ? { 'x-api-key': key } : { authorization: `Bearer ${key}` };
}
