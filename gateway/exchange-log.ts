/** The gateway's record of one request and its response, kept in memory and appended to a JSON-lines file. */
import { open, type FileHandle } from 'node:fs/promises';
import type { SseEvent } from './sse.js';
import type { TokenUsage } from './usage.js';

export type CapHit = 'token-cap' | 'cost-cap';

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
  /** Set when the gateway refused the request: a cap was reached, or the path is not a model endpoint. */
  refused?: CapHit | 'endpoint';
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

/** Keeps every record; with a file, appends each as one JSON line, in order, without blocking the proxy. */
export class ExchangeLog {
  private readonly all: ExchangeRecord[] = [];
  private pending: Promise<void> = Promise.resolve();
  private writeError: unknown = null;

  private constructor(private readonly file: FileHandle | null) {}

  /** Opens the file up front, so an unwritable log path fails at start and not mid-attempt. */
  static async open(path?: string): Promise<ExchangeLog> {
    return new ExchangeLog(path ? await open(path, 'a') : null);
  }

  add(record: ExchangeRecord): void {
    this.all.push(record);
    const file = this.file;
    if (!file) return;
    const line = `${JSON.stringify(record)}\n`;
    this.pending = this.pending
      .then(() => file.appendFile(line))
      .catch((e: unknown) => {
        this.writeError ??= e;
      });
  }

  records(): ExchangeRecord[] {
    return [...this.all];
  }

  /** Waits for every line to be written, then closes; a write failure surfaces here. */
  async close(): Promise<void> {
    await this.pending;
    await this.file?.close();
    if (this.writeError) throw this.writeError;
  }
}
