// Project memory over MCP (stdio): one tool, `recall`, answers from the frozen
// memory graph restored at .stele/graph.json. Each answer is also left in
// $HOME/.tool-answers/ so that a replayed, scripted model (which cannot read a
// tool result) can act on what the tool told it.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

const graph = JSON.parse(readFileSync('.stele/graph.json', 'utf8'));
const send = (m) => process.stdout.write(JSON.stringify(m) + '\n');

const TOOLS = [
  {
    name: 'recall',
    description: 'Recall what this project remembers (decisions, conventions, file boundaries) about a topic.',
    inputSchema: { type: 'object', properties: { query: { type: 'string', description: 'words to look for' } }, required: ['query'] },
  },
];

function recall(query) {
  const words = String(query).toLowerCase().split(/\W+/).filter((w) => w.length > 2);
  const notes = graph.nodes.filter((n) => n.text && words.some((w) => `${n.kind} ${n.id} ${n.text}`.toLowerCase().includes(w)));
  if (notes.length === 0) return `No memory matches "${query}".`;
  return notes.map((n) => `- [${n.kind}, session ${n.session}] ${n.text}`).join('\n');
}

function keep(tool, text) {
  const dir = join(process.env.HOME ?? '/tmp', '.tool-answers');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, `${tool}.txt`), text + '\n');
}

for await (const line of createInterface({ input: process.stdin })) {
  if (!line.trim()) continue;
  const msg = JSON.parse(line);
  if (msg.method === 'initialize') {
    send({ jsonrpc: '2.0', id: msg.id, result: { protocolVersion: msg.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'stele', version: '1.0.0' } } });
  } else if (msg.method === 'tools/list') {
    send({ jsonrpc: '2.0', id: msg.id, result: { tools: TOOLS } });
  } else if (msg.method === 'tools/call') {
    const text = msg.params.name === 'recall' ? recall(msg.params.arguments?.query ?? '') : `unknown tool ${msg.params.name}`;
    keep(msg.params.name, text);
    send({ jsonrpc: '2.0', id: msg.id, result: { content: [{ type: 'text', text }] } });
  } else if (msg.id !== undefined) {
    send({ jsonrpc: '2.0', id: msg.id, result: {} });
  }
}
