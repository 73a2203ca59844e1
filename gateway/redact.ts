/** Keeps credentials out of recorded exchanges and log files. */

export const REDACTED = '[redacted]';

/** A header, JSON field or query parameter whose name says it holds a credential. */
const SENSITIVE_NAME = /key|token|secret|authorization/i;

export type HeaderMap = Record<string, string | string[] | number | undefined>;

export class Redactor {
  /** Credential values seen in headers, scrubbed wherever else they turn up (a body, a URL). */
  private readonly secrets = new Set<string>();

  headers(headers: HeaderMap): Record<string, string | string[]> {
    const out: Record<string, string | string[]> = {};
    for (const [name, value] of Object.entries(headers)) {
      if (value === undefined) continue;
      if (SENSITIVE_NAME.test(name)) {
        for (const v of [value].flat()) this.learn(String(v));
        out[name] = REDACTED;
      } else {
        out[name] = typeof value === 'number' ? String(value) : Array.isArray(value) ? value.map((v) => this.text(v)) : this.text(value);
      }
    }
    return out;
  }

  /**
   * Replaces string values of fields with a sensitive name. Numbers are kept: `max_tokens` and
   * the usage counts (`input_tokens`...) match the name pattern but are not credentials.
   */
  json(value: unknown): unknown {
    if (typeof value === 'string') return this.text(value);
    if (Array.isArray(value)) return value.map((v) => this.json(v));
    if (typeof value !== 'object' || value === null) return value;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      out[k] = SENSITIVE_NAME.test(k) && typeof v === 'string' ? REDACTED : this.json(v);
    }
    return out;
  }

  /** A request path with sensitive query parameters (e.g. `?key=`) redacted. */
  path(path: string): string {
    const q = path.indexOf('?');
    if (q < 0) return this.text(path);
    const params = new URLSearchParams(path.slice(q + 1));
    for (const name of [...params.keys()]) {
      if (SENSITIVE_NAME.test(name)) params.set(name, REDACTED);
    }
    return this.text(`${path.slice(0, q)}?${params.toString()}`);
  }

  text(s: string): string {
    let out = s;
    for (const secret of this.secrets) if (out.includes(secret)) out = out.split(secret).join(REDACTED);
    return out;
  }

  /** A value to scrub wherever it turns up. */
  secret(value: string): void {
    this.secrets.add(value);
  }

  private learn(value: string): void {
    // `Bearer sk-...`: the token alone is the secret. Short values would scrub innocent text.
    const token = value.replace(/^(bearer|basic)\s+/i, '');
    for (const v of [value, token]) if (v.length >= 6) this.secrets.add(v);
  }
}

/**
 * Keeps the host's credentials (the upstream key the gateway adds) out of what goes
 * back to the agent, even if the upstream echoes them. Streams are scrubbed chunk by
 * chunk, holding back the few bytes that could be the start of a split secret.
 */
export class SecretScrub {
  private readonly secrets: string[];

  constructor(values: string[]) {
    const all = new Set<string>();
    for (const v of values) {
      const token = v.replace(/^(bearer|basic)\s+/i, '');
      for (const s of [v, token]) if (s.length >= 6) all.add(s);
    }
    // Longest first, so a full header value is replaced before the token inside it.
    this.secrets = [...all].sort((a, b) => b.length - a.length);
  }

  active(): boolean {
    return this.secrets.length > 0;
  }

  text(s: string): string {
    let out = s;
    for (const secret of this.secrets) if (out.includes(secret)) out = out.split(secret).join(REDACTED);
    return out;
  }

  /** Tells a log redactor the secrets too (a record never holds the host's key). */
  teach(redactor: Redactor): void {
    for (const s of this.secrets) redactor.secret(s);
  }

  /** A scrubber for one byte stream: push() each chunk and send what it returns; end() returns the rest. */
  stream(): { push(chunk: Buffer): Buffer; end(): Buffer } {
    const hold = Math.max(0, ...this.secrets.map((s) => Buffer.byteLength(s))) - 1;
    let pending = Buffer.alloc(0);
    const scrubBytes = (b: Buffer) => Buffer.from(this.text(b.toString('latin1')), 'latin1');
    return {
      push: (chunk) => {
        const all = scrubBytes(Buffer.concat([pending, chunk]));
        const cut = Math.max(0, all.length - hold);
        pending = all.subarray(cut);
        return all.subarray(0, cut);
      },
      end: () => {
        const rest = scrubBytes(pending);
        pending = Buffer.alloc(0);
        return rest;
      },
    };
  }
}
