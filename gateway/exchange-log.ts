/** The gateway's record of one request and its response, kept in memory and appended to a JSON-lines file. */
import { open, type FileHandle } from 'node:fs/promises';
import type { SseEvent } from './sse.js';
import type { TokenUsage } from './usage.js';

export type CapHit = 'token-cap' | 'cost-cap' | 'turn-cap';

export interface ExchangeRecord {
  /** Arrival order, from 0. */
  seq: number;
  /** ISO time the request arrived. */
  at: string;
  duration_ms: number;
  method: string;
  /** Path and query, credentials redacted. */
  path: string;
  request_headers: Record<string, string | string[]>;
  /** Decoded JSON (or text), credentials redacted. */
  request_body: unknown;
  /** The status the agent got (429 when refused, 502 when upstream failed). */
  status: number;
  response_headers: Record<string, string | string[]>;
  /** Decoded JSON or text of a non-streaming reply. */
  response_body?: unknown;
  /** Events of a streaming (SSE) reply, in order. */
  response_events?: SseEvent[];
  /**
   * Set when the gateway refused the request: a cap was reached, the path is not a model endpoint,
   * its cost cannot be bounded, its body is over the size limit, or the log is over its budget.
   */
  refused?: CapHit | 'endpoint' | 'unbounded' | 'body-too-large' | 'log-budget';
  /** What the request held against the caps while in flight (`unbounded`: all that was left). */
  reservation?: { tokens: number; cost_usd: number; unbounded?: true };
  /** Features taken out of the request before it was forwarded (server-side tools), with why. */
  removed?: string[];
  /** Answered by the gateway itself (Claude Code's `HEAD /` probe), never forwarded. */
  local?: boolean;
  /** The agent hung up before the reply ended; the reply was read to its end all the same. */
  client_aborted?: boolean;
  /** Set when the upstream could not be reached or broke off mid-response. */
  upstream_error?: string;
  model: string | null;
  usage: TokenUsage | null;
  tool_calls: number;
  /** Names of the markers this request carried. */
  markers: string[];
}

/** Records kept in memory for records() (the file has all of them, within its budget). */
const MAX_IN_MEMORY = 10_000;

/**
 * Appends each record as one JSON line, in order, without blocking the proxy, within a byte
 * budget: once a record would pass it, nothing more is written (the gateway then refuses
 * further requests, and the attempt fails on its budget). Memory stays bounded whatever the
 * number of requests: only the first records are kept for records().
 */
export class ExchangeLog {
  private readonly kept: ExchangeRecord[] = [];
  private pending: Promise<void> = Promise.resolve();
  private writeError: unknown = null;
  private written = 0;
  private full = false;
  private readonly queue: string[] = [];

  private constructor(
    private readonly file: FileHandle | null,
    private readonly maxBytes: number,
  ) {}

  /** Opens the file up front, so an unwritable log path fails at start and not mid-attempt. */
  static async open(path: string | undefined, maxBytes = Number.POSITIVE_INFINITY): Promise<ExchangeLog> {
    return new ExchangeLog(path ? await open(path, 'a') : null, maxBytes);
  }

  /** Whether the budget is spent: later records are not written. */
  exhausted(): boolean {
    return this.full;
  }

  /** Adds a record; false when it did not fit the budget (and from then on nothing is written). */
  add(record: ExchangeRecord): boolean {
    if (this.full) return false;
    const line = `${JSON.stringify(record)}\n`;
    const bytes = Buffer.byteLength(line);
    if (this.written + bytes > this.maxBytes) {
      this.full = true;
      return false;
    }
    this.written += bytes;
    if (this.kept.length < MAX_IN_MEMORY) this.kept.push(record);
    if (!this.file) return true;
    this.queue.push(line);
    if (this.queue.length === 1) this.pending = this.pending.then(() => this.drain());
    return true;
  }

  /** Writes what is queued in one append, then what came meanwhile, until the queue is empty. */
  private async drain(): Promise<void> {
    while (this.queue.length) {
      const batch = this.queue.splice(0).join('');
      try {
        await this.file!.appendFile(batch);
      } catch (e) {
        this.writeError ??= e;
      }
    }
  }

  /** The first records (up to 10,000), in arrival order of their completion. */
  records(): ExchangeRecord[] {
    return [...this.kept];
  }

  /** Waits for every line to be written, then closes; a write failure surfaces here. */
  async close(): Promise<void> {
    await this.pending;
    await this.file?.close();
    if (this.writeError) throw this.writeError;
  }
}
