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
