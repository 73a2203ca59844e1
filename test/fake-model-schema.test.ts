/**
 * schemas/fake-model.schema.json, the documented format of a scripted model, says what the
 * gateway's own check (parseFakeScript) says: every script a shipped config uses and the one
 * `init --fake-model` writes are valid under both, and each way of breaking a field that the
 * check refuses the schema refuses too.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { FAKE_MODEL_SCRIPT } from '../cli/init.js';
import { parseFakeScript } from '../gateway/fake-script.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const schema = JSON.parse(readFileSync(join(ROOT, 'schemas', 'fake-model.schema.json'), 'utf8')) as object;
const validate = new Ajv({ strict: true, allErrors: true }).compile(schema);

/** Every `fake_script` value in a config, wherever it is. */
function fakeScripts(value: unknown): string[] {
  if (Array.isArray(value)) return value.flatMap(fakeScripts);
  if (value && typeof value === 'object')
    return Object.entries(value).flatMap(([k, v]) => (k === 'fake_script' && typeof v === 'string' ? [v] : fakeScripts(v)));
  return [];
}

const configs = [
  'bench.config.yaml',
  ...readdirSync(join(ROOT, 'cohorts'))
    .filter((f) => f.endsWith('.yaml'))
    .map((f) => `cohorts/${f}`),
];
const shipped = [...new Set(configs.flatMap((c) => fakeScripts(parse(readFileSync(join(ROOT, c), 'utf8'))).map((s) => resolve(dirname(join(ROOT, c)), s))))];

describe('the scripted model format', () => {
  it('every shipped script and the one init writes are valid under the schema and the gateway check', () => {
    expect(shipped.length).toBeGreaterThan(3);
    for (const script of [...shipped.map((f) => JSON.parse(readFileSync(f, 'utf8')) as unknown), FAKE_MODEL_SCRIPT]) {
      expect(validate(script), JSON.stringify(validate.errors)).toBe(true);
      expect(parseFakeScript(script).ok).toBe(true);
    }
  });

  it('a script with every kind of fault is valid under both', () => {
    const script = {
      turns: [],
      faults: [
        { request: 1, status: 429, retry_after_seconds: 1 },
        { request: 2, status: 529 },
        { request: 3, stream_error: 'overloaded_error' },
        { request: 4, delay_ms: 100, pings: 2 },
      ],
    };
    expect(validate(script), JSON.stringify(validate.errors)).toBe(true);
    expect(parseFakeScript(script).ok).toBe(true);
  });

  it('a script with mcp actions and turns by task is valid under both', () => {
    const script = {
      turns: [],
      by_task: [
        {
          match: 'rename priceOf',
          turns: [
            {
              tool_calls: [
                { action: 'mcp', server: 'graph', tool: 'graph_refs', input: { symbol: 'priceOf' }, optional: true },
                { action: 'mcp', server: 'graph', tool: 'graph_flow' },
              ],
            },
          ],
        },
      ],
    };
    expect(validate(script), JSON.stringify(validate.errors)).toBe(true);
    expect(parseFakeScript(script).ok).toBe(true);
  });

  it('what the gateway check refuses, the schema refuses', () => {
    const turn = { text: 'x', tool_calls: [{ name: 'Bash', input: { command: 'ls' } }], usage: { input_tokens: 1, output_tokens: 1 } };
    const broken: unknown[] = [
      {},
      { turns: 'no' },
      { turns: [7] },
      { turns: [{ ...turn, text: 3 }] },
      { turns: [{ ...turn, tool_calls: {} }] },
      { turns: [{ ...turn, tool_calls: [{ name: '', input: {} }] }] },
      { turns: [{ ...turn, tool_calls: [{ name: 'Bash', input: 'ls' }] }] },
      { turns: [{ ...turn, usage: { input_tokens: -1, output_tokens: 1 } }] },
      { turns: [{ ...turn, usage: { output_tokens: 1 } }] },
      { turns: [{ ...turn, usage: { input_tokens: 1, output_tokens: 1, reasoning_tokens: 1.5 } }] },
      { turns: [{ tool_calls: [{ action: 'mcp', tool: 'graph_flow' }] }] },
      { turns: [{ tool_calls: [{ action: 'mcp', server: '', tool: 'graph_flow' }] }] },
      { turns: [{ tool_calls: [{ action: 'mcp', server: 'graph', tool: 'graph_flow', input: 'x' }] }] },
      { turns: [{ tool_calls: [{ action: 'mcp', server: 'graph', tool: 'graph_flow', optional: 'yes' }] }] },
      { turns: [], by_task: {} },
      { turns: [], by_task: [{ turns: [] }] },
      { turns: [], by_task: [{ match: 'x' }] },
      { turns: [], by_task: [{ match: 'x', turns: [7] }] },
      { turns: [], usage_from_request: 'yes' },
      { turns: [], completions: [{ match: 'x' }] },
      { turns: [], completions: [{ text: 'x', match: 3 }] },
      { turns: [], faults: {} },
      { turns: [], faults: [{ status: 429 }] },
      { turns: [], faults: [{ request: 0, status: 429 }] },
      { turns: [], faults: [{ request: 1, status: 200 }] },
      { turns: [], faults: [{ request: 1 }] },
      { turns: [], faults: [{ request: 1, status: 429, stream_error: 'api_error' }] },
      { turns: [], faults: [{ request: 1, stream_error: 'api_error', retry_after_seconds: 1 }] },
      { turns: [], faults: [{ request: 1, delay_ms: -1 }] },
      { turns: [], faults: [{ request: 1, status: 529, pings: 2 }] },
    ];
    for (const b of broken) {
      expect(parseFakeScript(b).ok, JSON.stringify(b)).toBe(false);
      expect(validate(b), JSON.stringify(b)).toBe(false);
    }
  });
});
