/**
 * A small stand-in for GitHub's runner (the action's test and the pull-request job bench), enough to run a composite action's steps as CI would:
 * each `run:` step in order, by `bash --noprofile --norc -eo pipefail`, in its working
 * directory, with its `env:` and the runner's files (GITHUB_OUTPUT per step, GITHUB_PATH,
 * GITHUB_STEP_SUMMARY), its `if:` and every `${{ }}` evaluated against a context the test
 * gives. An expression the evaluator does not know is an error, never an empty string: a new
 * expression in the action fails the test until the context holds it. `uses:` steps are done
 * by the handlers the test gives (a cache, an artifact upload), by name.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { globSync } from 'tinyglobby';
import { childrenCpuMs } from './measure.js';

export interface ActionStep {
  id?: string;
  if?: string;
  uses?: string;
  with?: Record<string, string>;
  run?: string;
  shell?: string;
  env?: Record<string, string>;
  'working-directory'?: string;
}

export interface CompositeAction {
  inputs: Record<string, { default?: string }>;
  outputs: Record<string, { value: string }>;
  runs: { using: string; steps: ActionStep[] };
}

export type Value = string | number | boolean | null | undefined | { [k: string]: Value };

/** GitHub's expression functions the action uses: format, and hashFiles over `workspace`. */
export function expressionFunctions(workspace: string): Record<string, (...args: Value[]) => Value> {
  return {
    format: (template, ...args) => String(template).replace(/\{(\d+)\}/g, (_, i: string) => String(args[Number(i)] ?? '')),
    // The SHA-256 of each matched file's SHA-256, in path order; '' when nothing matches (as GitHub's).
    hashFiles: (...patterns) => {
      const files = globSync(patterns.map(String), { cwd: workspace, ignore: ['**/node_modules/**', '**/.git/**'] }).sort();
      if (!files.length) return '';
      const all = createHash('sha256');
      for (const f of files)
        all.update(
          createHash('sha256')
            .update(readFileSync(join(workspace, f)))
            .digest(),
        );
      return all.digest('hex');
    },
  };
}

/** Evaluates a GitHub expression: property paths, 'strings', numbers, true/false/null, ==, !=, !, &&, ||, parentheses, function calls. */
export function evaluate(expr: string, context: Record<string, Value>, functions: Record<string, (...args: Value[]) => Value> = {}): Value {
  const tokens = expr.match(/'(?:[^']|'')*'|&&|\|\||==|!=|!|\(|\)|,|[A-Za-z_][\w-]*(?:\.[\w-]+)*|\d+(?:\.\d+)?|\S/g) ?? [];
  let i = 0;
  const peek = () => tokens[i];
  const next = () => tokens[i++];
  const truthy = (v: Value) => Boolean(v) && v !== 0;
  function primary(): Value {
    const t = next();
    if (t === undefined) throw new Error(`expression ends early: ${expr}`);
    if (t === '(') {
      const v = or();
      if (next() !== ')') throw new Error(`missing ) in ${expr}`);
      return v;
    }
    if (t === '!') return !truthy(primary());
    if (t.startsWith("'")) return t.slice(1, -1).replaceAll("''", "'");
    if (/^\d/.test(t)) return Number(t);
    if (t === 'true' || t === 'false') return t === 'true';
    if (t === 'null') return null;
    if (!/^[A-Za-z_]/.test(t)) throw new Error(`unexpected ${t} in ${expr}`);
    if (peek() === '(') {
      const fn = functions[t];
      if (!fn) throw new Error(`unknown function ${t} in ${expr}`);
      next();
      const args: Value[] = [];
      while (peek() !== ')') {
        args.push(or());
        if (peek() === ',') next();
        else if (peek() !== ')') throw new Error(`expected , or ) in ${expr}`);
      }
      next();
      return fn(...args);
    }
    const [root, ...path] = t.split('.');
    if (!Object.hasOwn(context, root!)) throw new Error(`unknown context ${root} in ${expr}`);
    let v: Value = context[root!];
    for (const p of path) v = v !== null && typeof v === 'object' ? v[p] : undefined;
    return v;
  }
  function cmp(): Value {
    const left = primary();
    if (peek() === '==' || peek() === '!=') {
      const op = next();
      const right = primary();
      const eq = String(left ?? '') === String(right ?? '');
      return op === '==' ? eq : !eq;
    }
    return left;
  }
  /** A left-associative chain of `op` over `operand`: && keeps the right side when the left is truthy, || the left. */
  function chain(op: '&&' | '||', operand: () => Value): Value {
    let v = operand();
    while (peek() === op) {
      next();
      const r = operand();
      v = truthy(v) === (op === '&&') ? r : v;
    }
    return v;
  }
  const and = () => chain('&&', cmp);
  const or = (): Value => chain('||', and);
  const v = or();
  if (i !== tokens.length) throw new Error(`unexpected ${tokens[i]} in ${expr}`);
  return v;
}

/** A string with each ${{ }} replaced by its value ('' for null or undefined, as GitHub does). */
export function interpolate(text: string, context: Record<string, Value>, functions: Record<string, (...args: Value[]) => Value> = {}): string {
  return text.replace(/\$\{\{\s*([\s\S]*?)\s*\}\}/g, (_, e: string) => {
    const v = evaluate(e, context, functions);
    return v === null || v === undefined ? '' : String(v);
  });
}

export interface StepResult {
  step: ActionStep;
  skipped: boolean;
  code: number;
  output: string;
  outputs: Record<string, string>;
  /** The step's wall time and the CPU of the processes it ran, in ms (0 for a skipped or `uses:` step). */
  wallMs: number;
  cpuMs: number;
}

export interface JobOptions {
  action: CompositeAction;
  actionPath: string;
  workspace: string;
  inputs: Record<string, string>;
  github: Record<string, Value>;
  /** The runner's own environment (PATH, HOME, the GitHub variables). */
  env: Record<string, string>;
  runnerTemp: string;
  uses: Record<string, (w: Record<string, string>) => void>;
}

function runBash(script: string, cwd: string, env: Record<string, string>): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    const child = spawn('bash', ['--noprofile', '--norc', '-eo', 'pipefail', '-c', script], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.on('close', (code) => resolve({ code: code ?? 1, output }));
  });
}

/** Runs the action's steps in order; a failed step skips the rest unless its `if:` says otherwise (none here do). */
export async function runCompositeAction(o: JobOptions): Promise<StepResult[]> {
  mkdirSync(o.runnerTemp, { recursive: true });
  const files = { path: join(o.runnerTemp, '_path'), summary: join(o.runnerTemp, '_summary.md') };
  writeFileSync(files.path, '');
  writeFileSync(files.summary, '');
  const inputs = Object.fromEntries(Object.entries(o.action.inputs).map(([k, v]) => [k, o.inputs[k] ?? v.default ?? '']));
  const steps: Record<string, { outputs: Record<string, string> }> = {};
  const functions = expressionFunctions(o.workspace);
  const results: StepResult[] = [];
  let failed = false;
  for (const step of o.action.runs.steps) {
    const context: Record<string, Value> = {
      github: o.github,
      runner: { temp: o.runnerTemp, os: 'Linux' },
      inputs: Object.fromEntries(Object.entries(inputs).map(([k, v]) => [k, interpolate(v, { github: o.github })])),
      steps: steps as unknown as Value,
    };
    const expand = (text: string) => interpolate(text, context, functions);
    const run = !failed && (step.if === undefined || Boolean(evaluate(step.if.replace(/^\$\{\{([\s\S]*)\}\}$/, '$1'), context, functions)));
    if (!run) {
      results.push({ step, skipped: true, code: 0, output: '', outputs: {}, wallMs: 0, cpuMs: 0 });
      continue;
    }
    if (step.uses) {
      const name = step.uses.replace(/@.*$/, '');
      const handler = o.uses[name];
      if (!handler) throw new Error(`no stand-in for uses: ${step.uses}`);
      handler(Object.fromEntries(Object.entries(step.with ?? {}).map(([k, v]) => [k, expand(String(v))])));
      results.push({ step, skipped: false, code: 0, output: '', outputs: {}, wallMs: 0, cpuMs: 0 });
      continue;
    }
    const outputFile = join(o.runnerTemp, `_output_${results.length}`);
    writeFileSync(outputFile, '');
    const added = readFileSync(files.path, 'utf8').split('\n').filter(Boolean).reverse();
    const env = {
      ...o.env,
      ...Object.fromEntries(Object.entries(step.env ?? {}).map(([k, v]) => [k, expand(String(v))])),
      PATH: [...added, o.env['PATH'] ?? ''].join(':'),
      RUNNER_TEMP: o.runnerTemp,
      GITHUB_ACTION_PATH: o.actionPath,
      GITHUB_WORKSPACE: o.workspace,
      GITHUB_OUTPUT: outputFile,
      GITHUB_PATH: files.path,
      GITHUB_STEP_SUMMARY: files.summary,
    };
    const wd = step['working-directory'] ? expand(step['working-directory']) : '.';
    const cpu0 = childrenCpuMs();
    const t0 = performance.now();
    const r = await runBash(expand(step.run!), isAbsolute(wd) ? wd : join(o.workspace, wd), env);
    const wallMs = performance.now() - t0;
    const cpuMs = childrenCpuMs() - cpu0;
    const outputs = Object.fromEntries(
      readFileSync(outputFile, 'utf8')
        .split('\n')
        .filter((l) => l.includes('='))
        .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
    );
    if (step.id) steps[step.id] = { outputs };
    results.push({ step, skipped: false, code: r.code, output: r.output, outputs, wallMs, cpuMs });
    if (r.code !== 0) failed = true;
  }
  return results;
}

/** The job summary the steps wrote. */
export const summaryOf = (runnerTemp: string) => readFileSync(join(runnerTemp, '_summary.md'), 'utf8');
