/**
 * Delivery evidence. A treatment counts as delivered only when the model received it
 * where the agent gives it to the model as an instruction, never merely somewhere in a
 * request: a README that quotes a line of the CLAUDE.md, read through a tool, is not
 * the CLAUDE.md delivered.
 *
 * A marker is a fingerprint of the treatment (up to three distinctive lines, all of
 * which must be present) and a scope:
 * - `instruction-file`: an instruction section naming the file: Claude Code's
 *   `<system-reminder>` "Contents of /work/CLAUDE.md (project instructions ...)", Codex's
 *   "# AGENTS.md instructions for /work";
 * - `tools`: a tool whose name starts with the prefix is offered (an MCP server arm);
 * - `prompt`: the user's own text (a prompt addition);
 * - `anywhere`: any string of the request (an agent with no defined instruction source).
 * Text is compared whitespace-folded and JSON-decoded.
 */
import { createHash } from 'node:crypto';

export type MarkerScope =
  { kind: 'instruction-file'; file: string } | { kind: 'tools'; prefix: string } | { kind: 'prompt' } | { kind: 'system' } | { kind: 'anywhere' };

export interface Marker {
  lines: string[];
  scope: MarkerScope;
}

/** Lines shorter than this do not fingerprint anything. */
const MIN_LINE = 12;
const MAX_LINES = 3;

/** Whitespace runs collapsed, trimmed. */
export function foldLine(s: string): string {
  return s.replace(/\s+/g, ' ').trim();
}

/** The fingerprint of a treatment's text: its first few distinctive lines. */
export function fingerprintLines(text: string): string[] {
  const out: string[] = [];
  for (const line of text.split('\n')) {
    const l = foldLine(line);
    if (l.length >= MIN_LINE && /\p{L}.*\p{L}/u.test(l) && !out.includes(l)) out.push(l);
    if (out.length === MAX_LINES) break;
  }
  return out;
}

/** SHA-256 of a folded line: what attempts record of their instruction sections (no text leaves the record). */
export function lineDigest(line: string): string {
  return createHash('sha256').update(foldLine(line)).digest('hex').slice(0, 32);
}

export function markersFound(body: unknown, markers: Record<string, Marker>): string[] {
  return Object.entries(markers)
    .filter(([, m]) => m.lines.length > 0 || m.scope.kind === 'tools')
    .filter(([, m]) => carries(body, m))
    .map(([name]) => name);
}

/**
 * The tool markers (MCP server arms) a request that offers tools does not carry: checked on an
 * attempt's first such request, the agent's first turn, whose tools the model plans with. A
 * server whose tools come later (it started late, or not at all) was not ready for this attempt.
 */
export function toolMarkersMissing(body: unknown, markers: Record<string, Marker>): string[] {
  return Object.entries(markers)
    .filter(([, m]) => m.scope.kind === 'tools' && !carries(body, m))
    .map(([name]) => name);
}

function carries(body: unknown, m: Marker): boolean {
  const all = (texts: string[]) => texts.some((t) => m.lines.every((l) => foldLine(t).includes(l)));
  const scope = m.scope;
  switch (scope.kind) {
    case 'tools':
      return toolNames(body).some((n) => n.startsWith(scope.prefix));
    case 'instruction-file':
      return all(instructionSections(body, scope.file));
    case 'prompt':
      return all(userTexts(body));
    case 'system':
      return all(systemTexts(body));
    case 'anywhere': {
      const strings: string[] = [];
      collectStrings(body, strings);
      return all(strings);
    }
  }
}

/** Digests of every line of every instruction section of a request (for the cross-arm check). */
export function instructionLineDigests(body: unknown): string[] {
  const out = new Set<string>();
  for (const section of instructionSections(body, null)) {
    for (const line of section.split('\n')) if (foldLine(line).length >= MIN_LINE) out.add(lineDigest(line));
  }
  return [...out];
}

/**
 * Text blocks where an agent hands the model an instruction file: a system or user text
 * (never a tool result) that names it as Claude Code, Codex, Qwen Code, Gemini CLI or OpenCode do. `file` null: any file.
 */
function instructionSections(body: unknown, file: string | null): string[] {
  const name = file === null ? '[^\\s/]+' : escapeRegExp(file);
  const header = new RegExp(
    `Contents of \\S*/${name}\\b|# ${name} instructions for |--- Context from: (?:\\S*/)?${name} ---|Instructions from: \\S*/${name}\\b`,
  );
  return [...systemTexts(body), ...userTexts(body)].filter((t) => header.test(t));
}

function systemTexts(body: unknown): string[] {
  if (!isObject(body)) return [];
  const out: string[] = [];
  const s = body['system'] ?? body['instructions'];
  if (typeof s === 'string') out.push(s);
  else if (Array.isArray(s)) for (const b of s) if (isObject(b) && typeof b['text'] === 'string') out.push(b['text']);
  // Gemini: systemInstruction {parts: [{text}]}.
  const g = body['systemInstruction'];
  if (isObject(g) && Array.isArray(g['parts'])) for (const p of g['parts']) if (isObject(p) && typeof p['text'] === 'string') out.push(p['text']);
  return out;
}

/** Text the user side wrote (Anthropic messages, OpenAI input items, Gemini contents), not tool results. */
function userTexts(body: unknown): string[] {
  if (!isObject(body)) return [];
  const out: string[] = [];
  if (Array.isArray(body['contents'])) {
    for (const c of body['contents']) {
      if (!isObject(c) || c['role'] !== 'user' || !Array.isArray(c['parts'])) continue;
      for (const p of c['parts']) if (isObject(p) && typeof p['text'] === 'string') out.push(p['text']);
    }
  }
  const items = Array.isArray(body['messages']) ? body['messages'] : Array.isArray(body['input']) ? body['input'] : [];
  for (const msg of items) {
    if (!isObject(msg) || (msg['role'] !== 'user' && msg['role'] !== 'system' && msg['role'] !== 'developer')) continue;
    const content = msg['content'];
    if (typeof content === 'string') out.push(content);
    else if (Array.isArray(content)) {
      for (const b of content) if (isObject(b) && (b['type'] === 'text' || b['type'] === 'input_text') && typeof b['text'] === 'string') out.push(b['text']);
    }
  }
  return out;
}

/** The tools a request offers, by name: Anthropic's and the Responses API's {name}, Chat Completions' {function: {name}}, Gemini's {functionDeclarations: [{name}]}. */
export function toolNames(body: unknown): string[] {
  if (!isObject(body) || !Array.isArray(body['tools'])) return [];
  const named = (x: unknown): string[] => (isObject(x) && typeof x['name'] === 'string' ? [x['name']] : []);
  return body['tools'].flatMap((t) =>
    !isObject(t)
      ? []
      : Array.isArray(t['functionDeclarations'])
        ? t['functionDeclarations'].flatMap(named)
        : isObject(t['function'])
          ? named(t['function'])
          : t['type'] === 'namespace' && Array.isArray(t['tools'])
            ? // OpenAI Responses namespaces (Codex's MCP servers): each tool as <namespace>__<tool>, Codex's own qualified name.
              t['tools'].flatMap(named).map((n) => `${String(t['name'])}__${n}`)
            : named(t),
  );
}

function collectStrings(value: unknown, out: string[]): void {
  if (typeof value === 'string') out.push(value);
  else if (Array.isArray(value)) for (const v of value) collectStrings(v, out);
  else if (typeof value === 'object' && value !== null) for (const v of Object.values(value)) collectStrings(v, out);
}

function isObject(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
