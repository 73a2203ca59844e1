/** Server-sent events: the wire format of both providers' streaming replies. */

/** One event as recorded: `data` is the decoded JSON when it parses, else the raw text. */
export interface SseEvent {
  event: string | null;
  data: unknown;
}

export function formatSse(event: string, data: unknown): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

/**
 * Incremental parser: feed it chunks exactly as they arrive (split anywhere, even inside a
 * UTF-8 sequence or a line) and it returns the events completed so far.
 */
export class SseParser {
  private readonly decoder = new TextDecoder();
  private buffer = '';
  private event: string | null = null;
  private data: string[] = [];

  feed(chunk: Uint8Array | string): SseEvent[] {
    this.buffer += typeof chunk === 'string' ? chunk : this.decoder.decode(chunk, { stream: true });
    const out: SseEvent[] = [];
    let nl: number;
    while ((nl = this.buffer.search(/\r\n|\r|\n/)) >= 0) {
      const line = this.buffer.slice(0, nl);
      // A lone \r at the end of the buffer may be the first half of \r\n: wait for more.
      if (this.buffer[nl] === '\r' && nl === this.buffer.length - 1) break;
      this.buffer = this.buffer.slice(nl + (this.buffer.startsWith('\r\n', nl) ? 2 : 1));
      const ev = this.line(line);
      if (ev) out.push(ev);
    }
    return out;
  }

  /** Flushes an event the stream ended without a blank line after. */
  end(): SseEvent[] {
    const rest = this.buffer + this.decoder.decode();
    this.buffer = '';
    const out: SseEvent[] = [];
    if (rest) {
      const ev = this.line(rest);
      if (ev) out.push(ev);
    }
    const last = this.line('');
    if (last) out.push(last);
    return out;
  }

  private line(line: string): SseEvent | null {
    if (line === '') {
      if (this.data.length === 0 && this.event === null) return null;
      const raw = this.data.join('\n');
      const ev: SseEvent = { event: this.event, data: decode(raw) };
      this.event = null;
      this.data = [];
      return ev;
    }
    if (line.startsWith(':')) return null; // comment / keep-alive
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') this.event = value;
    else if (field === 'data') this.data.push(value);
    return null;
  }
}

function decode(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}
