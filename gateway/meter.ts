/** The gateway's running account of one attempt: usage, cost, caps, turns, tool calls, delivery. */
import { combineConfidence, costOf, DEFAULT_PRICE, priceFor, type CostConfidence, type Price, type Prices } from './cost.js';
import type { CapHit } from './exchange-log.js';
import { markersFound } from './markers.js';
import { addUsage, totalTokens, ZERO_USAGE, type ReplyFacts, type TokenUsage } from './usage.js';

export interface GatewayCaps {
  /** Refuse further requests once input + output + cache-write + cache-read tokens reach this. */
  maxTokens?: number;
  /** Refuse further requests once the cost so far reaches this (USD). */
  maxCostUsd?: number;
}

export interface GatewaySummary {
  /** Every request received, including probes (HEAD) and refused ones. */
  requests: number;
  /** Requests answered with a model reply (turns, side requests included). */
  model_requests: number;
  /** tool_use blocks / function_call items the model emitted. */
  tool_calls: number;
  usage: TokenUsage;
  /** null when a model had no price and there was no default to estimate with. */
  cost_usd: number | null;
  cost_confidence: CostConfidence;
  cap_hit: CapHit | null;
  delivered: Record<string, boolean>;
  /** Upstream connection failures (infrastructure errors, not the agent's doing). */
  upstream_errors: number;
}

export interface MeterOptions {
  caps?: GatewayCaps;
  prices?: Prices;
  /** Price for models missing from `prices` (and no `*` entry); null: leave them unpriced. */
  defaultPrice?: Price | null;
  markers?: Record<string, string>;
}

export class Meter {
  private requests = 0;
  private modelRequests = 0;
  private toolCalls = 0;
  private usage: TokenUsage = ZERO_USAGE;
  private cost: number | null = 0;
  private confidence: CostConfidence | null = null;
  private capHit: CapHit | null = null;
  private upstreamErrors = 0;
  private readonly delivered: Record<string, boolean>;

  constructor(private readonly options: MeterOptions) {
    this.delivered = Object.fromEntries(Object.keys(options.markers ?? {}).map((name) => [name, false]));
  }

  countRequest(): void {
    this.requests++;
  }

  /**
   * The cap a new request would exceed, if any; remembered as the attempt's cap hit. Usage is
   * known only once a reply completes, so requests already in flight are not held back.
   */
  capReached(): CapHit | null {
    const { maxTokens, maxCostUsd } = this.options.caps ?? {};
    let hit: CapHit | null = null;
    if (maxTokens !== undefined && totalTokens(this.usage) >= maxTokens) hit = 'token-cap';
    else if (maxCostUsd !== undefined && this.cost !== null && this.cost >= maxCostUsd) hit = 'cost-cap';
    if (hit) this.capHit ??= hit;
    return hit;
  }

  /** Records which markers a forwarded request body carried; returns their names. */
  sawRequest(body: unknown): string[] {
    const found = markersFound(body, this.options.markers ?? {});
    for (const name of found) this.delivered[name] = true;
    return found;
  }

  /** Accounts a model reply; `requestModel` prices it when the reply does not name its model. */
  sawReply(facts: ReplyFacts, requestModel: string | null): void {
    if (!facts.model_reply) return;
    this.modelRequests++;
    this.toolCalls += facts.tool_calls;
    if (!facts.usage) return;
    this.usage = addUsage(this.usage, facts.usage);
    const lookup = priceFor(facts.model ?? requestModel, this.options.prices ?? {}, this.options.defaultPrice === undefined ? DEFAULT_PRICE : this.options.defaultPrice);
    if (!lookup) {
      this.cost = null;
      this.confidence = combineConfidence(this.confidence, 'estimated');
      return;
    }
    if (this.cost !== null) this.cost += costOf(facts.usage, lookup.price);
    this.confidence = combineConfidence(this.confidence, lookup.confidence);
  }

  upstreamError(): void {
    this.upstreamErrors++;
  }

  summary(): GatewaySummary {
    return {
      requests: this.requests,
      model_requests: this.modelRequests,
      tool_calls: this.toolCalls,
      usage: { ...this.usage },
      cost_usd: this.cost,
      // Nothing billed yet is an exactly known cost of 0.
      cost_confidence: this.confidence ?? 'exact',
      cap_hit: this.capHit,
      delivered: { ...this.delivered },
      upstream_errors: this.upstreamErrors,
    };
  }
}
