/** Reads usage, model and tool calls from a provider's own reply (SSE events or a JSON body). */
import { isObject } from './json.js';
import type { SseEvent } from './sse.js';

export interface TokenUsage {
  /** Uncached input tokens. */
  input_tokens: number;
  output_tokens: number;
  cache_write_tokens: number;
  cache_read_tokens: number;
  /** Reasoning tokens, where the provider reports them (OpenAI: part of output_tokens, never added again). */
  reasoning_tokens?: number;
}

export interface ReplyFacts {
  /** True when the reply is a model answer (a message / response), not an error or a probe. */
  model_reply: boolean;
  model: string | null;
  usage: TokenUsage | null;
  tool_calls: number;
  /** The provider's id for this response (OpenAI Responses), which a later request may continue. */
  response_id?: string;
}

export const ZERO_USAGE: TokenUsage = { input_tokens: 0, output_tokens: 0, cache_write_tokens: 0, cache_read_tokens: 0 };

export function addUsage(a: TokenUsage, b: TokenUsage): TokenUsage {
  return {
    input_tokens: a.input_tokens + b.input_tokens,
    output_tokens: a.output_tokens + b.output_tokens,
    cache_write_tokens: a.cache_write_tokens + b.cache_write_tokens,
    cache_read_tokens: a.cache_read_tokens + b.cache_read_tokens,
    ...(a.reasoning_tokens !== undefined || b.reasoning_tokens !== undefined
      ? { reasoning_tokens: (a.reasoning_tokens ?? 0) + (b.reasoning_tokens ?? 0) }
      : {}),
  };
}

export function totalTokens(u: TokenUsage): number {
  return u.input_tokens + u.output_tokens + u.cache_write_tokens + u.cache_read_tokens;
}

const NONE: ReplyFacts = { model_reply: false, model: null, usage: null, tool_calls: 0 };

export function factsFromEvents(events: SseEvent[]): ReplyFacts {
  const anthropic = new AnthropicUsage();
  let facts: ReplyFacts = NONE;
  let openaiItems = 0;
  let openaiCompleted: Record<string, unknown> | null = null;
  // Gemini: every chunk is a partial GenerateContentResponse; its usage is cumulative.
  const gemini = events
    .map((e) => e.data)
    .filter((d): d is Record<string, unknown> => isObject(d) && (Array.isArray(d.candidates) || isObject(d.usageMetadata)));
  if (gemini.length) return geminiFacts(gemini);
  // Chat Completions chunks: the tool calls by (choice, index), the usage from the chunk that carries it.
  const chatCalls = new Set<string>();
  let chatUsageSeen: TokenUsage | null = null;
  let chat = false;
  for (const { event, data } of events) {
    if (!isObject(data)) continue;
    if (data.object === 'chat.completion.chunk') {
      chat = true;
      facts = { ...facts, model_reply: true, model: facts.model ?? str(data.model) };
      for (const c of Array.isArray(data.choices) ? data.choices : []) {
        const calls = isObject(c) && isObject(c.delta) && Array.isArray(c.delta.tool_calls) ? c.delta.tool_calls : [];
        for (const t of calls) if (isObject(t)) chatCalls.add(`${num(isObject(c) ? c.index : 0)}:${num(t.index)}`);
      }
      if (isObject(data.usage)) chatUsageSeen = chatUsage(data.usage);
      continue;
    }
    const type = typeof data.type === 'string' ? data.type : event;
    switch (type) {
      case 'message_start': {
        const message = isObject(data.message) ? data.message : {};
        facts = { ...facts, model_reply: true, model: str(message.model) };
        anthropic.take(message.usage);
        break;
      }
      case 'message_delta':
        anthropic.take(data.usage);
        break;
      case 'content_block_start':
        if (isObject(data.content_block) && data.content_block.type === 'tool_use') facts = { ...facts, tool_calls: facts.tool_calls + 1 };
        break;
      case 'response.created':
        facts = { ...facts, model_reply: true, model: facts.model ?? (isObject(data.response) ? str(data.response.model) : null) };
        break;
      case 'response.output_item.done':
        if (isToolItem(data.item)) openaiItems++;
        break;
      case 'response.completed':
      case 'response.incomplete':
      case 'response.failed':
        if (isObject(data.response)) openaiCompleted = data.response;
        break;
    }
  }
  if (chat) return { ...facts, usage: chatUsageSeen, tool_calls: chatCalls.size };
  if (openaiCompleted) {
    const done = factsFromOpenAiResponse(openaiCompleted);
    // Items streamed one by one are the evidence; the final output list is the fallback.
    return { ...done, model: facts.model ?? done.model, tool_calls: openaiItems || done.tool_calls };
  }
  if (openaiItems > 0) return { ...facts, tool_calls: openaiItems };
  return { ...facts, usage: anthropic.usage() };
}

export function factsFromJson(body: unknown): ReplyFacts {
  if (!isObject(body)) return NONE;
  if (body.type === 'message') {
    const content = Array.isArray(body.content) ? body.content : [];
    const a = new AnthropicUsage();
    a.take(body.usage);
    return {
      model_reply: true,
      model: str(body.model),
      usage: a.usage(),
      tool_calls: content.filter((b) => isObject(b) && b.type === 'tool_use').length,
    };
  }
  if (body.object === 'response') return factsFromOpenAiResponse(body);
  if (Array.isArray(body.candidates)) return geminiFacts([body]);
  if (body.object === 'chat.completion') {
    const choices = Array.isArray(body.choices) ? body.choices : [];
    const calls = choices.reduce(
      (n: number, c) => n + (isObject(c) && isObject(c.message) && Array.isArray(c.message.tool_calls) ? c.message.tool_calls.length : 0),
      0,
    );
    return { model_reply: true, model: str(body.model), usage: chatUsage(body.usage), tool_calls: calls };
  }
  return NONE;
}

/**
 * Gemini replies (one, or a stream's chunks): the function calls among the candidates' parts, the
 * last usageMetadata (its counts are cumulative). Its prompt count includes the cached tokens
 * (split out), and thinking is billed as output beside the candidates' tokens.
 */
function geminiFacts(chunks: readonly Record<string, unknown>[]): ReplyFacts {
  let calls = 0;
  let usage: TokenUsage | null = null;
  let model: string | null = null;
  for (const c of chunks) {
    model = model ?? str(c.modelVersion);
    for (const cand of Array.isArray(c.candidates) ? c.candidates : []) {
      const parts = isObject(cand) && isObject(cand.content) && Array.isArray(cand.content.parts) ? cand.content.parts : [];
      calls += parts.filter((p) => isObject(p) && isObject(p.functionCall)).length;
    }
    if (isObject(c.usageMetadata)) {
      const u = c.usageMetadata;
      const prompt = num(u.promptTokenCount);
      const cached = Math.min(prompt, num(u.cachedContentTokenCount));
      const thoughts = num(u.thoughtsTokenCount);
      usage = {
        input_tokens: prompt - cached,
        output_tokens: num(u.candidatesTokenCount) + thoughts,
        cache_write_tokens: 0,
        cache_read_tokens: cached,
        ...(thoughts ? { reasoning_tokens: thoughts } : {}),
      };
    }
  }
  return { model_reply: true, model, usage, tool_calls: calls };
}

/** Chat Completions usage: prompt_tokens include the cached ones (split out, as for the Responses API). */
function chatUsage(u: unknown): TokenUsage | null {
  if (!isObject(u)) return null;
  const prompt = num(u.prompt_tokens);
  const cached = Math.min(prompt, isObject(u.prompt_tokens_details) ? num(u.prompt_tokens_details.cached_tokens) : 0);
  const details = isObject(u.completion_tokens_details) ? u.completion_tokens_details : {};
  return {
    input_tokens: prompt - cached,
    output_tokens: num(u.completion_tokens),
    cache_write_tokens: 0,
    cache_read_tokens: cached,
    ...(typeof details.reasoning_tokens === 'number' ? { reasoning_tokens: num(details.reasoning_tokens) } : {}),
  };
}

/**
 * Anthropic usage counts are cumulative: message_delta repeats or updates what message_start said
 * (output_tokens starts at 1 and ends at the real count), so the latest value of each field wins.
 */
class AnthropicUsage {
  private fields: Partial<Record<'input_tokens' | 'output_tokens' | 'cache_creation_input_tokens' | 'cache_read_input_tokens', number>> = {};
  private seen = false;

  take(u: unknown): void {
    if (!isObject(u)) return;
    this.seen = true;
    for (const k of ['input_tokens', 'output_tokens', 'cache_creation_input_tokens', 'cache_read_input_tokens'] as const) {
      const v = u[k];
      if (typeof v === 'number') this.fields[k] = v;
    }
  }

  usage(): TokenUsage | null {
    if (!this.seen) return null;
    const f = this.fields;
    return {
      input_tokens: f.input_tokens ?? 0,
      output_tokens: f.output_tokens ?? 0,
      cache_write_tokens: f.cache_creation_input_tokens ?? 0,
      cache_read_tokens: f.cache_read_input_tokens ?? 0,
    };
  }
}

/** OpenAI's input_tokens include the cached ones: split them so cache reads are priced as such. */
function factsFromOpenAiResponse(r: Record<string, unknown>): ReplyFacts {
  const output = Array.isArray(r.output) ? r.output : [];
  let usage: TokenUsage | null = null;
  if (isObject(r.usage)) {
    const u = r.usage;
    const input = num(u.input_tokens);
    const cached = Math.min(input, isObject(u.input_tokens_details) ? num(u.input_tokens_details.cached_tokens) : 0);
    const details = isObject(u.output_tokens_details) ? u.output_tokens_details : {};
    usage = {
      input_tokens: input - cached,
      output_tokens: num(u.output_tokens),
      cache_write_tokens: 0,
      cache_read_tokens: cached,
      ...(typeof details.reasoning_tokens === 'number' ? { reasoning_tokens: num(details.reasoning_tokens) } : {}),
    };
  }
  const id = str(r.id);
  return { model_reply: true, model: str(r.model), usage, tool_calls: output.filter(isToolItem).length, ...(id ? { response_id: id } : {}) };
}

function isToolItem(item: unknown): boolean {
  return isObject(item) && (item.type === 'function_call' || item.type === 'custom_tool_call' || item.type === 'local_shell_call');
}

function num(v: unknown): number {
  return typeof v === 'number' && Number.isFinite(v) ? v : 0;
}

function str(v: unknown): string | null {
  return typeof v === 'string' && v !== '' ? v : null;
}
