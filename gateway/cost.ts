/** Turns token usage into money, and says how sure that number is. */
import type { TokenUsage } from './usage.js';

/** USD per million tokens. */
export interface Price {
  input: number;
  output: number;
  cache_write: number;
  cache_read: number;
}

/** Prices by model name as the provider reports it; the key `*` prices every other model (estimated). */
export type Prices = Record<string, Price>;

/**
 * exact: the model has a price in the table and every reply reported its usage; estimated: a
 * default price was used, or a reply came without usage (the total is then a lower bound);
 * free: the price is 0; `none`: no request reached a priced provider (none at all, or only a
 * scripted model): there is no cost to state.
 */
export type CostConfidence = 'exact' | 'estimated' | 'free' | 'none';

/** Stand-in for an unpriced model (Claude Sonnet list price); costs made with it are `estimated`. */
export const DEFAULT_PRICE: Price = { input: 3, output: 15, cache_write: 3.75, cache_read: 0.3 };

export interface PriceLookup {
  price: Price;
  confidence: CostConfidence;
}

/**
 * A model's own price: its name in the table, else the longest name that it extends at a `-`
 * (a dated version, `claude-sonnet-4-5-20250929`, takes `claude-sonnet-4-5`'s price).
 */
function ownPrice(model: string, prices: Prices): Price | undefined {
  if (Object.hasOwn(prices, model)) return prices[model];
  let best: string | undefined;
  for (const name of Object.keys(prices)) if (name !== '*' && model.startsWith(`${name}-`) && (best === undefined || name.length > best.length)) best = name;
  return best === undefined ? undefined : prices[best];
}

/** `fallback` null means an unpriced model has no cost at all (the total becomes null). */
export function priceFor(model: string | null, prices: Prices, fallback: Price | null): PriceLookup | null {
  const own = model !== null ? ownPrice(model, prices) : undefined;
  if (own) return { price: own, confidence: isFree(own) ? 'free' : 'exact' };
  const other = prices['*'] ?? fallback;
  if (!other) return null;
  return { price: other, confidence: isFree(other) ? 'free' : 'estimated' };
}

export function costOf(u: TokenUsage, p: Price): number {
  return (u.input_tokens * p.input + u.output_tokens * p.output + u.cache_write_tokens * p.cache_write + u.cache_read_tokens * p.cache_read) / 1e6;
}

/** The confidence of a sum is its weakest part: any estimate makes it estimated; free only if all are free. */
export function combineConfidence(a: CostConfidence | null, b: CostConfidence): CostConfidence {
  if (a === null) return b;
  if (a === 'estimated' || b === 'estimated') return 'estimated';
  if (a === 'free' && b === 'free') return 'free';
  return 'exact';
}

function isFree(p: Price): boolean {
  return p.input === 0 && p.output === 0 && p.cache_write === 0 && p.cache_read === 0;
}
