/**
 * The most a request can bill, derived from its structure: an allowlist of the fields and block
 * types whose cost is carried by the body itself. Anything else (a field or block type pairbench
 * does not know, a server-side tool, a source named by URL or file id, a stored prompt) makes the
 * request unbounded, so a new API feature cannot slip under the caps unnoticed: it is refused (the
 * default) or sent alone with the remaining budget (`unbounded_requests: serialize`).
 */
import { isObject } from './json.js';
import { GEMINI_ENDPOINT } from './providers.js';

/** Whether a request offers the model tools: an agent's turn, not a side request (a title, a summary). Every wire format names them `tools`. */
export function offersTools(body: unknown): boolean {
  const tools = isObject(body) ? body.tools : undefined;
  return Array.isArray(tools) && tools.length > 0;
}

/** Fixed tokens a provider adds to any request (tool-use and system framing), on top of the body's bytes. */
export const REQUEST_OVERHEAD_TOKENS = 1024;
/**
 * The most one image can bill as input, whatever its bytes (a small PNG can be a large picture).
 * Anthropic resizes to about 1.15 megapixels (≈1,600 tokens); OpenAI's mini models count up to
 * 2,833 + 5,667 per tile for 8 tiles (≈48,200 tokens).
 */
const IMAGE_TOKENS: Record<Api, number> = { messages: 1_600, responses: 48_200, chat: 48_200, gemini: 1_290 };

export type Api = 'messages' | 'responses' | 'chat' | 'gemini';

/** The API a model endpoint's path belongs to. */
export function apiOf(pathname: string): Api | null {
  if (pathname === '/v1/messages' || pathname === '/v1/messages/count_tokens') return 'messages';
  if (pathname === '/v1/responses') return 'responses';
  if (pathname === '/v1/chat/completions') return 'chat';
  if (GEMINI_ENDPOINT.test(pathname)) return 'gemini';
  return null;
}

export interface Bounded {
  bounded: true;
  /** Not billed at all (Anthropic's count_tokens). */
  free: boolean;
  /** Input tokens at most: the body's bytes, the framing, and each image at its largest. */
  inputTokens: number;
  /** Output tokens at most (Infinity without an output limit); `n` choices multiply it. */
  outputTokens: number;
}

export interface Unbounded {
  bounded: false;
  /** Where in the body, and why: `tools[2] (type web_search): a server-side tool bills what it fetches`. */
  reasons: string[];
  /** State from outside this attempt (a response or conversation it did not make): refused whatever the policy. */
  foreign: boolean;
}

/** The ids of the responses this attempt received. */
export type KnownResponses = ReadonlySet<string>;

const TOP_LEVEL: Record<Api, ReadonlySet<string>> = {
  messages: new Set([
    'model',
    'messages',
    'system',
    'max_tokens',
    'metadata',
    'stop_sequences',
    'stream',
    'temperature',
    'top_k',
    'top_p',
    'tools',
    'tool_choice',
    'thinking',
    'service_tier',
    'context_management',
    'output_config',
  ]),
  responses: new Set([
    'model',
    'input',
    'instructions',
    'tools',
    'tool_choice',
    'parallel_tool_calls',
    'max_output_tokens',
    'max_tool_calls',
    'reasoning',
    'text',
    'store',
    'stream',
    'stream_options',
    'include',
    'metadata',
    'temperature',
    'top_p',
    'top_logprobs',
    'truncation',
    'user',
    'safety_identifier',
    'prompt_cache_key',
    'prompt_cache_retention',
    'service_tier',
    'previous_response_id',
    'conversation',
    'prompt',
    'client_metadata',
  ]),
  chat: new Set([
    'model',
    'messages',
    'max_tokens',
    'max_completion_tokens',
    'n',
    'stream',
    'stream_options',
    'temperature',
    'top_p',
    'tools',
    'tool_choice',
    'parallel_tool_calls',
    'response_format',
    'stop',
    'seed',
    'user',
    'logprobs',
    'top_logprobs',
    'presence_penalty',
    'frequency_penalty',
    'logit_bias',
    'reasoning_effort',
    'metadata',
    'store',
    'service_tier',
    'verbosity',
    'prompt_cache_key',
    'safety_identifier',
    'prediction',
  ]),
  // cachedContent (server-side state) is not here: it is billed outside the body.
  gemini: new Set(['model', 'contents', 'systemInstruction', 'tools', 'toolConfig', 'generationConfig', 'safetySettings', 'labels']),
};

/** Tools the client runs (their definitions are in the body); any other type is a server-side tool. */
const CLIENT_TOOL_TYPE: Record<Api, (type: string | undefined) => boolean> = {
  messages: (t) => t === undefined || t === 'custom' || /^(bash|text_editor|computer)_\d{8}$/.test(t),
  responses: (t) => t === 'function' || t === 'custom' || t === 'local_shell',
  chat: (t) => t === 'function' || t === 'custom',
  // A Gemini tool is an object of one kind: functionDeclarations (the client's) or a server-side one (googleSearch, codeExecution, urlContext...).
  gemini: (t) => t === 'functionDeclarations',
};

/** A client tool, or a namespace (Codex groups tools so) of client tools only. */
function isClientTool(api: Api, tool: unknown): boolean {
  if (!isObject(tool)) return false;
  if (api === 'gemini') return Object.keys(tool).length === 1 && CLIENT_TOOL_TYPE.gemini(Object.keys(tool)[0]);
  const type = typeof tool.type === 'string' ? tool.type : undefined;
  if (type === 'namespace' && api === 'responses') return Array.isArray(tool.tools) && tool.tools.every((t) => isClientTool(api, t));
  return CLIENT_TOOL_TYPE[api](type);
}

function toolType(tool: unknown): string {
  if (isObject(tool) && tool.type === undefined) return Object.keys(tool).join('+') || '?';
  return isObject(tool) && typeof tool.type === 'string' ? tool.type : '?';
}

/**
 * The request without its server-side tools (a search the provider runs is billed for what it
 * fetches, and reaches a network the sandbox denies), or null when it has none. Codex offers
 * `web_search` on every request: taking it out refuses the feature and lets the request go.
 */
export function withoutServerTools(api: Api, body: unknown): { body: Record<string, unknown>; removed: string[] } | null {
  if (!isObject(body) || !Array.isArray(body.tools)) return null;
  const removed: string[] = [];
  const tools = body.tools.filter((t, i) => {
    if (isClientTool(api, t)) return true;
    removed.push(`tools[${i}] (type ${toolType(t)}): a server-side tool bills what it fetches or runs, and reaches a network the sandbox does not`);
    return false;
  });
  if (!removed.length) return null;
  const { web_search_options: _search, ...rest } = body;
  return { body: { ...rest, tools }, removed };
}

/** Content blocks and input items whose whole cost is inline. */
const INLINE_BLOCKS = new Set([
  'text',
  'thinking',
  'redacted_thinking',
  'tool_use',
  'tool_result',
  'message',
  'input_text',
  'output_text',
  'refusal',
  'reasoning',
  'summary_text',
  'function_call',
  'function_call_output',
  'custom_tool_call',
  'custom_tool_call_output',
  'local_shell_call',
  'local_shell_call_output',
]);
const IMAGE_BLOCKS = new Set(['image', 'input_image', 'image_url']);

/** Bounds a decoded request body for an API. */
export function boundRequest(api: Api, body: unknown, bytes: number, known: KnownResponses, free = false): Bounded | Unbounded {
  if (!isObject(body)) return { bounded: false, reasons: ['the body is not a JSON object'], foreign: false };
  const reasons: string[] = [];
  let foreign = false;
  let images = 0;
  for (const key of Object.keys(body)) {
    if (!TOP_LEVEL[api].has(key)) reasons.push(`${key}: a field pairbench does not know to be billed only by what the body holds`);
  }
  // What a continued response bills again is the provider's server-side state, not the body: never bounded
  // from the request; one this attempt did not receive is state from outside it, refused whatever the policy.
  if (api === 'responses' && body.previous_response_id !== undefined && body.previous_response_id !== null) {
    const own = typeof body.previous_response_id === 'string' && known.has(body.previous_response_id);
    if (!own) foreign = true;
    reasons.push(
      own
        ? 'previous_response_id: continues server-side conversation state, which the provider bills again'
        : 'previous_response_id: names a response this attempt did not receive (server-side state from outside the attempt)',
    );
  }
  if (api === 'responses' && body.prompt !== undefined) reasons.push('prompt: a stored prompt the provider expands, billed outside the body');
  if (api === 'responses' && body.conversation !== undefined) {
    foreign = true;
    reasons.push('conversation: server-side conversation state this attempt did not make');
  }
  if (Array.isArray(body.tools)) {
    body.tools.forEach((t, i) => {
      if (!isClientTool(api, t)) reasons.push(`tools[${i}] (type ${toolType(t)}): a server-side tool bills what it fetches or runs`);
    });
  }
  if (api === 'chat' && body.web_search_options !== undefined) reasons.push('web_search_options: a server-side search bills what it fetches');
  if (api === 'gemini') images += geminiPartProblems(body, reasons);
  const content =
    api === 'gemini' ? {} : api === 'responses' ? { input: body.input, instructions: body.instructions } : { messages: body.messages, system: body.system };
  for (const [field, value] of Object.entries(content)) {
    walkBlocks(value, field, (path, block) => {
      const type = typeof block.type === 'string' ? block.type : undefined;
      if (type !== undefined && IMAGE_BLOCKS.has(type)) {
        images++;
        const source = imageSourceProblem(block);
        if (source) reasons.push(`${path} (type ${type}): ${source}`);
        return false;
      }
      if (type === 'item_reference') {
        foreign = true;
        reasons.push(`${path} (type item_reference): names an item stored outside this attempt`);
        return false;
      }
      if (type === undefined || !INLINE_BLOCKS.has(type)) {
        reasons.push(`${path} (type ${type ?? 'none'}): a block type pairbench does not know to be billed only by its bytes`);
        return false;
      }
      return true;
    });
  }
  if (reasons.length) return { bounded: false, reasons, foreign };
  return {
    bounded: true,
    free,
    inputTokens: bytes + REQUEST_OVERHEAD_TOKENS + images * IMAGE_TOKENS[api],
    outputTokens: outputLimit(api, body),
  };
}

/**
 * Calls `visit` on every content block under a content field, descending only where content
 * lives (`content`, a tool result's `output`, a reasoning `summary`): a tool call's arguments
 * and a block's `cache_control` are data, not blocks. `visit` returns whether to look inside.
 */
function walkBlocks(value: unknown, path: string, visit: (path: string, block: Record<string, unknown>) => boolean): void {
  if (Array.isArray(value)) {
    value.forEach((v, i) => walkBlocks(v, `${path}[${i}]`, visit));
    return;
  }
  if (!isObject(value)) return;
  // A message ({role, content}) has no type of its own; everything else is a typed block.
  if (value.type !== undefined || value.role === undefined) {
    if (!visit(path, value)) return;
  }
  for (const field of CONTENT_FIELDS) if (typeof value[field] === 'object' && value[field] !== null) walkBlocks(value[field], `${path}.${field}`, visit);
}
const CONTENT_FIELDS = ['content', 'output', 'summary'] as const;

/** Why an image's bytes are not in the body (a URL or a stored file), or null when they are. */
function imageSourceProblem(block: Record<string, unknown>): string | null {
  const source = isObject(block.source) ? block.source : null;
  if (source) return source.type === 'base64' ? null : `an image by ${String(source.type)} is fetched and billed outside the body`;
  if (block.file_id !== undefined) return 'an image by file id is billed outside the body';
  const url = isObject(block.image_url) ? block.image_url.url : block.image_url;
  if (typeof url === 'string') return url.startsWith('data:') ? null : 'an image by URL is fetched and billed outside the body';
  return 'an image without inline data';
}

function outputLimit(api: Api, body: Record<string, unknown>): number {
  const generation = isObject(body.generationConfig) ? body.generationConfig : {};
  const limits =
    api === 'messages'
      ? [body.max_tokens]
      : api === 'responses'
        ? [body.max_output_tokens]
        : api === 'gemini'
          ? [generation.maxOutputTokens]
          : [body.max_completion_tokens, body.max_tokens];
  const limit = limits.find((v): v is number => typeof v === 'number' && Number.isFinite(v) && v > 0);
  if (limit === undefined) return Number.POSITIVE_INFINITY;
  const count = api === 'chat' ? body.n : api === 'gemini' ? generation.candidateCount : undefined;
  const n = typeof count === 'number' && count > 1 ? Math.ceil(count) : 1;
  return limit * n;
}

/** A Gemini part's fields whose whole cost is inline (its data, or what the model said). */
const GEMINI_INLINE_PARTS = new Set([
  'text',
  'thought',
  'thoughtSignature',
  'functionCall',
  'functionResponse',
  'executableCode',
  'codeExecutionResult',
  'inlineData',
  'videoMetadata',
]);

/** Every part of a Gemini request's contents and system instruction: inline data counted as an image, anything else named. */
function geminiPartProblems(body: Record<string, unknown>, reasons: string[]): number {
  let images = 0;
  const contents = Array.isArray(body.contents) ? body.contents : [];
  const sections: [string, unknown][] = [...contents.map((c, i): [string, unknown] => [`contents[${i}]`, c]), ['systemInstruction', body.systemInstruction]];
  for (const [path, section] of sections) {
    if (section === undefined) continue;
    const parts = isObject(section) && Array.isArray(section.parts) ? section.parts : null;
    if (!parts) {
      reasons.push(`${path}: expected {role, parts}`);
      continue;
    }
    parts.forEach((part, j) => {
      const at = `${path}.parts[${j}]`;
      if (!isObject(part)) return void reasons.push(`${at}: not an object`);
      for (const key of Object.keys(part)) {
        if (key === 'fileData') reasons.push(`${at}.fileData: a file by URI is fetched and billed outside the body`);
        else if (!GEMINI_INLINE_PARTS.has(key)) reasons.push(`${at}.${key}: a part pairbench does not know to be billed only by its bytes`);
      }
      if (part.inlineData !== undefined) images++;
    });
  }
  return images;
}
