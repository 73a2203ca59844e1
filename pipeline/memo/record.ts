/**
 * Records a memoizable command's run (memo-file.ts): every path it reads, through one layer that
 * wraps each function of `fs` and `fs.promises`, every host fact it asks for, and what it prints.
 * The layer is derived, not a list of what the planner happens to call: a file function is a
 * read (its path observed), a descriptor read, or a doubt; a child process, a socket, the clock, a
 * host query whose answer moves by itself, or any file function that writes is a doubt, unless its
 * owner declared it a stamped query (declare.ts). After a doubt no memo is saved: the next run plans in
 * full. A memo is saved only when every path read looks at the end as it did when first read,
 * and changed before the run started by more than the file system's clock can blur (git's racy
 * timestamp rule): a file written in the same tick as it was read could change again unseen.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { createRequire, syncBuiltinESMExports } from 'node:module';
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
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
  observe,
  outputShape,
  sameObservation,
  type HostFact,
  type MemoFile,
  type Observation,
} from './memo-file.js';
import { MEMO_RECORDER, type StampedQueries } from './declare.js';
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
  out: { stdout: string[]; stderr: string[] };
}

/**
 * Starts recording this process for `argv` (the command line after the program). Call before
 * anything of pairbench is loaded: a module's own reads when it loads are inputs too.
 */
export function startRecording(argv: readonly string[], env: NodeJS.ProcessEnv, cwd: string): Recording {
  const startedMs = Date.now();
  const state: State = { seen: new Map(), facts: new Map(), doubts: [], stamps: [], answers: [], out: { stdout: [], stderr: [] } };
  const identity = invocationIdentity(argv, env, cwd, outputShape(process.stdout, process.stderr));
  const undo: (() => void)[] = [];
  const origStat = statSync;
  const origRead = readFileSync;

  // A declared query is excused in its own (asynchronous) context only: other work running meanwhile is not.
  const excusal = new AsyncLocalStorage<true>();
  const doubt = (why: string) => {
    if (!excusal.getStore() && state.doubts.length < 20) state.doubts.push(why);
  };
  const seePath = (p: unknown) => {
    const path = pathOf(p, cwd);
    if (path === undefined) return;
    if (!state.seen.has(path)) state.seen.set(path, observe(path, { stat: origStat, read: origRead }));
  };

  /** Runs `hook` with a call's arguments before `owner[name]` itself; undone at the end. */
  const before = (owner: Fns, name: string, hook: (args: unknown[]) => void) => {
    const orig = owner[name] as (...a: unknown[]) => unknown;
    const wrapped = function (this: unknown, ...args: unknown[]) {
      hook(args);
      return orig.apply(this, args);
    };
    // realpathSync.native and friends: the wrapped function keeps its properties.
    for (const k of Object.keys(orig)) (wrapped as unknown as Fns)[k] = (orig as unknown as Fns)[k];
    owner[name] = wrapped;
    undo.push(() => (owner[name] = orig));
  };
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
  before(net.Socket.prototype, 'connect', (args) => doubt(`a connection (${JSON.stringify(args[0])?.slice(0, 100)})`));
  const askedFact = (name: string) => {
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
  for (const [stream, sink] of [
    [process.stdout, state.out.stdout],
    [process.stderr, state.out.stderr],
  ] as const)
    before(stream as unknown as Fns, 'write', (args) => sink.push(typeof args[0] === 'string' ? args[0] : Buffer.from(args[0] as Uint8Array).toString('utf8')));

  const stamped: StampedQueries = {
    run(owner, inputs, fn) {
      for (const p of inputs) seePath(p);
      state.stamps.push(owner);
      return excusal.run(true, fn);
    },
    async ask(stamp, fn, answer) {
      state.stamps.push(stamp.kind);
      const value = await excusal.run(true, fn);
      state.answers.push([stamp, answer(value)]);
      return value;
    },
  };
  (globalThis as Record<symbol, unknown>)[MEMO_RECORDER] = stamped;
  undo.push(() => delete (globalThis as Record<symbol, unknown>)[MEMO_RECORDER]);
  // ES modules' named imports of the built-ins follow the patched objects too (and, at the end, the originals).
  syncBuiltinESMExports();

  return {
    finish(exitCode) {
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
        stdout: state.out.stdout.join(''),
        stderr: state.out.stderr.join(''),
        exitCode,
      };
      try {
        mkdirSync(dir, { recursive: true, mode: 0o700 });
        const file = memoPath(dir, identity);
        // A memo is a cache: one lost to a power cut is recorded again by the next plan, so no fsync.
        writeFileAtomic(file, JSON.stringify(memo), { mode: 0o600, label: 'memo', sync: false });
        evictOldest(dir);
        return log(
          env,
          `saved ${basename(file)}: ${memo.observations.length} paths${state.stamps.length ? `, stamped: ${[...new Set(state.stamps)].join('; ')}` : ''}`,
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
      const now = observe(path, { stat: origStat, read: origRead });
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

/** The absolute path a file function was given, or undefined for a descriptor. */
function pathOf(p: unknown, cwd: string): string | undefined {
  if (typeof p === 'string') return resolve(cwd, p);
  if (p instanceof URL) return p.protocol === 'file:' ? fileURLToPath(p) : undefined;
  if (Buffer.isBuffer(p)) return resolve(cwd, p.toString('utf8'));
  return undefined;
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

function evictOldest(dir: string): void {
  const memos = readdirSync(dir)
    .filter((n) => n.endsWith('.json'))
    .map((n) => ({ n, at: statSync(join(dir, n), { throwIfNoEntry: false })?.mtimeMs ?? 0 }));
  if (memos.length <= KEEP) return;
  memos.sort((a, b) => a.at - b.at);
  for (const m of memos.slice(0, memos.length - KEEP)) rmSync(join(dir, m.n), { force: true });
}
