/**
 * Delivery evidence: a marker (e.g. the CLAUDE.md text) counts as delivered when it occurs in
 * what the model actually received. Strings are compared JSON-decoded, so escaping in the
 * request body (newlines, quotes, unicode) does not hide a match.
 */

export function markersFound(body: unknown, markers: Record<string, string>): string[] {
  const names = Object.keys(markers);
  if (names.length === 0) return [];
  const strings: string[] = [];
  collectStrings(body, strings);
  return names.filter((name) => {
    const text = markers[name];
    return text !== undefined && text !== '' && strings.some((s) => s.includes(text));
  });
}

function collectStrings(value: unknown, out: string[]): void {
  if (typeof value === 'string') out.push(value);
  else if (Array.isArray(value)) for (const v of value) collectStrings(v, out);
  else if (typeof value === 'object' && value !== null) for (const v of Object.values(value)) collectStrings(v, out);
}
