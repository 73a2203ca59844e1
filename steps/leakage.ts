import { basename } from 'node:path';
import type { AtifTrajectory } from '../agents/adapter.js';
import type { LeakageFlag } from '../stats/types.js';
import { distinctiveVerifierLines } from './certify/scan.js';
import type { Task } from './task.js';

/**
 * Trajectory leakage: what an attempt saw or did that it must not have. The whole
 * trajectory is read, not only tool-call arguments:
 * - what the agent sent: tool arguments (from the ATIF trajectory and from the
 *   model's replies as the gateway recorded them, streamed text reassembled);
 * - what it was told: tool results (an MCP server answering with the hidden test) in
 *   the requests the gateway forwarded;
 * - what the model wrote: its text, reassembled from the stream, so a canary split
 *   across two chunks is one string again;
 * - what a `command` agent printed (agent.log), for adapters without a trajectory.
 * Commands are normalised before they are matched: quotes and backslashes dropped,
 * simple shell variables expanded, paths collapsed, base64 words decoded, so
 * `d=/ver; ls ${d}ifier` is a probe of /verifier. A glob that can only mean a hidden
 * file (`find / -name check.m*`) is one too.
 */

export interface LeakageInputs {
  task: Task;
  trajectory: Pick<AtifTrajectory, 'steps'>;
  /** gateway.jsonl: one exchange record per line. */
  gatewayLog: string;
  /** agent.log: what the agent process printed. */
  agentLog: string;
  /** The hidden verifier files (their contents must never reach the agent). */
  hiddenFiles: { path: string; text: string }[];
}

const HISTORY = /\bgit\s+(log|show|reflog|rev-list|blame|checkout|cat-file|fetch)\b|\.git\/|\bgit\s+diff\s+HEAD~/;
const EVIDENCE_MAX = 200;

interface Text {
  where: string;
  text: string;
}

export function scanLeakage(inputs: LeakageInputs): LeakageFlag[] {
  const { task } = inputs;
  const hiddenPaths = hiddenPathsOf(task);
  const hiddenNames = inputs.hiddenFiles.map((f) => basename(f.path)).filter((n) => n.length >= 6);
  const hiddenLines = distinctiveVerifierLines(inputs.hiddenFiles);
  const flags = new Map<string, LeakageFlag>();
  const flag = (f: LeakageFlag) => {
    const key = `${f.kind}\0${f.evidence}`;
    if (!flags.has(key)) flags.set(key, { ...f, evidence: f.evidence.slice(0, EVIDENCE_MAX) });
  };
  const exchanges = parseExchanges(inputs.gatewayLog);

  // What the agent did: every tool call, as the trajectory and as the model's replies carried it.
  const calls: Text[] = [
    ...inputs.trajectory.steps.flatMap((s) =>
      (s.tool_calls ?? []).map((c) => ({ where: `trajectory step ${s.step_id} (${c.function_name})`, text: argumentText(c.arguments) })),
    ),
    ...exchanges.flatMap((e) => e.toolCalls),
  ];
  for (const c of calls) {
    const probe = probedPath(c.text, hiddenPaths) ?? probedName(c.text, hiddenNames);
    if (probe) flag({ kind: 'hidden-path', where: c.where, evidence: `${probe}: ${c.text}` });
    if (HISTORY.test(c.text)) flag({ kind: 'version-history', where: c.where, evidence: c.text });
  }

  // What reached the model or came out of it: tool results, its own text, the agent's output.
  const seen: Text[] = [
    ...calls,
    ...inputs.trajectory.steps.flatMap((s) =>
      (s.observation?.results ?? []).map((r) => ({ where: `trajectory step ${s.step_id} (tool result)`, text: String(r.content ?? '') })),
    ),
    ...exchanges.flatMap((e) => [...e.toolResults, ...e.modelText]),
    ...(inputs.agentLog ? [{ where: 'agent output (agent.log)', text: inputs.agentLog }] : []),
  ];
  const canary = task.canary?.trim();
  for (const t of seen) {
    if (canary && foldForMatch(t.text).includes(foldForMatch(canary))) flag({ kind: 'canary', where: t.where, evidence: 'the task canary' });
  }
  // The hidden test's own lines, in anything the agent was shown (tool results, its output).
  const shown = [
    ...exchanges.flatMap((e) => e.toolResults),
    ...inputs.trajectory.steps.flatMap((s) =>
      (s.observation?.results ?? []).map((r) => ({ where: `trajectory step ${s.step_id} (tool result)`, text: String(r.content ?? '') })),
    ),
    ...(inputs.agentLog ? [{ where: 'agent output (agent.log)', text: inputs.agentLog }] : []),
  ];
  for (const t of shown) {
    const folded = foldForMatch(t.text);
    const line = hiddenLines.find((l) => folded.includes(foldForMatch(l)));
    if (line) flag({ kind: 'hidden-content', where: t.where, evidence: `a line of the hidden verifier: ${line}` });
  }
  return [...flags.values()];
}

/** Paths that only a hidden part of the task lives at (the verifier's mount and files, Harbor's /tests, the solution). */
function hiddenPathsOf(task: Task): string[] {
  const hidden = ['/verifier', 'VERIFIER_DIR', '/logs/verifier'];
  if (task.verifier.filesDir) hidden.push(task.verifier.filesDir);
  if (task.verifier.result === 'reward-file') hidden.push('/tests/', '/tests ', '/solution');
  if (task.solution.script) hidden.push(task.solution.script);
  if (task.solution.patch) hidden.push(`${task.dir}/solution`);
  return hidden;
}

/** A tool call's arguments as the text a shell or a file tool would act on: every string in them, one per line. */
function argumentText(args: unknown): string {
  if (typeof args === 'string') {
    try {
      return argumentText(JSON.parse(args) as unknown); // OpenAI sends arguments as a JSON string
    } catch {
      return args;
    }
  }
  const out: string[] = [];
  const visit = (v: unknown): void => {
    if (typeof v === 'string') out.push(v);
    else if (Array.isArray(v)) v.forEach(visit);
    else if (typeof v === 'object' && v !== null) Object.values(v).forEach(visit);
  };
  visit(args);
  return out.join('\n');
}

/** The hidden path a command reaches, by any spelling the shell resolves to it. */
function probedPath(command: string, hidden: string[]): string | undefined {
  for (const form of spellings(command)) {
    const found = hidden.find((h) => form.includes(h));
    if (found) return `reaches ${found.trim()}`;
  }
  return undefined;
}

/**
 * A glob or partial name whose literal part can only be a hidden file's name: at least
 * six characters and half the name (`check.m*` for check.mjs; `test_*` is not enough).
 */
function probedName(command: string, names: string[]): string | undefined {
  for (const form of spellings(command)) {
    for (const word of form.split(/[\s;|&()<>=]+/)) {
      const literal = word.split(/[*?[]/)[0]!.split('/').pop()!;
      if (literal.length < 6 || literal === word.split('/').pop()) continue; // not a pattern
      const name = names.find((n) => n.startsWith(literal) && literal.length * 2 >= n.length);
      if (name) return `looks for the hidden file ${name} (${word})`;
    }
  }
  return undefined;
}

/** The command as written, and as the shell would read it: quotes and escapes gone, variables expanded, base64 decoded. */
function spellings(command: string): string[] {
  const unescaped = command.replace(/\\(.)/g, '$1');
  const unquoted = unescaped.replace(/["']/g, '');
  const vars = new Map<string, string>();
  for (const m of unquoted.matchAll(/(?:^|[\s;&|(])([A-Za-z_][A-Za-z0-9_]*)=([^\s;&|)]*)/g)) vars.set(m[1]!, m[2]!);
  let expanded = unquoted;
  for (let i = 0; i < 3; i++) expanded = expanded.replace(/\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?/g, (all, name: string) => vars.get(name) ?? all);
  const collapsed = expanded.replace(/\/(\.\/)+/g, '/').replace(/\/{2,}/g, '/');
  const decoded = [...collapsed.matchAll(/[A-Za-z0-9+/]{12,}={0,2}/g)]
    .map((m) => Buffer.from(m[0], 'base64').toString('utf8'))
    .filter((t) => /^[\x20-\x7e\n\t]+$/.test(t));
  return [command, unquoted, expanded, collapsed, ...decoded];
}

/** Text compared the way certify compares it: Unicode-normalised, invisible characters gone, whitespace folded. */
export function foldForMatch(s: string): string {
  return s
    .normalize('NFKC')
    .replace(/[\u200B-\u200D\u2060\uFEFF\u00AD]/g, '')
    .replace(/\s+/g, ' ')
    .trim();
}

interface Exchange {
  toolCalls: Text[];
  toolResults: Text[];
  modelText: Text[];
}

/** Each gateway record's tool calls and text (reassembled from the stream) and the tool results its request carried. */
function parseExchanges(gatewayLog: string): Exchange[] {
  const out: Exchange[] = [];
  gatewayLog.split('\n').forEach((line, i) => {
    if (!line.trim()) return;
    let r: unknown;
    try {
      r = JSON.parse(line);
    } catch {
      return;
    }
    if (!isObject(r)) return;
    const where = `gateway exchange ${i + 1}`;
    const ex: Exchange = { toolCalls: [], toolResults: [], modelText: [] };
    collectToolResults(r['request_body'], (text) => ex.toolResults.push({ where: `${where} (tool result sent to the model)`, text }));
    const events = r['response_events'];
    const reply = Array.isArray(events) ? reassemble(events.filter(isObject)) : replyOf(r['response_body']);
    for (const t of reply.text) ex.modelText.push({ where: `${where} (model text)`, text: t });
    for (const c of reply.calls) ex.toolCalls.push({ where: `${where} (tool call ${c.name})`, text: argumentText(c.input) });
    out.push(ex);
  });
  return out;
}

/** Tool results in a request: Anthropic tool_result blocks, OpenAI function_call_output items. */
function collectToolResults(body: unknown, add: (text: string) => void): void {
  if (!isObject(body)) return;
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(visit);
    if (!isObject(node)) return;
    if (node['type'] === 'tool_result') add(textOf(node['content']));
    if (node['type'] === 'function_call_output') add(textOf(node['output']));
    for (const v of Object.values(node)) if (typeof v === 'object') visit(v);
  };
  visit(body['messages'] ?? body['input']);
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map(textOf).join('\n');
  if (isObject(content)) return typeof content['text'] === 'string' ? content['text'] : JSON.stringify(content);
  return '';
}

/** A streamed reply, reassembled: each text block whole, each tool call's input whole. */
function reassemble(events: Record<string, unknown>[]): { text: string[]; calls: { name: string; input: string }[] } {
  const blocks = new Map<number, { type: string; name: string; text: string }>();
  const openai: { text: string[]; calls: { name: string; input: string }[] } = { text: [], calls: [] };
  let openaiDelta = '';
  for (const { data } of events) {
    if (!isObject(data)) continue;
    const type = data['type'];
    const index = typeof data['index'] === 'number' ? data['index'] : -1;
    if (type === 'content_block_start' && isObject(data['content_block'])) {
      const b = data['content_block'];
      blocks.set(index, { type: String(b['type']), name: String(b['name'] ?? ''), text: typeof b['text'] === 'string' ? b['text'] : '' });
    } else if (type === 'content_block_delta' && isObject(data['delta'])) {
      const b = blocks.get(index) ?? { type: 'text', name: '', text: '' };
      const d = data['delta'];
      b.text += typeof d['text'] === 'string' ? d['text'] : typeof d['partial_json'] === 'string' ? d['partial_json'] : '';
      blocks.set(index, b);
    } else if (type === 'response.output_text.delta' && typeof data['delta'] === 'string') {
      openaiDelta += data['delta'];
    } else if (type === 'response.output_item.done' && isObject(data['item'])) {
      const item = data['item'];
      if (item['type'] === 'function_call') openai.calls.push({ name: String(item['name'] ?? ''), input: String(item['arguments'] ?? '') });
      else openai.text.push(textOf(item['content']));
    }
  }
  const text = [...blocks.values()].filter((b) => b.type === 'text').map((b) => b.text);
  const calls = [...blocks.values()].filter((b) => b.type === 'tool_use').map((b) => ({ name: b.name, input: b.text }));
  return { text: [...text, ...openai.text, ...(openaiDelta ? [openaiDelta] : [])], calls: [...calls, ...openai.calls] };
}

/** A non-streamed reply's text and tool calls. */
function replyOf(body: unknown): { text: string[]; calls: { name: string; input: string }[] } {
  const out = { text: [] as string[], calls: [] as { name: string; input: string }[] };
  if (!isObject(body)) return out;
  const items = Array.isArray(body['content']) ? body['content'] : Array.isArray(body['output']) ? body['output'] : [];
  for (const b of items) {
    if (!isObject(b)) continue;
    if (b['type'] === 'text') out.text.push(String(b['text'] ?? ''));
    else if (b['type'] === 'tool_use') out.calls.push({ name: String(b['name'] ?? ''), input: JSON.stringify(b['input'] ?? {}) });
    else if (b['type'] === 'function_call') out.calls.push({ name: String(b['name'] ?? ''), input: String(b['arguments'] ?? '') });
    else if (b['type'] === 'message') out.text.push(textOf(b['content']));
  }
  return out;
}

function isObject(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}
