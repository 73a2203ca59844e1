// A code graph of the workspace's JavaScript modules, served over MCP (stdio).
// It indexes every .mjs/.js file (imports with their aliases, exports, functions
// and the calls inside them) and answers four questions: the call flow from a
// function, every reference to a symbol, the test files that reach a symbol's
// module, and a module's exports. Each answer is also left in $HOME/.tool-answers/
// so that a replayed, scripted model (which cannot read a tool result) can act on
// what the tool told it.
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, posix } from 'node:path';
import { createInterface } from 'node:readline';

const ROOT = process.cwd();
const KEYWORDS = new Set(['if', 'for', 'while', 'switch', 'catch', 'function', 'return', 'typeof', 'await', 'new']);

function sourceFiles(dir = '') {
  const out = [];
  for (const name of readdirSync(join(ROOT, dir)).sort()) {
    if (name.startsWith('.') || name === 'node_modules' || name === 'dist') continue;
    const rel = dir ? `${dir}/${name}` : name;
    if (statSync(join(ROOT, rel)).isDirectory()) out.push(...sourceFiles(rel));
    else if (/\.m?js$/.test(name)) out.push(rel);
  }
  return out;
}

/** The index of `}` closing the `{` at `open` (strings and comments are rare enough here to ignore). */
function closing(text, open) {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    if (text[i] === '{') depth++;
    else if (text[i] === '}' && --depth === 0) return i;
  }
  return text.length;
}

function parseModule(file) {
  const text = readFileSync(join(ROOT, file), 'utf8');
  const imports = new Map(); // local name -> { module, name }
  for (const m of text.matchAll(/import\s*\{([^}]*)\}\s*from\s*['"]([^'"]+)['"]/g)) {
    if (!m[2].startsWith('.')) continue;
    const module = posix.normalize(posix.join(posix.dirname(file), m[2]));
    for (const part of m[1].split(',').map((s) => s.trim()).filter(Boolean)) {
      const [name, local] = part.split(/\s+as\s+/);
      imports.set((local ?? name).trim(), { module, name: name.trim() });
    }
  }
  const exports = [...text.matchAll(/export\s+(?:async\s+)?(?:function\s*\*?|const|let|class)\s+([A-Za-z_$][\w$]*)/g)].map((m) => m[1]);
  const functions = [];
  for (const m of text.matchAll(/(?:^|\n)\s*(?:export\s+)?(?:async\s+)?function\s*\*?\s*([A-Za-z_$][\w$]*)\s*\(/g)) {
    const open = text.indexOf('{', text.indexOf(')', m.index + m[0].length));
    functions.push({ name: m[1], start: open, end: closing(text, open) });
  }
  const inside = (i) => functions.find((f) => i > f.start && i < f.end);
  const calls = []; // { from: function name or '<module>', local, at }
  for (const m of text.matchAll(/(?<![\w$.])([A-Za-z_$][\w$]*)\s*\(/g)) {
    if (KEYWORDS.has(m[1]) || /function\s*\*?\s*$/.test(text.slice(Math.max(0, m.index - 20), m.index))) continue; // a declaration, not a call
    const owner = inside(m.index);
    calls.push({ from: owner ? owner.name : '<module>', local: m[1], at: m.index });
  }
  return { file, imports, exports, functions, calls };
}

const modules = new Map(sourceFiles().map((f) => [f, parseModule(f)]));
const isTest = (file) => /(^|\/)test\//.test(file) || /\.test\.m?js$/.test(file);

/** What a call of `local` inside `mod` reaches: { file, name } or null. */
function target(mod, local) {
  const imp = mod.imports.get(local);
  if (imp && modules.has(imp.module)) return { file: imp.module, name: imp.name };
  if (mod.functions.some((f) => f.name === local)) return { file: mod.file, name: local };
  return null;
}

function definitionOf(symbol) {
  for (const mod of modules.values()) if (mod.exports.includes(symbol)) return mod;
  for (const mod of modules.values()) if (mod.functions.some((f) => f.name === symbol)) return mod;
  return null;
}

function flow({ entry }) {
  const start = definitionOf(entry);
  if (!start) return `No function named ${entry}.`;
  const seen = new Set();
  const lines = [];
  const visit = (file, name) => {
    const key = `${file}#${name}`;
    if (seen.has(key)) return;
    seen.add(key);
    const mod = modules.get(file);
    for (const c of mod.calls.filter((x) => x.from === name).sort((a, b) => a.at - b.at)) {
      const t = target(mod, c.local);
      if (!t) continue;
      if (t.file !== start.file && !lines.includes(`${t.file}#${t.name}`)) lines.push(`${t.file}#${t.name}`);
      visit(t.file, t.name);
    }
  };
  visit(start.file, entry);
  return lines.length ? lines.join('\n') : `${entry} calls into no other module.`;
}

function refs({ symbol }) {
  const def = definitionOf(symbol);
  if (!def) return `No symbol named ${symbol}.`;
  const lines = [`defined: ${def.file}#${symbol}`];
  for (const mod of modules.values()) {
    for (const [local, imp] of mod.imports) {
      if (imp.module === def.file && imp.name === symbol) lines.push(`imported: ${mod.file}${local === symbol ? '' : ` as ${local}`}`);
    }
  }
  for (const mod of modules.values()) {
    const callers = new Set(mod.calls.filter((c) => { const t = target(mod, c.local); return t && t.file === def.file && t.name === symbol; }).map((c) => c.from));
    for (const from of callers) lines.push(`called: ${mod.file}#${from}`);
  }
  return lines.join('\n');
}

function tests({ symbol }) {
  const def = definitionOf(symbol);
  if (!def) return `No symbol named ${symbol}.`;
  const reaches = (file, seen = new Set()) => {
    if (file === def.file) return true;
    if (seen.has(file)) return false;
    seen.add(file);
    return [...(modules.get(file)?.imports.values() ?? [])].some((imp) => reaches(imp.module, seen));
  };
  const found = [...modules.keys()].filter((f) => isTest(f) && reaches(f));
  return found.length ? found.join('\n') : `No test file reaches ${def.file}.`;
}

function exportsOf({ file }) {
  const mod = modules.get(file);
  return mod ? mod.exports.join('\n') : `No module ${file}.`;
}

const TOOLS = {
  graph_flow: { run: flow, description: 'The functions (file#name) a function reaches, directly or through other modules, in the order the calls happen.', input: { entry: 'function name' } },
  graph_refs: { run: refs, description: 'Where a symbol is defined, every module importing it (with its alias) and every function calling it.', input: { symbol: 'symbol name' } },
  graph_tests: { run: tests, description: 'The test files that reach the module defining a symbol, directly or through other modules.', input: { symbol: 'symbol name' } },
  graph_exports: { run: exportsOf, description: 'The names a module exports.', input: { file: 'module path, e.g. src/x.mjs' } },
};

function keep(tool, args, text) {
  const dir = join(process.env.HOME ?? '/tmp', '.tool-answers');
  mkdirSync(dir, { recursive: true });
  const arg = String(Object.values(args ?? {})[0] ?? '').replace(/[^A-Za-z0-9._-]/g, '_');
  writeFileSync(join(dir, `${tool}.${arg}.txt`), text + '\n');
}

const send = (m) => process.stdout.write(JSON.stringify(m) + '\n');
for await (const line of createInterface({ input: process.stdin })) {
  if (!line.trim()) continue;
  const msg = JSON.parse(line);
  if (msg.method === 'initialize') {
    send({ jsonrpc: '2.0', id: msg.id, result: { protocolVersion: msg.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'graph', version: '1.0.0' } } });
  } else if (msg.method === 'tools/list') {
    const tools = Object.entries(TOOLS).map(([name, t]) => ({
      name,
      description: t.description,
      inputSchema: { type: 'object', properties: Object.fromEntries(Object.entries(t.input).map(([k, d]) => [k, { type: 'string', description: d }])), required: Object.keys(t.input) },
    }));
    send({ jsonrpc: '2.0', id: msg.id, result: { tools } });
  } else if (msg.method === 'tools/call') {
    const tool = TOOLS[msg.params.name];
    const text = tool ? tool.run(msg.params.arguments ?? {}) : `Unknown tool ${msg.params.name}.`;
    keep(msg.params.name, msg.params.arguments, text);
    send({ jsonrpc: '2.0', id: msg.id, result: { content: [{ type: 'text', text }] } });
  } else if (msg.id !== undefined) {
    send({ jsonrpc: '2.0', id: msg.id, result: {} });
  }
}
