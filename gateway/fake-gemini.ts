/** How the fake model answers Google's Gemini API (generateContent, streamed as SSE or not). */
import { usageOf, type FakeTurn } from './fake-script.js';
import { isObject } from './json.js';
import type { ReplyIds } from './fake-anthropic.js';

/** The model named in a Gemini path (`/v1beta/models/MODEL:streamGenerateContent`). */
export const GEMINI_PATH = /^\/v1(?:beta)?\/models\/([^/:]+):(streamGenerateContent|generateContent)$/;

/** A user turn that says something (a function's response is the tool loop's, not a new question). */
function isUserText(c: unknown): boolean {
  return isObject(c) && c.role === 'user' && Array.isArray(c.parts) && c.parts.some((p) => isObject(p) && typeof p.text === 'string');
}

/** Turn = the model's contents since the last user text: the task's own loop (a function's response is role user too). */
export function geminiTurnIndex(body: unknown): number {
  const contents = isObject(body) && Array.isArray(body.contents) ? body.contents : [];
  const last = contents.findLastIndex(isUserText);
  return contents.slice(last + 1).filter((c) => isObject(c) && c.role === 'model').length;
}

/** The whole reply: one candidate with the turn's text and function calls, and its usage (the prompt count includes the cached tokens). */
export function geminiResponse(turn: FakeTurn, ids: ReplyIds): Record<string, unknown> {
  const u = usageOf(turn);
  const prompt = u.input_tokens + u.cache_creation_input_tokens + u.cache_read_input_tokens;
  const parts = [
    ...(turn.text !== undefined || !(turn.tool_calls ?? []).length ? [{ text: turn.text ?? '' }] : []),
    ...(turn.tool_calls ?? []).map((c, i) => ({ functionCall: { id: `call_fake_${ids.turn}_${i}`, name: c.name, args: c.input } })),
  ];
  return {
    candidates: [{ content: { role: 'model', parts }, finishReason: 'STOP', index: 0 }],
    usageMetadata: {
      promptTokenCount: prompt,
      candidatesTokenCount: u.output_tokens,
      totalTokenCount: prompt + u.output_tokens,
      ...(u.cache_read_input_tokens ? { cachedContentTokenCount: u.cache_read_input_tokens } : {}),
      ...(turn.usage?.reasoning_tokens ? { thoughtsTokenCount: turn.usage.reasoning_tokens } : {}),
    },
    modelVersion: ids.model,
    responseId: `resp_fake_${ids.seq}`,
  };
}

/** Gemini's status word for an HTTP status, as its error bodies carry it. */
export function geminiStatus(status: number): string {
  return status === 429
    ? 'RESOURCE_EXHAUSTED'
    : status === 401
      ? 'UNAUTHENTICATED'
      : status === 403
        ? 'PERMISSION_DENIED'
        : status === 503 || status === 529
          ? 'UNAVAILABLE'
          : status >= 500
            ? 'INTERNAL'
            : 'INVALID_ARGUMENT';
}
