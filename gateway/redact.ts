/** Keeps credentials out of recorded exchanges and log files. */
import { decodedVariants } from '../text/decode.js';

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
 * Keeps the host's credentials (the upstream key the gateway adds) out of what goes back to the
 * agent and into the log, even if the upstream echoes them: as written, inside a JSON string
 * whatever its escapes (values are scrubbed after parsing), in base64 or hex, or in anything the
 * fixed-point decoder recovers (base64 of gzip...). A compressed reply is decompressed first
 * (gateway.ts). An echo split across two SSE events is not joined (see the README).
 */
export class SecretScrub {
  private readonly secrets: string[];
  /** Substrings every base64 / base64url / hex encoding of a secret contains, at any alignment. */
  private readonly encodedForms: string[];

  constructor(values: string[]) {
    const all = new Set<string>();
    for (const v of values) {
      const token = v.replace(/^(bearer|basic)\s+/i, '');
      for (const s of [v, token]) if (s.length >= 6) all.add(s);
    }
    // Longest first, so a full header value is replaced before the token inside it.
    this.secrets = [...all].sort((a, b) => b.length - a.length);
    this.encodedForms = [...new Set(this.secrets.flatMap(encodedCores))].filter((f) => f.length >= 8).sort((a, b) => b.length - a.length);
  }

  active(): boolean {
    return this.secrets.length > 0;
  }

  /** The text with every literal or encoded copy replaced; a text that still decodes to one is replaced whole. */
  text(s: string): string {
    let out = s;
    for (const form of [...this.secrets, ...this.encodedForms]) if (out.includes(form)) out = out.split(form).join(REDACTED);
    return this.carries(out) ? REDACTED : out;
  }

  /** Whether any decoding of the text (to a fixed point) holds a secret. */
  carries(s: string): boolean {
    if (!this.active() || s.length < 6) return false;
    return decodedVariants(s).some((v) => this.secrets.some((secret) => v.text.includes(secret)));
  }

  /** A JSON value with every string scrubbed (after parsing, so no escape hides a secret). */
  json(value: unknown): unknown {
    if (typeof value === 'string') return this.text(value);
    if (Array.isArray(value)) return value.map((v) => this.json(v));
    if (typeof value !== 'object' || value === null) return value;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[this.text(k)] = this.json(v);
    return out;
  }

  /** A whole reply body: JSON scrubbed value by value (re-serialized only when something changed), else as text. */
  body(bytes: Buffer): Buffer {
    const text = bytes.toString('utf8');
    try {
      const parsed: unknown = JSON.parse(text);
      const scrubbed = this.json(parsed);
      return JSON.stringify(scrubbed) === JSON.stringify(parsed) ? bytes : Buffer.from(JSON.stringify(scrubbed));
    } catch {
      const out = text.replace(/\S+/g, (token) => this.text(token));
      return out === text ? bytes : Buffer.from(out);
    }
  }

  /** Tells a log redactor the secrets and their encoded forms (what the upstream sent is scrubbed with json() too). */
  teach(redactor: Redactor): void {
    for (const s of [...this.secrets, ...this.encodedForms]) redactor.secret(s);
  }

  /**
   * A scrubber for one SSE stream: push() each chunk and send what it returns; end() returns the
   * rest. Whole events are passed on (a secret never straddles what is sent); an event that holds
   * a secret in any form is rebuilt from its scrubbed fields.
   */
  events(): { push(chunk: Buffer): Buffer; end(): Buffer } {
    let pending = '';
    const decoder = new TextDecoder();
    const flush = (final: boolean): Buffer => {
      const out: string[] = [];
      for (;;) {
        const m = /\r\n\r\n|\n\n|\r\r/.exec(pending);
        if (!m) break;
        const block = pending.slice(0, m.index + m[0].length);
        pending = pending.slice(m.index + m[0].length);
        out.push(this.event(block));
      }
      if (final && pending) {
        out.push(this.event(pending));
        pending = '';
      }
      return Buffer.from(out.join(''));
    };
    return {
      push: (chunk) => {
        pending += decoder.decode(chunk, { stream: true });
        return flush(false);
      },
      end: () => {
        pending += decoder.decode();
        return flush(true);
      },
    };
  }

  private event(block: string): string {
    if (!this.carries(block) && !this.encodedForms.some((f) => block.includes(f))) return block;
    return block
      .split(/(\r\n|\r|\n)/)
      .map((part, i) => {
        if (i % 2 === 1 || !part.startsWith('data:')) return i % 2 === 1 ? part : this.text(part);
        const lead = part.startsWith('data: ') ? 'data: ' : 'data:';
        const data = part.slice(lead.length);
        try {
          return lead + JSON.stringify(this.json(JSON.parse(data)));
        } catch {
          return lead + this.text(data);
        }
      })
      .join('');
  }
}

/**
 * The parts of a value's base64 (standard and URL-safe) and hex encodings that do not depend on
 * what surrounds it: for each of the three byte alignments, the characters made only of its bytes.
 */
function encodedCores(secret: string): string[] {
  const bytes = Buffer.from(secret, 'utf8');
  const out = [bytes.toString('hex'), bytes.toString('hex').toUpperCase()];
  for (let shift = 0; shift < 3; shift++) {
    const b64 = Buffer.concat([Buffer.alloc(shift), bytes]).toString('base64');
    const core = b64.slice(Math.ceil((shift * 8) / 6), Math.floor(((shift + bytes.length) * 8) / 6));
    out.push(core, core.replace(/\+/g, '-').replace(/\//g, '_'));
  }
  return out;
}
