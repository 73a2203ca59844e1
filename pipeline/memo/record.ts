/**
 * Records a memoizable command's run (memo-file.ts): every path it reads, through one layer that
 * wraps each function of `fs` and `fs.promises`, every host fact it asks for, and what it prints.
 * The layer is derived, not a list of what the planner happens to call: a file function is a
 * read (its path observed), a descriptor read, or a doubt; a child process, a socket, the clock, a
 * host query whose answer moves by itself, or any file function that writes is a doubt, unless its
 * owner declared it a stamped query (pipeline/hooks.ts). After a doubt no memo is saved: the next run plans in
 * full. A memo is saved only when every path read looks at the end as it did when first read,
 * and changed before the run started by more than the file system's clock can blur (git's racy
 * timestamp rule): a file written in the same tick as it was read could change again unseen.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { createRequire, syncBuiltinESMExports } from 'node:module';
import { lstatSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { writeFileAtomic } from '../atomic-write.js';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  factValue,
  HOST_FACTS,
  invocationIdentity,
  log,
  MEMO_VERSION,
  memoDir,
  memoPath,
  nodeCrypto,
  observe,
  outputShape,
  sameObservation,
  type HostFact,
  type MemoFile,
  type Observation,
  type OutputPart,
} from './memo-file.js';
import { MEMO_RECORDER, renderElapsed, type Effect, type ElapsedStyle, type Watcher } from '../hooks.js';
import type { StampRecord } from './stamps.js';

const requireBuiltin = createRequire(import.meta.url);
type Fns = Record<string, unknown>;

/** File functions that read at a path (with and without Sync; the promise API the same). */
const READS_PATH = new Set(['readFile', 'stat', 'lstat', 'exists', 'access', 'readdir', 'opendir', 'realpath', 'readlink', 'statfs', 'createReadStream']);
/** Functions on a descriptor opened here: reading it is the read recorded when it was opened. */
const READS_DESCRIPTOR = new Set(['read', 'readv', 'fstat', 'close']);
const MOVING_FACTS = 'its answer moves by itself';
/** How much older than the run a path read must be: a file system's clock can lag the process's by a tick. */
const RACY_MS = 100;
/** On a file system keeping whole seconds (ext3, FAT, some network mounts), a change can look up to 2 s older. */
const RACY_COARSE_MS = 2000;
/** Memos kept per user: the oldest go first. */
const KEEP = 64;

export interface Recording {
  /** Ends the recording; saves the memo when the run was clean. Says what it did. */
  finish(exitCode: number): string;
}

interface State {
  seen: Map<string, Observation>;
  facts: Map<string, string>;
  doubts: string[];
  stamps: string[];
  answers: StampRecord[];
  effects: Effect[];
  unrepeated: string[];
  out: { stdout: OutputPart[]; stderr: OutputPart[] };
}

/**
 * Starts recording this process for `argv` (the command line after the program). Call before
 * anything of pairbench is loaded: a module's own reads when it loads are inputs too.
 */
// eslint-disable-next-line max-lines-per-function -- 241 lines, to be split into named phases (issue 63)
export function startRecording(argv: readonly string[], env: NodeJS.ProcessEnv, cwd: string): Recording {
  const startedMs = Date.now();
  const state: State = { seen: new Map(), facts: new Map(), doubts: [], stamps: [], answers: [], effects: [], unrepeated: [], out: { stdout: [], stderr: [] } };
  const identity = invocationIdentity(argv, env, cwd, outputShape(process.stdout, process.stderr));
  const undo: (() => void)[] = [];
  const io = { stat: statSync, lstat: lstatSync, read: readFileSync };

  // A declared query or effect is excused in its own (asynchronous) context only: other work
  // running meanwhile is not. What an effect reads is not observed (it decides nothing printed).
  const excusal = new AsyncLocalStorage<'query' | 'effect'>();
  const inEffect = () => excusal.getStore() === 'effect';
  // After a doubt nothing will be saved: the recorder stops watching (a run that builds pays for
  // the recording only until its first write) and lets go of the async context it kept.
  let doubted = false;
  const doubt = (why: string, excusable = true) => {
    if (excusable && excusal.getStore()) return;
    if (state.doubts.length < 20) state.doubts.push(why);
    if (!doubted) {
      doubted = true;
      excusal.disable();
    }
  };
  const seePath = (p: unknown) => {
    if (doubted || inEffect()) return;
    const path = pathOf(p, cwd);
    if (path === undefined) return;
    if (!state.seen.has(path)) state.seen.set(path, observe(path, io));
  };

  /** Replaces `owner[name]` by `wrap(itself)`; undone at the end. */
  const around = (owner: Fns, name: string, wrap: (orig: (...a: unknown[]) => unknown) => (this: unknown, ...args: unknown[]) => unknown) => {
    const orig = owner[name] as (...a: unknown[]) => unknown;
    const wrapped = wrap(orig);
    // The wrapped function keeps its own properties, symbols too: realpathSync.native, and
    // util.promisify.custom (fs.exists and fs.read promisify to what their callbacks give).
    for (const k of Reflect.ownKeys(orig))
      if (k !== 'length' && k !== 'name' && k !== 'prototype') Object.defineProperty(wrapped, k, Object.getOwnPropertyDescriptor(orig, k)!);
    owner[name] = wrapped;
    undo.push(() => (owner[name] = orig));
  };
  let inHook = false;
  /** Runs `hook` with a call's arguments before `owner[name]` itself. */
  const before = (owner: Fns, name: string, hook: (args: unknown[]) => void) =>
    around(
      owner,
      name,
      (orig) =>
        function (this: unknown, ...args: unknown[]) {
          // The recorder's own calls (reading a kernel file to observe it goes through fs.openSync)
          // are not the command's. A hook that fails is a doubt, never the call's failure.
          if (!inHook && !doubted) {
            inHook = true;
            try {
              hook(args);
            } catch (e) {
              doubt(`a call the recorder could not read (${name}: ${(e as Error).message})`, false);
            } finally {
              inHook = false;
            }
          }
          return orig.apply(this, args);
        },
    );
  /** Every function of a module object (not its classes). */
  const functionsOf = (owner: Fns) => Object.keys(owner).filter((name) => typeof owner[name] === 'function' && !/^[A-Z]/.test(name));

  const fs = requireBuiltin('node:fs') as Fns;
  for (const [owner, prefix] of [
    [fs, 'fs.'],
    [fs['promises'] as Fns, 'fs.promises.'],
  ] as const)
    for (const name of functionsOf(owner)) {
      const base = name.replace(/Sync$/, '');
      before(owner, name, (args) => {
        if (READS_PATH.has(base)) seePath(args[0]);
        else if (base === 'mkdir' && makesNothing(args, cwd, io.stat)) seePath(args[0]);
        else if (base === 'open') {
          if (opensForWriting(args[1])) doubt(`${prefix}${name} for writing: ${String(args[0])}`);
          else seePath(args[0]);
        } else if (READS_DESCRIPTOR.has(base)) {
          // a read through a descriptor opened (and so observed) here
        } else if ((base === 'write' || base === 'writev') && (args[0] === 1 || args[0] === 2)) {
          doubt(`${prefix}${name} to descriptor ${String(args[0])}, around the captured output`);
        } else doubt(`${prefix}${name}(${typeof args[0] === 'string' ? args[0] : ''})`);
      });
    }
  for (const name of ['realpathSync', 'realpath'])
    if (typeof (fs[name] as Fns)['native'] === 'function') before(fs[name] as Fns, 'native', (args) => seePath(args[0]));

  // Module resolution reads the file system through Node's internals: what a name resolves to is
  // observed (a package resolved only to find its binary, never loaded, too); for a name that does
  // not resolve (an optional package), the directories it was looked for in are observed: a
  // package installed there changes them.
  const Module = requireBuiltin('node:module') as unknown as Fns;
  const resolveFilename = Module['_resolveFilename'] as (...a: unknown[]) => unknown;
  const lookupPaths = Module['_resolveLookupPaths'] as ((request: string, parent: unknown) => string[] | null) | undefined;
  if (typeof resolveFilename === 'function') {
    Module['_resolveFilename'] = function (this: unknown, ...args: unknown[]) {
      let resolved: unknown;
      try {
        resolved = resolveFilename.apply(this, args);
      } catch (e) {
        const [request, parent] = args as [string, { filename?: string } | undefined];
        const where = /^\.{0,2}\//.test(request)
          ? [dirname(resolve(parent?.filename ? dirname(parent.filename) : cwd, request))]
          : lookupPaths?.(request, parent);
        if (where) for (const dir of where) seePath(dir);
        else doubt(`a module that does not resolve (${request})`);
        throw e;
      }
      if (typeof resolved === 'string' && resolved.startsWith('/')) seePath(resolved);
      return resolved;
    };
    undo.push(() => (Module['_resolveFilename'] = resolveFilename));
  }

  const childProcess = requireBuiltin('node:child_process') as Fns;
  for (const name of functionsOf(childProcess)) before(childProcess, name, (args) => doubt(`a child process (${String(args[0])})`));
  const net = requireBuiltin('node:net') as { Socket: { prototype: Fns } };
  before(net.Socket.prototype, 'connect', (args) => doubt(`a connection (${whereTo(args)})`));
  const askedFact = (name: string) => {
    if (doubted || inEffect()) return;
    const value = factValue(name);
    if (value === undefined) doubt(`${name}(): ${MOVING_FACTS}`);
    else if (!state.facts.has(name)) state.facts.set(name, value);
  };
  const os = requireBuiltin('node:os') as Fns;
  for (const name of functionsOf(os)) before(os, name, () => askedFact(`os.${name}`));
  const proc = process as unknown as Fns;
  for (const fact of HOST_FACTS.filter((n) => n.startsWith('process.'))) {
    const name = fact.slice('process.'.length);
    if (typeof proc[name] === 'function') before(proc, name, () => askedFact(fact));
  }
  before(proc, 'chdir', () => doubt('process.chdir'));
  // The clock: what a command prints must not depend on when it ran (an owner whose use of the
  // time changes no output declares it, as the stat cache's racy window does).
  const clock = 'the clock';
  before(Date as unknown as Fns, 'now', () => doubt(`${clock} (Date.now)`));
  before(proc['hrtime'] as Fns, 'bigint', () => doubt(`${clock} (process.hrtime.bigint)`));
  before(proc, 'hrtime', () => doubt(`${clock} (process.hrtime)`));
  before(performance as unknown as Fns, 'now', () => doubt(`${clock} (performance.now)`));
  const globals = globalThis as unknown as { Date: DateConstructor };
  const RealDate = globals.Date;
  globals.Date = new Proxy(RealDate, {
    construct(target, args, newTarget) {
      if (args.length === 0) doubt(`${clock} (new Date())`);
      return Reflect.construct(target, args, newTarget) as object;
    },
    apply(target, self, args) {
      doubt(`${clock} (Date())`);
      return Reflect.apply(target, self, args) as unknown;
    },
  });
  undo.push(() => (globals.Date = RealDate));
  // What the command prints is kept; a duration it printed (pipeline/hooks.ts: startTimer), marked with
  // this recording's own nonce, is kept as its place, and printed as itself (in JSON, as a number).
  const holeMark = `@@pairbench-elapsed-${nodeCrypto().randomBytes(8).toString('hex')}:`;
  const hole = new RegExp(`("?)${holeMark}(seconds|ms):([0-9.]+)@@\\1`, 'g');
  for (const [stream, sink] of [
    [process.stdout, state.out.stdout],
    [process.stderr, state.out.stderr],
  ] as const)
    around(
      stream as unknown as Fns,
      'write',
      (orig) =>
        function (this: unknown, chunk: unknown, ...rest: unknown[]) {
          if (inEffect()) doubt('printing inside an effect', false);
          if (typeof chunk !== 'string' || !chunk.includes(holeMark)) {
            sink.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk as Uint8Array).toString('utf8'));
            return orig.call(this, chunk, ...rest);
          }
          let at = 0;
          for (const m of chunk.matchAll(hole)) {
            sink.push(chunk.slice(at, m.index), [m[2] as ElapsedStyle]);
            at = m.index + m[0].length;
          }
          sink.push(chunk.slice(at));
          const text = chunk.replace(hole, (_m, _q, style: ElapsedStyle, ms: string) => renderElapsed(Number(ms), style));
          if (text.includes(holeMark)) doubt('a duration printed in pieces');
          return orig.call(this, text, ...rest);
        },
    );

  const stamped: Watcher = {
    run(owner, inputs, fn) {
      if (doubted) return fn();
      for (const p of inputs) seePath(p);
      state.stamps.push(owner);
      return excusal.run('query', fn);
    },
    async ask(stamp, fn, answer) {
      if (doubted) return fn();
      state.stamps.push(stamp.kind);
      const value = await excusal.run('query', fn);
      state.answers.push([stamp, answer(value)]);
      return value;
    },
    effect(effect, why, fn) {
      if (doubted) return fn();
      if (effect) state.effects.push(effect);
      else state.unrepeated.push(why);
      return excusal.run('effect', fn);
    },
    clock: () => (doubted ? Date.now() : excusal.run('query', () => Date.now())),
    hole: (ms, style) => (doubted ? renderElapsed(ms, style) : `${holeMark}${style}:${ms}@@`),
  };
  (globalThis as Record<symbol, unknown>)[MEMO_RECORDER] = stamped;
  undo.push(() => delete (globalThis as Record<symbol, unknown>)[MEMO_RECORDER]);
  // ES modules' named imports of the built-ins follow the patched objects too (and, at the end, the originals).
  syncBuiltinESMExports();

  // A process that exits before its command settled (nothing left to wait on, or an exit called
  // inside it) saves nothing: said in the memo log, so a miss on the next run is explained.
  let finished = false;
  const unfinished = () => void (finished || log(env, 'not saved: the process exited before the command settled'));
  process.once('exit', unfinished);

  return {
    finish(exitCode) {
      finished = true;
      process.off('exit', unfinished);
      for (const u of undo.reverse()) u();
      syncBuiltinESMExports();
      const dir = memoDir(env);
      const why = notSaved(exitCode);
      if (why) return log(env, `not saved: ${why}`);
      const memo: MemoFile = {
        v: MEMO_VERSION,
        identity,
        observations: [...state.seen.values()],
        facts: [...state.facts] as HostFact[],
        stamps: state.answers,
        effects: state.effects,
        stdout: joinText(state.out.stdout),
        stderr: joinText(state.out.stderr),
        exitCode,
      };
      try {
        mkdirSync(dir, { recursive: true, mode: 0o700 });
        const file = memoPath(dir, identity);
        // A memo is a cache: one lost to a power cut is recorded again by the next plan, so no fsync.
        writeFileAtomic(file, JSON.stringify(memo), { mode: 0o600, label: 'memo', sync: false });
        const evicted = evictOldest(dir);
        return log(
          env,
          `saved ${basename(file)}${evicted.length ? ` (the oldest ${evicted.length} of ${KEEP + evicted.length} removed: ${evicted.join(', ')})` : ''}: ${memo.observations.length} paths${state.stamps.length ? `, stamped: ${[...new Set(state.stamps)].join('; ')}` : ''}${
            state.effects.length + state.unrepeated.length
              ? `, effects: ${[...new Set([...state.effects.map((e) => e.kind), ...state.unrepeated])].join('; ')}`
              : ''
          }`,
        );
      } catch (e) {
        return log(env, `not saved: ${(e as Error).message}`);
      }
    },
  };

  /** Why no memo may be saved (undefined: it may). Adds the code this process loaded, then checks every path again. */
  function notSaved(exitCode: number): string | undefined {
    if (exitCode !== 0) return `the command exited ${exitCode}`;
    if (state.doubts.length) return `the command went outside what a memo sees: ${state.doubts.slice(0, 3).join('; ')}`;
    // The code that ran (pairbench's bundle, node_modules) and the binary that ran it.
    for (const loaded of [process.execPath, ...Object.keys(requireBuiltin.cache)]) seePath(loaded);
    for (const [path, first] of state.seen) {
      const now = observe(path, io);
      if (!sameObservation(first, now)) return `${path} changed while the command ran`;
      if (now[1] !== 'f') continue;
      const changedMs = Math.max(now[6], now[7]);
      const blur = Number.isInteger(now[7] / 1000) ? RACY_COARSE_MS : RACY_MS;
      if (changedMs >= startedMs - blur)
        return `${path} changed ${Math.max(0, startedMs - changedMs).toFixed(0)} ms before the command started (racy: it could change again unseen)`;
    }
    return undefined;
  }
}

/** Adjacent texts as one. */
function joinText(parts: readonly OutputPart[]): OutputPart[] {
  const joined: OutputPart[] = [];
  for (const p of parts) {
    const last = joined.length - 1;
    if (typeof p === 'string' && typeof joined[last] === 'string') joined[last] += p;
    else if (p !== '') joined.push(p);
  }
  return joined;
}

/** Where a socket connects, in words (its arguments may be Node's own normalized array, which holds the socket). */
function whereTo(args: unknown[]): string {
  const first = Array.isArray(args[0]) ? (args[0] as unknown[])[0] : args[0];
  if (typeof first !== 'object' || first === null) return String(first);
  const { host, port, path } = first as { host?: unknown; port?: unknown; path?: unknown };
  return path !== undefined ? String(path) : `${String(host ?? 'localhost')}:${String(port)}`;
}

/** The absolute path a file function was given, or undefined for a descriptor. */
function pathOf(p: unknown, cwd: string): string | undefined {
  if (typeof p === 'string') return resolve(cwd, p);
  if (p instanceof URL) return p.protocol === 'file:' ? fileURLToPath(p) : undefined;
  if (Buffer.isBuffer(p)) return resolve(cwd, p.toString('utf8'));
  return undefined;
}

/** Whether mkdir(path, { recursive: true }) finds its directory already there (then it is a read, `mkdir -p` of what exists). */
function makesNothing(args: unknown[], cwd: string, stat: typeof statSync): boolean {
  const options = args[1];
  if (typeof options !== 'object' || options === null || (options as { recursive?: unknown }).recursive !== true) return false;
  const path = pathOf(args[0], cwd);
  return path !== undefined && stat(path, { throwIfNoEntry: false })?.isDirectory() === true;
}

/** Whether open()'s flags write, create or truncate. */
function opensForWriting(flags: unknown): boolean {
  if (flags === undefined || flags === null) return false;
  if (typeof flags === 'string') return !/^(r|rs|sr)$/.test(flags);
  if (typeof flags === 'number') {
    const { O_WRONLY, O_RDWR, O_CREAT, O_TRUNC, O_APPEND } = requireBuiltin('node:fs').constants as Record<string, number>;
    return (flags & (O_WRONLY! | O_RDWR! | O_CREAT! | O_TRUNC! | O_APPEND!)) !== 0;
  }
  return true;
}

/** Keeps the KEEP newest memos; the names of those removed. */
function evictOldest(dir: string): string[] {
  const memos = readdirSync(dir)
    .filter((n) => n.endsWith('.json'))
    .map((n) => ({ n, at: statSync(join(dir, n), { throwIfNoEntry: false })?.mtimeMs ?? 0 }));
  if (memos.length <= KEEP) return [];
  memos.sort((a, b) => a.at - b.at);
  const old = memos.slice(0, memos.length - KEEP).map((m) => m.n);
  for (const n of old) rmSync(join(dir, n), { force: true });
  return old;
}
