/**
 * The freeze as a property, generated from the schema and the kind registry: for every step kind
 * and every field of its schema definition, a changed value changes the cohort's freeze (so a
 * run after the first observation is refused), unless the kind declares the field unfrozen --
 * and then it changes nothing. A new kind, or a new field of a kind, is covered with no new
 * test: a field for which no generated value loads fails here, naming itself.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml, stringify } from 'yaml';
import { loadProject } from '../cli/project.js';
import { cohortsOf } from '../cli/cohorts.js';
import { ALWAYS_UNFROZEN, describeFreezeChange, type Freeze } from '../pipeline/freeze.js';
import { builtinStepKinds } from '../steps/index.js';
import { checkFreeze, FREEZE_FORMAT, foldRecord } from '../steps/preregistration.js';
import { calculatorTask, git } from './fixtures.js';
import { Rig } from './rig.js';
import schema from '../schemas/bench.config.schema.json' with { type: 'json' };

type JsonSchema = {
  $ref?: string;
  type?: string | string[];
  enum?: unknown[];
  const?: unknown;
  properties?: Record<string, JsonSchema>;
  additionalProperties?: boolean | JsonSchema;
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  pattern?: string;
};
const DEFS = (schema as unknown as { definitions: Record<string, JsonSchema> }).definitions;

function resolve(s: JsonSchema): JsonSchema {
  let cur = s;
  while (cur.$ref) cur = DEFS[cur.$ref.replace('#/definitions/', '')]!;
  return cur;
}

/** Fields every kind has: the graph's shape, checked below on their own. */
const STRUCTURE = new Set(['kind', 'needs', 'matrix', 'tasks']);

let rig: Rig;
let commit: string;
let base: { steps: Record<string, Record<string, unknown>> } & Record<string, unknown>;
const ENV = { PATH: process.env['PATH'], CTX_TEXT: 'plain' };

beforeAll(() => {
  rig = new Rig();
  ({ commit } = calculatorTask(rig.dir));
  git(join(rig.dir, 'repos', 'calc'), 'commit', '-q', '--allow-empty', '-m', 'second');
  rig.write('fixtures/CLAUDE.md', 'Always use + in add().\n');
  rig.write('fixtures/OTHER.md', 'Something else.\n');
  rig.write('fixtures/CLAUDE2.md', 'Always use + in add(), please.\n');
  rig.write('generator.json', JSON.stringify({ turns: [], completions: [{ text: 'Use + in add().\n' }] }));
  rig.write('generator2.json', JSON.stringify({ turns: [], completions: [{ text: 'Another.\n' }] }));
  rig.write('prices.json', JSON.stringify({ source: 'a test', as_of: '2026-12-01', models: { m: { input: 1, output: 2, cache_write: 1, cache_read: 0.1 } } }));
  rig.write('judge.json', JSON.stringify({ turns: [], completions: [{ text: '{"classification":"b","reason":"same"}' }] }));
  // A fact only the memory holds: certify's memory_arms are read for tasks with facts.
  rig.write('tasks/fix-add/task.yaml', rig.read('tasks/fix-add/task.yaml') + 'facts: ["the sum uses plus"]\n');
  const m = { task: ['fix-add'], arm: ['control', 'treatment', 'generated', 'treatment-file', 'ablated'], rep: 2 };
  const sandbox = { backend: 'local', egress: 'open' };
  // One cohort holding a step of every kind upstream of its analysis (a pilot, its gate, a second stage), and an export.
  base = {
    steps: {
      ctx: { kind: 'command', cmd: 'printf "%s\\n" "$CTX_TEXT" > CLAUDE.md', outs: ['CLAUDE.md'], pass_env: ['CTX_TEXT'], deps: ['fixtures/CLAUDE.md'] },
      generate: { kind: 'context', repo: 'repos/calc', commit, prompt: 'Describe it.', model: { name: 'claude-fake-1', fake_script: 'generator.json' } },
      materialize: { kind: 'materialize', matrix: { task: ['fix-add'] } },
      certify: { kind: 'certify', needs: ['materialize', 'ctx', 'generate'], matrix: { task: ['fix-add'] }, sandbox, policy: { repeats: 1 } },
      attempts: {
        kind: 'run',
        needs: ['materialize', 'certify', 'ctx', 'generate'],
        matrix: m,
        agent: { adapter: 'command', command: 'true' },
        arms: {
          control: {},
          treatment: { files: { 'CLAUDE.md': { from: 'ctx', out: 'CLAUDE.md' } } },
          generated: { files: { 'CLAUDE.md': { from: 'generate', out: 'CLAUDE.md' } } },
          'treatment-file': { files: { 'CLAUDE.md': 'fixtures/CLAUDE.md' } },
          ablated: { ablate: { from: 'treatment-file', drop_lines: ['use \\+'] } },
        },
        sandbox,
      },
      verify: { kind: 'verify', needs: ['materialize', 'attempts'], matrix: m, sandbox },
      audit: { kind: 'audit', needs: ['attempts', 'verify'], matrix: m },
      judge: {
        kind: 'judge',
        needs: ['materialize', 'attempts', 'verify'],
        matrix: { task: ['fix-add'] },
        control: 'control',
        treatment: 'treatment',
        rubric: '(a) helped (b) no difference (c) hurt',
        model: { name: 'judge-fake-1', fake_script: 'judge.json' },
      },
      pilot: { kind: 'analyze', needs: ['audit', 'judge', 'generate'], control: 'control', treatments: ['treatment'], judge: 'judge' },
      gate: { kind: 'gate', needs: ['pilot'], analysis: 'pilot', require: { treatment: 'treatment', min_effect: 0 } },
      'attempts-2': {
        kind: 'run',
        needs: ['materialize', 'certify', 'gate'],
        matrix: { task: ['fix-add'], arm: ['rules'], rep: 2 },
        agent: { adapter: 'command', command: 'true' },
        arms: { rules: { files: { 'CLAUDE.md': 'fixtures/CLAUDE.md' } } },
        sandbox,
      },
      'verify-2': { kind: 'verify', needs: ['materialize', 'attempts-2'], matrix: { task: ['fix-add'], arm: ['rules'], rep: 2 }, sandbox },
      'audit-2': { kind: 'audit', needs: ['attempts-2', 'verify-2'], matrix: { task: ['fix-add'], arm: ['rules'], rep: 2 } },
      cohort: { kind: 'analyze', version: 1, needs: ['audit', 'audit-2'], control: 'control', treatments: ['treatment', 'rules'] },
      export: { kind: 'export', needs: ['materialize', 'attempts', 'verify', 'audit', 'cohort'] },
    },
  };
});
afterAll(() => rig.cleanup());

/** The cohort's freeze for a config, or the config's problems. */
async function freezeFor(config: unknown): Promise<{ ok: true; freeze: Freeze } | { ok: false; problem: string }> {
  const file = join(rig.dir, 'bench.config.yaml');
  writeFileSync(file, stringify(config));
  const loaded = await loadProject(file, join(rig.dir, '.pairbench'), ENV);
  if (!loaded.ok) return { ok: false, problem: loaded.error.map((d) => d.message).join('; ') };
  const cohort = cohortsOf(loaded.value.graph.nodes, loaded.value.inputs, ENV).find((c) => c.name === 'cohort');
  return cohort ? { ok: true, freeze: cohort.freeze } : { ok: false, problem: 'no cohort' };
}

function setAt(obj: Record<string, unknown>, path: readonly string[], value: unknown): void {
  let cur = obj;
  for (const p of path.slice(0, -1)) cur = (cur[p] ??= {}) as Record<string, unknown>;
  if (value === undefined) delete cur[path[path.length - 1]!];
  else cur[path[path.length - 1]!] = value;
}

function getAt(obj: unknown, path: readonly string[]): unknown {
  let cur = obj;
  for (const p of path) cur = cur && typeof cur === 'object' ? (cur as Record<string, unknown>)[p] : undefined;
  return cur;
}

/** A field of a kind's schema: its path in the step's spec and its schema. */
interface Field {
  path: string[];
  schema: JsonSchema;
}

/** Every leaf field of a definition, and one entry of each map (the entries present in `value`, or a new one). */
/** (An object the spec leaves out, with fields it requires, is one field: its values are whole objects.) */
function fieldsOf(s: JsonSchema, value: unknown, path: string[] = []): Field[] {
  const r = resolve(s);
  if (r.properties && value === undefined && path.length > 0 && ((r as { required?: string[] }).required ?? []).length) return [{ path, schema: r }];
  if (r.properties) {
    return Object.entries(r.properties).flatMap(([k, sub]) => (path.length === 0 && STRUCTURE.has(k) ? [] : fieldsOf(sub, getAt(value, [k]), [...path, k])));
  }
  if (r.additionalProperties && typeof r.additionalProperties === 'object' && resolve(r.additionalProperties).properties) {
    const keys = value && typeof value === 'object' ? Object.keys(value) : [];
    return keys.length ? keys.flatMap((k) => fieldsOf(r.additionalProperties as JsonSchema, getAt(value, [k]), [...path, k])) : [{ path, schema: r }];
  }
  return [{ path, schema: r }];
}

const STRING_SHAPES = ['changed-a', 'changed-b', 'CHANGED_A', 'CHANGED_B', 'changeda', 'changedb'];

/** A minimal value of a schema: an object with its required fields, each its first generated value. */
function minimal(s: JsonSchema, depth: number): unknown {
  const r = resolve(s);
  if (r.properties) {
    const out: Record<string, unknown> = {};
    for (const k of (r as { required?: string[] }).required ?? []) out[k] = candidates(r.properties[k]!, undefined, depth + 1)[0];
    return out;
  }
  return candidates(r, undefined, depth + 1)[0];
}

/** Values a field may take other than `current`, generated from its schema. */
function candidates(s: JsonSchema, current: unknown, depth = 0): unknown[] {
  const r = resolve(s);
  if (r.const !== undefined || depth > 3) return [];
  if (r.enum) return r.enum.filter((v) => v !== current);
  const alts = r.anyOf ?? r.oneOf;
  if (alts) return alts.flatMap((a) => candidates(a, current, depth));
  const types = Array.isArray(r.type) ? r.type : r.type ? [r.type] : r.properties ? ['object'] : [];
  const out: unknown[] = [];
  for (const t of types) {
    if (t === 'boolean') out.push(...(typeof current === 'boolean' ? [!current] : [true, false]));
    if (t === 'integer' || t === 'number') {
      const lo = r.minimum ?? (r.exclusiveMinimum !== undefined ? r.exclusiveMinimum + (t === 'integer' ? 1 : 0.01) : 0);
      const hi = r.maximum ?? (r.exclusiveMaximum !== undefined ? r.exclusiveMaximum - (t === 'integer' ? 1 : 0.01) : lo + 1000);
      const span = hi - lo;
      const picks = t === 'integer' ? [lo + 1, lo + 2, Math.floor(lo + span / 2)] : [lo + span * 0.3, lo + span * 0.6, lo + span * 0.9];
      for (const p of picks.map((x) => Number(x.toFixed(6)))) if (p !== current && p >= lo && p <= hi && !out.includes(p)) out.push(p);
    }
    if (t === 'string') {
      const re = r.pattern ? new RegExp(r.pattern) : undefined;
      const shapes = typeof current === 'string' ? [`${current}-changed`, `${current}2`, ...STRING_SHAPES] : STRING_SHAPES;
      out.push(...shapes.filter((x) => x !== current && (!re || re.test(x))).slice(0, 2));
    }
    if (t === 'array' && r.items) {
      const items = candidates(r.items, undefined, depth + 1).slice(0, 2);
      const now = Array.isArray(current) ? current : [];
      for (const i of items) out.push([...now, i]);
      if (now.length) out.push([]);
    }
    if (t === 'object' && r.properties) {
      // Its required fields, then each field in turn.
      const floor = (current && typeof current === 'object' ? current : minimal(r, depth)) as Record<string, unknown>;
      if (current === undefined) out.push(floor);
      for (const [k, sub] of Object.entries(r.properties)) for (const v of candidates(sub, floor[k], depth + 1).slice(0, 1)) out.push({ ...floor, [k]: v });
    }
    if (t === 'object' && !r.properties && r.additionalProperties && typeof r.additionalProperties === 'object') {
      const now = current && typeof current === 'object' ? current : {};
      for (const v of candidates(r.additionalProperties, undefined, depth + 1).slice(0, 2)) out.push({ ...now, NEW_KEY: v });
    }
  }
  return out;
}

/** The entry of a table keyed by `kind.path` (a `*` segment matches any one), for the field or the nearest object above it. */
function lookupTable<T>(table: Record<string, T>, id: string): T | undefined {
  const parts = id.split('.');
  for (let n = parts.length; n >= 2; n--) {
    const at = Object.entries(table).filter(([k]) => {
      const kp = k.split('.');
      return kp.length === n && kp.every((p, i) => p === '*' || p === parts[i]);
    });
    // The most specific entry: the fewest `*`.
    at.sort(([a], [b]) => a.split('*').length - b.split('*').length);
    if (at.length) return at[0]![1];
  }
  return undefined;
}

/**
 * Values the generator cannot make for a field that names something real (a file, a step, a
 * commit): kind.path -> values that load. A new field only needs one here when no generated
 * value loads, and the test says so.
 */
const EXAMPLES: Record<string, unknown[]> = {
  'command.deps': [['fixtures/CLAUDE.md', 'fixtures/OTHER.md'], ['fixtures/OTHER.md']],
  'command.outs': [['CLAUDE.md', 'OTHER.md']],
  'context.model.fake_script': ['generator2.json'],
  'context.subdir': ['src'],
  'run.model.fake_script': ['generator2.json'],
  'run.model.prices': ['prices.json'],
  'run.arms.*.files': [{ 'CLAUDE.md': 'fixtures/OTHER.md' }],
  'run.arms.treatment-file.files': [{ 'CLAUDE.md': 'fixtures/CLAUDE2.md' }],
  'run.arms.ablated.ablate.drop_lines': [['Always']],
  'judge.model.fake_script': ['generator2.json'],
  'judge.control': ['generated'],
  'judge.treatment': ['generated'],
  'analyze.control': ['generated'],
  'analyze.treatments': [['generated'], ['treatment', 'generated']],
  'analyze.overhead': [{ step: 'generate', out: 'cost.json' }],
  'analyze.comparisons': [[['generated', 'treatment']]],
  'analyze.factorial': [{ factors: ['graph'], levels: { control: { graph: 0 }, treatment: { graph: 1 } } }],
  'gate.require.treatment': ['control'],
  'gate.require.control': ['treatment'],
  'certify.policy.allow': [[{ path: 'README.md', class: 'solution-leak', reason: 'looked at it: a public example' }]],
};

/** Fields no value of which can load here, with why (each is still in its kind's key). */
const NOT_GENERATED: Record<string, string> = {
  'run.sandbox.image': 'an image ID, which the local backend refuses; the docker backend keys on it (sandbox-docker tests it with a real engine)',
  'verify.sandbox.image': 'as run.sandbox.image',
  'certify.sandbox.image': 'as run.sandbox.image',
  'run.sandbox.allow': 'an allowlist needs egress allowlist, which the local backend refuses; bubblewrap keys on it (egress-proxy tests it)',
  'run.sandbox.egress': 'the local backend runs egress open only, and refuses the rest at load; changing the backend (generated) changes the freeze',
  'verify.sandbox.egress': 'as run.sandbox.egress',
  'certify.sandbox.egress': 'as run.sandbox.egress',
  'verify.sandbox.allow': 'as run.sandbox.allow',
  'certify.sandbox.allow': 'as run.sandbox.allow',
  'run.arms.*.instructions':
    "the command adapter here reads no instruction file, so it is refused at load; with an agent that has one it is an entry of the arm's files, frozen as they are (agent-adapters delivers it)",
  'run.sandbox.host_paths': 'refused on a run step at load (it pins the verifier only)',
  'verify.sandbox.host_paths':
    'bubblewrap only, which this local-backend config refuses at load; verifier-host-paths tests that a declared path and its contents are frozen',
  'certify.sandbox.host_paths': 'as verify.sandbox.host_paths',
  'run.arms.*.ablate': 'an ablation needs the lines of an arm with its own file: the arm "ablated" has one and is checked',
  'run.arms.ablated.ablate.from': 'the only arm here with its own file is the one it ablates',
  'analyze.judge': 'the only judge step here is the one the pilot names',
  'gate.analysis': 'the only pilot here',
  'context.commit': 'the repository has one other commit, and a context step must stay on the task’s history; materialize freezes commits',
};

describe('the freeze, generated from the schema for every kind in the registry', () => {
  it('the base config has a step of every kind, and freezes', async () => {
    const kinds = new Set(Object.values(base.steps).map((s) => s['kind']));
    for (const k of builtinStepKinds.keys()) if (k !== 'environment') expect(kinds, `the base config has no ${k} step`).toContain(k);
    const f = await freezeFor(base);
    expect(f.ok, f.ok ? '' : f.problem).toBe(true);
  });

  for (const [kindName, kind] of builtinStepKinds) {
    if (kindName === 'environment') continue; // no field of its own: its image comes from the task's Dockerfile, frozen with the tree (materialize)
    it(`${kindName}: every field changes the freeze, unless the kind declares it unfrozen`, async () => {
      const baseline = await freezeFor(base);
      if (!baseline.ok) throw new Error(baseline.problem);
      const [stepName, spec] = Object.entries(base.steps).find(([, s]) => s['kind'] === kindName)!;
      const def = DEFS[`${kindName}Step`]!;
      const unfrozen = [...ALWAYS_UNFROZEN, ...(kind.unfrozen ?? [])];
      const problems: string[] = [];
      let checked = 0;
      for (const field of fieldsOf(def, spec)) {
        const dotted = field.path.join('.');
        const id = `${kindName}.${dotted}`;
        const isUnfrozen = unfrozen.some((u) => dotted === u || dotted.startsWith(`${u}.`));
        // A field an export reads presents the verdict, it does not make it: the export is downstream of the analysis.
        const downstream = kindName === 'export';
        const current = getAt(spec, field.path);
        const values = lookupTable(EXAMPLES, id) ?? candidates(field.schema, current);
        const loaded: { value: unknown; digest: string; fields: Record<string, string> }[] = [];
        const failures: string[] = [];
        for (const value of values) {
          const config = structuredClone(base);
          setAt(config.steps[stepName]!, field.path, value);
          const f = await freezeFor(config);
          if (f.ok) loaded.push({ value, digest: f.freeze.digest, fields: f.freeze.fields });
          else failures.push(`${JSON.stringify(value)}: ${f.problem.slice(0, 160)}`);
        }
        if (!loaded.length) {
          if (lookupTable(NOT_GENERATED, id) === undefined)
            problems.push(`${id}: no generated value loads (add values to EXAMPLES, or say in NOT_GENERATED why): ${failures.slice(0, 2).join(' | ')}`);
          continue;
        }
        checked++;
        if (isUnfrozen || downstream) {
          const moved = loaded.filter((l) => l.digest !== baseline.freeze.digest);
          if (moved.length) problems.push(`${id} is declared unfrozen but ${JSON.stringify(moved[0]!.value)} changed the freeze`);
          continue;
        }
        // Frozen: every value moves the freeze (one of the values of a field the base leaves out may be its default).
        const same = loaded.filter((l) => l.digest === baseline.freeze.digest).map((l) => JSON.stringify(l.value));
        if (same.length > (current === undefined ? 1 : 0) || same.length === loaded.length) {
          problems.push(`${id} is not frozen: ${same.join(', ')} left the freeze unchanged`);
          continue;
        }
        // And a bound version refuses it, naming the step.
        const changed = loaded.find((l) => l.digest !== baseline.freeze.digest)!;
        const record = foldRecord('cohort', [
          {
            seq: 1,
            at: '2026-01-01T00:00:00.000Z',
            prev: null,
            type: 'register',
            data: { version: 1, freeze_digest: baseline.freeze.digest, fields: baseline.freeze.fields, format: FREEZE_FORMAT },
            hash: 'r' as never,
          },
          { seq: 2, at: '2026-01-01T00:00:01.000Z', prev: 'r' as never, type: 'bind', data: { version: 1, by: 'observation cohort' }, hash: 'b' as never },
        ]);
        const check = checkFreeze(record, 1, { digest: changed.digest, fields: changed.fields } as Freeze);
        if (check.status !== 'refused') problems.push(`${id}: a bound version was not refused (${check.status})`);
        else if (
          !describeFreezeChange(baseline.freeze.fields, changed.fields).some(
            (c) => c.startsWith(stepName) || c.includes(`${stepName}[`) || c.includes(`${stepName}/`),
          )
        )
          problems.push(`${id}: the refusal does not name step ${stepName}: ${check.changes.slice(0, 3).join('; ')}`);
      }
      expect(problems, problems.join('\n')).toEqual([]);
      expect(checked).toBeGreaterThan(0);
    });
  }

  it('the graph fields every kind has: needs, the matrix (repetitions by their count), the task source', async () => {
    const baseline = await freezeFor(base);
    if (!baseline.ok) throw new Error(baseline.problem);
    const changes = async (mutate: (c: typeof base) => void): Promise<string[]> => {
      const c = structuredClone(base);
      mutate(c);
      const f = await freezeFor(c);
      if (!f.ok) throw new Error(f.problem);
      return describeFreezeChange(baseline.freeze.fields, f.freeze.fields);
    };
    // (verify reads its tasks' certify step whatever its needs say: the canary calibrations.)
    expect(await changes((c) => (c.steps['verify']!['needs'] = ['materialize', 'attempts', 'ctx']))).toContain(
      'verify: needs: ["attempts","certify","materialize"] -> ["attempts","certify","ctx","materialize"]',
    );
    const reps = await changes((c) => {
      for (const s of ['attempts', 'verify', 'audit']) (c.steps[s]!['matrix'] as { rep: number }).rep = 3;
    });
    expect(reps).toEqual(expect.arrayContaining(['attempts: matrix rep: 2 -> 3', 'verify: matrix rep: 2 -> 3', 'audit: matrix rep: 2 -> 3']));
    expect(reps.some((c) => c.startsWith('attempts: queue order'))).toBe(true);
    // A task source with other tasks: the prompt, the commit, the verifier all move.
    rig.write('tasks-b/fix-add/task.yaml', rig.read('tasks/fix-add/task.yaml').replace(/prompt: .*/, 'prompt: Something else entirely.'));
    for (const f of ['verifier/test_add.mjs', 'solution.patch']) rig.write(`tasks-b/fix-add/${f}`, rig.read(`tasks/fix-add/${f}`));
    const tasks = await changes((c) => (c.steps['attempts']!['tasks'] = 'tasks-b'));
    expect(tasks.some((x) => x.startsWith('attempts') && x.includes('task.prompt'))).toBe(true);
    // The description is never frozen.
    expect(await changes((c) => (c.steps['attempts']!['description'] = 'new words'))).toEqual([]);
  });

  it('the rep index folds out: the reps of one attempt are one group; their count is the matrix', async () => {
    const f = await freezeFor(base);
    if (!f.ok) throw new Error(f.problem);
    const keys = Object.keys(f.freeze.fields);
    expect(keys.some((k) => /\/[12]:/.test(k))).toBe(false);
    expect(f.freeze.fields['attempts: matrix rep']).toBe('2');
    // What differs between arms is named by the arm; what every node shares, by the step.
    expect(keys).toContain('attempts[arm=treatment]: arm.files.CLAUDE.md.from');
    expect(keys).toContain('attempts: limits.turns');
    expect(parseYaml(stringify(base))).toEqual(base);
  });
});
