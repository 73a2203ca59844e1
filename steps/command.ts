import { closeSync, existsSync, mkdirSync, openSync, readSync } from 'node:fs';
import { dirname, isAbsolute, join, normalize } from 'node:path';
import type { Json } from '../pipeline/canonical-json.js';
import type { StepConfig } from '../pipeline/config/load.js';
import type { Diagnostic } from '../pipeline/diagnostic.js';
import { sha256 } from '../pipeline/digest.js';
import { err, ok } from '../pipeline/result.js';
import type { ExecutionContext, FileInputSpec, GraphNode, HostEnv, StepKind } from '../pipeline/step-kind.js';
import type { OutputManifest } from '../pipeline/store/action-cache.js';
import { runProcess } from '../sandboxes/exec-process.js';
import { artifact } from '../pipeline/artifact.js';
import { specOf, type SpecByKind } from './step-spec.js';

type CommandSpec = SpecByKind['command'];

const spec = (step: StepConfig): CommandSpec => specOf(step, 'command');

let platform: { os: string; arch: string; libc: string; node: string } | undefined;

/** os, arch, libc (glibc or musl) and Node major of this machine. */
export function platformOf(): { os: string; arch: string; libc: string; node: string } {
  if (!platform) {
    const libc = process.platform !== 'linux' ? 'system' : (libcOfInterpreter() ?? libcOfReport());
    platform = { os: process.platform, arch: process.arch, libc, node: process.versions.node.split('.')[0]! };
  }
  return platform;
}

/**
 * The C library Node runs on, from the dynamic loader its executable names (ld-linux / ld64 for
 * glibc, ld-musl for musl) in the first page of the file: a 4 KB read where process.report
 * builds a whole diagnostic report (~6 ms of every start). Undefined for a static binary.
 */
export function libcOfInterpreter(execPath = process.execPath): 'glibc' | 'musl' | undefined {
  let head: string;
  try {
    const fd = openSync(execPath, 'r');
    try {
      const buf = Buffer.alloc(4096);
      head = buf.toString('latin1', 0, readSync(fd, buf, 0, buf.length, 0));
    } finally {
      closeSync(fd);
    }
  } catch {
    return undefined;
  }
  if (!head.startsWith('\x7fELF')) return undefined;
  if (head.includes('/ld-musl-')) return 'musl';
  if (/\/ld-linux[-.]|\/ld64\.so\./.test(head)) return 'glibc';
  return undefined;
}

/** The same answer from Node's diagnostic report (its header names the glibc it runs on, if any). */
export function libcOfReport(): 'glibc' | 'musl' {
  const header = (process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)?.header;
  return header?.glibcVersionRuntime ? 'glibc' : 'musl';
}
const PLACEHOLDER = /\{\{\s*matrix\.([a-z][a-z0-9_]*)\s*\}\}/g;

function interpolate(text: string, matrix: Readonly<Record<string, string>>): string {
  return text.replace(PLACEHOLDER, (_, name: string) => matrix[name] ?? '');
}

function isInside(path: string): boolean {
  return !isAbsolute(path) && !normalize(path).split(/[\\/]/).includes('..');
}

function checkPlaceholders(step: StepConfig, text: string, field: (string | number)[]): Diagnostic[] {
  const dims = new Set(step.matrix.map((d) => d.name));
  const out: Diagnostic[] = [];
  for (const m of text.matchAll(PLACEHOLDER)) {
    if (!dims.has(m[1]!)) {
      out.push({
        field: `steps.${step.name}.${field.join('.')}`,
        message: `{{matrix.${m[1]}}} names no matrix dimension of "${step.name}"${dims.size ? ` (it has: ${[...dims].join(', ')})` : ' (it has no matrix)'}`,
        location: step.source.locate([...step.path, ...field]),
      });
    }
  }
  return out;
}

/**
 * `command`: runs `cmd` with /bin/sh in a fresh directory that holds its declared
 * deps (at their relative paths); upstream outputs are under $PAIRBENCH_IN/<node id>/.
 * Only PATH and the declared environment reach the process. Declared outs are stored.
 */
export const commandStep: StepKind = {
  name: 'command',
  title: { one: 'command', many: 'commands' },
  outputs: (step) => (spec(step).outs ?? []).map((o) => artifact(o, 'declared by the step (outs)')),
  // 2: the platform (os, arch, libc, Node major) is part of the key.
  version: 2,

  check(step, steps) {
    const s = spec(step);
    const problems: Diagnostic[] = [...checkPlaceholders(step, s.cmd, ['cmd'])];
    (s.outs ?? []).forEach((o, i) => {
      problems.push(...checkPlaceholders(step, o, ['outs', i]));
      if (!isInside(o))
        problems.push({
          field: `steps.${step.name}.outs[${i}]`,
          message: `output "${o}" must be a relative path inside the working directory`,
          location: step.source.locate([...step.path, 'outs', i]),
        });
    });
    (s.deps ?? []).forEach((d, i) => {
      const at = { field: `steps.${step.name}.deps[${i}]`, location: step.source.locate([...step.path, 'deps', i]) };
      if (typeof d === 'string') {
        problems.push(...checkPlaceholders(step, d, ['deps', i]));
        if (!isInside(d)) problems.push({ ...at, message: `input "${d}" must be a relative path inside the project` });
        return;
      }
      const up = steps.get(d.from);
      if (!up || !step.needs.includes(d.from)) {
        problems.push({
          ...at,
          message: `dangling input: reads from step "${d.from}", which is not in needs (needs: ${step.needs.join(', ') || 'none'})`,
          hint: `add "${d.from}" to needs`,
        });
        return;
      }
      if (d.out !== undefined && up.kind === 'command') {
        const outs = spec(up).outs ?? [];
        if (!outs.includes(d.out)) {
          problems.push({ ...at, message: `dangling input: step "${d.from}" declares no output "${d.out}" (its outs: ${outs.join(', ') || 'none'})` });
        }
      }
    });
    return problems;
  },

  keyConfig(node: GraphNode, hostEnv: HostEnv): Json {
    const s = spec(node.step);
    const passed: Record<string, string | null> = {};
    // Values of passed-through variables are keyed by digest: secrets stay out of the store.
    for (const name of s.pass_env ?? []) passed[name] = hostEnv[name] === undefined ? null : sha256(hostEnv[name]!);
    return {
      cmd: interpolate(s.cmd, node.matrix),
      outs: (s.outs ?? []).map((o) => interpolate(o, node.matrix)),
      env: Object.fromEntries(Object.entries(s.env ?? {}).map(([k, v]) => [k, String(v)])),
      pass_env: passed,
      timeout: s.timeout ?? null,
      // A command's result depends on the machine that ran it: a shared cache never serves a
      // macOS or musl result to a glibc Linux run (agent steps carry their sandbox and image).
      platform: platformOf(),
    };
  },

  fileInputs(node): FileInputSpec[] {
    return (spec(node.step).deps ?? []).flatMap((d, i) => (typeof d === 'string' ? [{ pattern: interpolate(d, node.matrix), field: ['deps', i] }] : []));
  },

  selectUpstream(node, upstream) {
    const froms = (spec(node.step).deps ?? []).filter((d): d is { from: string; out?: string } => typeof d !== 'string' && d.from === upstream.step.name);
    if (froms.length === 0 || froms.some((d) => d.out === undefined)) return undefined;
    return froms.map((d) => interpolate(d.out!, { ...upstream.matrix, ...node.matrix }));
  },

  describeConfigField(path) {
    const [head, name] = path;
    if (head === 'env') return `env ${name ?? ''}`.trim();
    if (head === 'pass_env') return `host env ${name ?? ''} (digest)`;
    return head;
  },

  async execute(ctx: ExecutionContext) {
    const s = spec(ctx.node.step);
    const ws = join(ctx.workDir, 'ws');
    const inDir = join(ctx.workDir, 'in');
    const home = join(ctx.workDir, 'home');
    const tmp = join(ctx.workDir, 'tmp');
    for (const d of [ws, inDir, home, tmp]) mkdirSync(d, { recursive: true });
    for (const f of ctx.files) {
      const dest = join(ws, f.path);
      mkdirSync(dirname(dest), { recursive: true });
      ctx.artifacts.materialize(f.entry, dest);
    }
    for (const u of ctx.upstream) {
      for (const [path, entry] of Object.entries(u.outputs)) {
        const dest = join(inDir, u.node, path);
        mkdirSync(dirname(dest), { recursive: true });
        ctx.artifacts.materialize(entry, dest);
      }
    }
    const env: Record<string, string> = {
      PATH: ctx.hostEnv['PATH'] ?? '/usr/local/bin:/usr/bin:/bin',
      HOME: home,
      TMPDIR: tmp,
      PAIRBENCH_NODE: ctx.node.id,
      PAIRBENCH_STEP: ctx.node.step.name,
      PAIRBENCH_IN: inDir,
    };
    for (const [k, v] of Object.entries(ctx.node.matrix)) env[`PAIRBENCH_MATRIX_${k.toUpperCase()}`] = v;
    for (const name of s.pass_env ?? []) if (ctx.hostEnv[name] !== undefined) env[name] = ctx.hostEnv[name]!;
    for (const [k, v] of Object.entries(s.env ?? {})) env[k] = String(v);

    const cmd = interpolate(s.cmd, ctx.node.matrix);
    // The log is the child's own stdout/stderr (a file descriptor, not a pipe), so a
    // background process left holding it does not keep the node waiting after exit.
    // execa's types only list the small fd literals; at run time any fd works.
    // The log is the command's stdout/stderr; its process group dies with it (timeout, interrupt, exit).
    const logFd = openSync(ctx.logFile, 'a');
    let result;
    try {
      result = await runProcess(['/bin/sh', '-c', cmd], { cwd: ws, env, logFd, signal: ctx.signal, ...(s.timeout ? { timeoutMs: s.timeout * 1000 } : {}) });
    } finally {
      closeSync(logFd);
    }
    if (result.timedOut) return err({ reason: 'timeout', message: `command timed out after ${s.timeout} s`, after_seconds: s.timeout ?? 0 });
    if (ctx.signal.aborted) return err({ reason: 'killed', message: 'command was interrupted' });
    if (result.exitCode === null && result.signal === null) return err({ reason: 'spawn-error', message: 'command could not start (/bin/sh)' });
    if (result.exitCode !== 0) {
      return err({
        reason: 'exit-non-zero',
        message: result.exitCode === null ? `command was killed by ${result.signal}` : `command exited with code ${result.exitCode}`,
        exit_code: result.exitCode,
        signal: result.signal,
      });
    }
    const outputs: OutputManifest = {};
    for (const o of (s.outs ?? []).map((x) => interpolate(x, ctx.node.matrix))) {
      const abs = join(ws, o);
      if (!existsSync(abs))
        return err({ reason: 'missing-output', message: `declared output "${o}" was not produced (the command exited 0)`, output: o, upstream: null });
      outputs[o] = ctx.artifacts.putPath(abs);
    }
    return ok(outputs);
  },
};
