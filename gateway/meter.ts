/** The gateway's running account of one attempt: usage, cost, caps, turns, tool calls, delivery. */
import { combineConfidence, costOf, DEFAULT_PRICE, priceFor, type CostConfidence, type Price, type Prices } from './cost.js';
import type { CapHit } from './exchange-log.js';
import { instructionLineDigests, markersFound, toolMarkersMissing, toolNames, type Marker } from './markers.js';
import { addUsage, totalTokens, ZERO_USAGE, type ReplyFacts, type TokenUsage } from './usage.js';

export interface GatewayCaps {
  /** Refuse further requests once input + output + cache-write + cache-read tokens reach this. */
  maxTokens?: number;
  /** Refuse further requests once the cost so far reaches this (USD). */
  maxCostUsd?: number;
  /**
   * Refuse further requests that offer tools once this many have been answered: the attempt's
   * turns, whatever the agent's own settings (OpenCode's step limit only asks the model to stop
   * calling tools; Codex has none). Side requests (no tools) and failed tries do not count.
   */
  maxTurns?: number;
}

export interface GatewaySummary {
  /** Every request received, including probes (HEAD) and refused ones. */
  requests: number;
  /** Requests answered with a model reply (turns, side requests included). */
  model_requests: number;
  /** Of those, replies to requests that offered tools: the agent's turns (what limits.turns caps). */
  tool_turns: number;
  /** tool_use blocks / function_call items the model emitted. */
  tool_calls: number;
  usage: TokenUsage;
  /** null when a model had no price and there was no default to estimate with. */
  cost_usd: number | null;
  cost_confidence: CostConfidence;
  cap_hit: CapHit | null;
  delivered: Record<string, boolean>;
  /**
   * The MCP server arms whose tools the attempt's first tool-offering request (its first turn)
   * lacked: the treatment was not ready when the model started. Null: no request offered tools.
   */
  not_ready_at_first_turn: string[] | null;
  /** Digests of the lines of every instruction section the model received (CLAUDE.md, AGENTS.md, ...), sorted. */
  instruction_lines: string[];
  /** Upstream connection failures (infrastructure errors, not the agent's doing). */
  upstream_errors: number;
  /** HTTP statuses the upstream answered with, and how often (the gateway's own refusals are not here). */
  upstream_statuses: Record<string, number>;
  /** The log reached its budget: later requests were refused, and the attempt fails on its budget. */
  log_budget_exceeded: boolean;
  /** The provider's last failure or refusal in this attempt (unreachable, 401/403, 429, 5xx, an error event), or null. */
  provider_error: ProviderError | null;
}

/** A provider's failure as the gateway saw it: its status (null when it was not reached or broke off) and what it said. */
export interface ProviderError {
  status: number | null;
  message: string;
}

export interface MeterOptions {
  caps?: GatewayCaps;
  prices?: Prices;
  /** Price for models missing from `prices` (and no `*` entry); null: leave them unpriced. */
  defaultPrice?: Price | null;
  markers?: Record<string, Marker>;
  /** name -> tools that must be in the first tool-offering request (markers.ts toolMarkersMissing). */
  ready?: Record<string, Marker>;
}

/** What a request may at most spend, held against the caps while it is in flight. */
export interface Reservation {
  tokens: number;
  costUsd: number;
  /** Its cost could not be bounded: it holds all that is left of the budget, so it goes alone. */
  unbounded?: true;
}

/** A request whose cost is not known before it is sent: it reserves the rest of the budget. */
export const REMAINING = 'remaining';

/** Response ids remembered per attempt (a continuation of one forgotten is refused as unknown). */
const MAX_KNOWN_RESPONSES = 100_000;

export class Meter {
  private requests = 0;
  private readonly inFlight = new Set<Reservation>();
  private waiters: (() => void)[] = [];
  /** The largest total usage one reply has had so far: a floor for the next reservation. */
  private largestReply: Reservation | null = null;
  private modelRequests = 0;
  /** Replies to requests that offered tools: the agent's turns. */
  private toolTurns = 0;
  private toolCalls = 0;
  private usage: TokenUsage = ZERO_USAGE;
  private cost: number | null = 0;
  private confidence: CostConfidence | null = null;
  private capHit: CapHit | null = null;
  private upstreamErrors = 0;
  private readonly upstreamStatuses = new Map<number, number>();
  private logBudgetExceeded = false;
  private providerError: ProviderError | null = null;
  /** The ids of the responses this attempt received (continuing another's is refused). */
  private readonly responses = new Set<string>();
  private readonly delivered: Record<string, boolean>;
  private notReady: string[] | null = null;
  private readonly instructionLines = new Set<string>();

  constructor(private readonly options: MeterOptions) {
    this.delivered = Object.fromEntries(Object.keys(options.markers ?? {}).map((name) => [name, false]));
  }

  countRequest(): void {
    this.requests++;
  }

  /**
   * The cap a new request would exceed, if any; remembered as the attempt's cap hit. Usage is
   * known only once a reply completes, so requests already in flight are not held back. A
   * request that offers tools (`turn`) is also held to the turn cap.
   */
  capReached(turn = false): CapHit | null {
    const { maxTokens, maxCostUsd, maxTurns } = this.options.caps ?? {};
    let hit: CapHit | null = null;
    if (maxTokens !== undefined && totalTokens(this.usage) >= maxTokens) hit = 'token-cap';
    else if (maxCostUsd !== undefined && this.cost !== null && this.cost >= maxCostUsd) hit = 'cost-cap';
    else if (turn && maxTurns !== undefined && this.toolTurns >= maxTurns) hit = 'turn-cap';
    if (hit) this.capHit ??= hit;
    return hit;
  }

  /**
   * Admits a request under the caps, whatever the concurrency: it goes when nothing is
   * in flight, or when what was spent plus every in-flight reservation plus its own
   * stays within the caps; otherwise it waits for an in-flight request to finish, then
   * is judged again (and refused once a cap is reached). So the total can pass a cap by
   * at most one request: the one admitted alone. Until a reply has been seen requests go
   * one at a time (nothing is known of their size yet).
   */
  async admit(estimate: Reservation | typeof REMAINING, turn = false): Promise<{ hit: CapHit } | { reservation: Reservation; release: () => void }> {
    const { maxTokens, maxCostUsd } = this.options.caps ?? {};
    const capped = maxTokens !== undefined || maxCostUsd !== undefined;
    // Judged again after every wait: what was spent, and the largest reply seen, have changed.
    const reserve = (): Reservation =>
      estimate === REMAINING
        ? {
            tokens: maxTokens === undefined ? Number.POSITIVE_INFINITY : Math.max(0, maxTokens - totalTokens(this.usage)),
            costUsd: maxCostUsd === undefined || this.cost === null ? Number.POSITIVE_INFINITY : Math.max(0, maxCostUsd - this.cost),
            unbounded: true,
          }
        : {
            tokens: Math.max(estimate.tokens, this.largestReply?.tokens ?? 0),
            costUsd: Math.max(estimate.costUsd, this.largestReply?.costUsd ?? 0),
          };
    let reservation = reserve();
    for (;;) {
      const hit = this.capReached(turn);
      if (hit) return { hit };
      reservation = reserve();
      // What is unbounded goes alone and keeps the rest out, capped or not: its cost is settled before the next is judged.
      if (reservation.unbounded || [...this.inFlight].some((r) => r.unbounded)) {
        if (this.inFlight.size === 0) break;
      } else if (!capped || this.inFlight.size === 0 || (this.largestReply && this.fits(reservation))) break;
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
    this.inFlight.add(reservation);
    let released = false;
    return {
      reservation,
      release: () => {
        if (released) return;
        released = true;
        this.inFlight.delete(reservation);
        const waiting = this.waiters;
        this.waiters = [];
        for (const w of waiting) w();
      },
    };
  }

  private fits(r: Reservation): boolean {
    const { maxTokens, maxCostUsd } = this.options.caps ?? {};
    let tokens = totalTokens(this.usage) + r.tokens;
    let cost = (this.cost ?? 0) + r.costUsd;
    for (const f of this.inFlight) {
      tokens += f.tokens;
      cost += f.costUsd;
    }
    return (maxTokens === undefined || tokens <= maxTokens) && (maxCostUsd === undefined || this.cost === null || cost <= maxCostUsd);
  }

  /** The price of a model's tokens, for reservations (the default price when unknown). */
  priceOf(model: string | null): Price {
    return (
      priceFor(model, this.options.prices ?? {}, this.options.defaultPrice === undefined ? DEFAULT_PRICE : this.options.defaultPrice)?.price ?? DEFAULT_PRICE
    );
  }

  /** Records which markers a forwarded request body carried; returns their names. */
  sawRequest(body: unknown): string[] {
    const found = markersFound(body, this.options.markers ?? {});
    for (const name of found) this.delivered[name] = true;
    if (this.notReady === null && toolNames(body).length) this.notReady = toolMarkersMissing(body, this.options.ready ?? {});
    for (const d of instructionLineDigests(body)) if (this.instructionLines.size < 5000) this.instructionLines.add(d);
    return found;
  }

  /** Accounts a model reply; `requestModel` prices it when the reply does not name its model. */
  sawReply(facts: ReplyFacts, requestModel: string | null, offeredTools = false): void {
    if (!facts.model_reply) return;
    if (facts.response_id && this.responses.size < MAX_KNOWN_RESPONSES) this.responses.add(facts.response_id);
    this.modelRequests++;
    if (offeredTools) this.toolTurns++;
    this.toolCalls += facts.tool_calls;
    // A reply that reported no usage was still billed: the total is a lower bound, no longer exact.
    if (!facts.usage) {
      this.confidence = combineConfidence(this.confidence, 'estimated');
      return;
    }
    this.usage = addUsage(this.usage, facts.usage);
    const lookup = priceFor(
      facts.model ?? requestModel,
      this.options.prices ?? {},
      this.options.defaultPrice === undefined ? DEFAULT_PRICE : this.options.defaultPrice,
    );
    const replyCost = lookup ? costOf(facts.usage, lookup.price) : 0;
    this.largestReply = {
      tokens: Math.max(this.largestReply?.tokens ?? 0, totalTokens(facts.usage)),
      costUsd: Math.max(this.largestReply?.costUsd ?? 0, replyCost),
    };
    if (!lookup) {
      this.cost = null;
      this.confidence = combineConfidence(this.confidence, 'estimated');
      return;
    }
    if (this.cost !== null) this.cost += costOf(facts.usage, lookup.price);
    this.confidence = combineConfidence(this.confidence, lookup.confidence);
  }

  /** The upstream was not reached, or broke off: `message` says how. */
  upstreamError(message: string): void {
    this.upstreamErrors++;
    this.providerError = { status: null, message };
  }

  /** The provider answered with a failure or refusal (isProviderFault): its status and an excerpt of what it said. */
  providerFault(status: number, message: string): void {
    this.providerError = { status, message };
  }

  upstreamStatus(status: number): void {
    this.upstreamStatuses.set(status, (this.upstreamStatuses.get(status) ?? 0) + 1);
  }

  logFull(): void {
    this.logBudgetExceeded = true;
  }

  /** The ids of the responses received so far. */
  knownResponses(): ReadonlySet<string> {
    return this.responses;
  }

  summary(): GatewaySummary {
    return {
      requests: this.requests,
      model_requests: this.modelRequests,
      tool_turns: this.toolTurns,
      tool_calls: this.toolCalls,
      usage: { ...this.usage },
      // No reply priced at all: there is no cost to state (not "exactly 0").
      cost_usd: this.confidence === null ? null : this.cost,
      cost_confidence: this.confidence ?? 'none',
      cap_hit: this.capHit,
      delivered: { ...this.delivered },
      not_ready_at_first_turn: this.notReady,
      instruction_lines: [...this.instructionLines].sort(),
      upstream_errors: this.upstreamErrors,
      upstream_statuses: Object.fromEntries([...this.upstreamStatuses].sort((a, b) => a[0] - b[0]).map(([k, v]) => [String(k), v])),
      log_budget_exceeded: this.logBudgetExceeded,
      provider_error: this.providerError,
    };
  }
}
