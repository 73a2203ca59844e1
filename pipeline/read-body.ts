import type { Readable } from 'node:stream';

/**
 * Reads a whole message body (an HTTP request or response). Past `maxBytes` the stream is
 * destroyed and the promise rejects: a peer that is not trusted is not trusted to send a
 * small body either.
 */
export async function readBody(stream: Readable, maxBytes = Infinity): Promise<Buffer> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    size += (chunk as Buffer).length;
    if (size > maxBytes) {
      stream.destroy();
      throw new Error(`the answer is larger than ${maxBytes} bytes`);
    }
    parts.push(chunk as Buffer);
  }
  return Buffer.concat(parts);
}
