/**
 * The prices attempts are costed at: a table per model (USD per million tokens: input,
 * output, cache write, cache read), with where it came from and when. pairbench ships one
 * (PRICE_TABLE, the providers' list prices on its date); a step's `model.prices` names a
 * JSON file of the same shape whose models replace or add to it. A model in neither is
 * costed at DEFAULT_PRICE and its cost is `estimated`.
 */
import type { Price, Prices } from './cost.js';
import { isObject } from './json.js';

export interface PriceTable {
  /** Where the prices were read (the providers' pricing pages). */
  source: string;
  /** The date they were read: prices change, and a cost is only as good as its table's date. */
  as_of: string;
  /** By model name as the provider reports it; a name also prices its dated versions (`claude-sonnet-4-5` prices `claude-sonnet-4-5-20250929`). */
  models: Prices;
}

const anthropic = (input: number, output: number): Price => ({ input, output, cache_write: input * 1.25, cache_read: input * 0.1 });
/** A provider whose cache is written as plain input (OpenAI's, Gemini's implicit cache). */
const openai = (input: number, output: number, cachedInput: number): Price => ({ input, output, cache_write: input, cache_read: cachedInput });

/**
 * List prices, standard tier. Anthropic: cache writes at 1.25x input (5-minute cache), reads
 * at 0.1x. OpenAI and Gemini: no charge to write their implicit cache (billed as input), cached
 * input as listed.
 */
export const PRICE_TABLE: PriceTable = {
  source:
    'https://www.anthropic.com/pricing#api, https://platform.openai.com/docs/pricing, https://ai.google.dev/gemini-api/docs/pricing (standard tier; Gemini: prompts up to 200k tokens)',
  as_of: '2025-10-15',
  models: {
    'claude-opus-4-1': anthropic(15, 75),
    'claude-opus-4': anthropic(15, 75),
    'claude-sonnet-4-5': anthropic(3, 15),
    'claude-sonnet-4': anthropic(3, 15),
    'claude-3-7-sonnet': anthropic(3, 15),
    'claude-haiku-4-5': anthropic(1, 5),
    'claude-3-5-haiku': anthropic(0.8, 4),
    'gpt-5': openai(1.25, 10, 0.125),
    'gpt-5-codex': openai(1.25, 10, 0.125),
    'gpt-5-mini': openai(0.25, 2, 0.025),
    'gpt-5-nano': openai(0.05, 0.4, 0.005),
    'gpt-4.1': openai(2, 8, 0.5),
    'gpt-4.1-mini': openai(0.4, 1.6, 0.1),
    'gpt-4o': openai(2.5, 10, 1.25),
    'gpt-4o-mini': openai(0.15, 0.6, 0.075),
    o3: openai(2, 8, 0.5),
    'o4-mini': openai(1.1, 4.4, 0.275),
    'gemini-2.5-pro': openai(1.25, 10, 0.31),
    'gemini-2.5-flash': openai(0.3, 2.5, 0.075),
    'gemini-2.5-flash-lite': openai(0.1, 0.4, 0.025),
  },
};

/** The shipped table with a user's on top (their models replace or add to it; their source and date are theirs). */
export function mergedTable(user: PriceTable | null): PriceTable {
  if (!user) return PRICE_TABLE;
  return {
    source: `${user.source}; otherwise ${PRICE_TABLE.source}`,
    as_of: user.as_of,
    models: { ...PRICE_TABLE.models, ...user.models },
  };
}

/** A user's price file checked field by field: `{source, as_of, models: {NAME: {input, output, cache_write, cache_read}}}`. */
export function parsePriceTable(value: unknown): { ok: true; table: PriceTable } | { ok: false; field: string; message: string } {
  const bad = (field: string, message: string) => ({ ok: false as const, field, message });
  if (!isObject(value)) return bad('', 'expected an object {source, as_of, models}');
  if (typeof value.source !== 'string' || !value.source.trim()) return bad('source', 'say where the prices come from (a URL, or "our contract")');
  if (typeof value.as_of !== 'string' || !/^\d{4}-\d{2}-\d{2}$/.test(value.as_of)) return bad('as_of', 'the date the prices were read, YYYY-MM-DD');
  if (!isObject(value.models)) return bad('models', 'expected an object of model name -> price');
  const models: Prices = {};
  for (const [name, p] of Object.entries(value.models)) {
    if (!isObject(p)) return bad(`models.${name}`, 'expected {input, output, cache_write, cache_read} in USD per million tokens');
    for (const k of ['input', 'output', 'cache_write', 'cache_read'] as const) {
      const v = p[k];
      if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) return bad(`models.${name}.${k}`, 'expected a number of USD per million tokens, 0 or more');
    }
    const extra = Object.keys(p).find((k) => !['input', 'output', 'cache_write', 'cache_read'].includes(k));
    if (extra) return bad(`models.${name}.${extra}`, 'not a price field (input, output, cache_write, cache_read)');
    models[name] = { input: p.input as number, output: p.output as number, cache_write: p.cache_write as number, cache_read: p.cache_read as number };
  }
  return { ok: true, table: { source: value.source, as_of: value.as_of, models } };
}
