import type { IncomingMessage } from 'node:http';

/** Reads a whole request body (model requests are small enough to hold: the gateway must inspect them). */
export function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => resolve(Buffer.concat(parts)));
    req.on('error', reject);
  });
}

/** The decoded JSON, or the text itself when it is not JSON (an empty body is `null`). */
export function decodeBody(buf: Buffer): unknown {
  if (buf.length === 0) return null;
  const text = buf.toString('utf8');
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
