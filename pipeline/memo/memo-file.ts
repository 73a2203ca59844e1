/**
 * The whole-plan memo's file: what one command's run read, and what it printed. A later run of
 * the same command line in the same directory and environment prints the same output without
 * loading pairbench when nothing it read has changed (replay.ts); record.ts writes it. This
 * module is what both share. Both are bundled apart (dist/bundle/memo.cjs, entry
 * cli/memo-entry.ts), with Node's built-ins only, and loaded before anything else of pairbench.
 */
import { appendFileSync, lstatSync, readFileSync, statSync, type Stats } from 'node:fs';
import { createRequire } from 'node:module';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { lazyRequire } from '../lazy-require.js';
import type { ElapsedStyle } from '../hooks.js';
import type { Effect } from '../hooks.js';
import type { StampRecord } from './stamps.js';

export const MEMO_VERSION = 3;

/** The commands a memo may answer (each declares `memo: true` in cli/commands/; test/cli-usage.test.ts holds the two equal). */
export const MEMOIZED_COMMANDS: readonly string[] = ['plan', 'run'];

/**
 * Environment variables that configure the memo itself and are not the command's input:
 * where memos live, whether they are used, where hits and misses are logged.
 */
const MEMO_VARIABLES = /^PAIRBENCH_MEMO(_|$)/;

/**
 * What a path looked like: `[path, 'f', dev, ino, mode, size, mtimeMs, ctimeMs]` for anything that
 * exists (a file, a directory: its entries change its mtime), `[path, 'a']` for a path that did not,
 * `[path, 'c', content]` for a file whose stat says nothing of its content (under /proc and /sys):
 * its bytes (base64) when small, else their SHA-256.
 */
export type Observation =
  | readonly [path: string, tag: 'f', dev: number, ino: number, mode: number, size: number, mtimeMs: number, ctimeMs: number]
  | readonly [path: string, tag: 'a']
  | readonly [path: string, tag: 'c', content: string];

/** Printed text, or the place of a duration the command printed (pipeline/hooks.ts): a replay prints its own there. */
export type OutputPart = string | readonly [elapsed: ElapsedStyle];

/** The value a host query (os.hostname(), process.getuid(), ...) gave, to ask again at replay. */
export type HostFact = readonly [name: string, value: string];

export interface MemoFile {
  v: typeof MEMO_VERSION;
  /** The identity the file's name is the digest of, kept to check against. */
  identity: string;
  observations: Observation[];
  facts: HostFact[];
  /** Declared queries of a daemon's state and their answers, asked again at replay (stamps.ts). */
  stamps: StampRecord[];
  /** Writes a replay makes again before it prints (effects.ts). */
  effects: Effect[];
  stdout: OutputPart[];
  stderr: OutputPart[];
  exitCode: number;
}

/** Where memos live: PAIRBENCH_MEMO_DIR, else the user's cache directory. */
export function memoDir(env: NodeJS.ProcessEnv): string {
  const set = env['PAIRBENCH_MEMO_DIR'];
  if (set) return resolve(set);
  const cache = env['XDG_CACHE_HOME'] || join(env['HOME'] || homedir(), '.cache');
  return join(cache, 'pairbench', 'plan-memo');
}

/** Whether memos are in use: PAIRBENCH_MEMO=0 turns them off. */
export function memoEnabled(env: NodeJS.ProcessEnv): boolean {
  return env['PAIRBENCH_MEMO'] !== '0';
}

/**
 * What makes two invocations the same command: the arguments, the directory, the whole
 * environment (but the memo's own settings), Node's binary and version, and whether the output
 * goes to a terminal and how wide it is. Anything else the command reads is an observation.
 */
export function invocationIdentity(argv: readonly string[], env: NodeJS.ProcessEnv, cwd: string, out: OutputShape): string {
  const vars = Object.keys(env)
    .filter((k) => !MEMO_VARIABLES.test(k))
    .sort()
    .map((k) => [k, env[k] ?? '']);
  return JSON.stringify({ v: MEMO_VERSION, argv, cwd, env: vars, node: [process.execPath, process.version, process.arch], out });
}

export interface OutputShape {
  stdoutTTY: boolean;
  stderrTTY: boolean;
  columns: number | null;
}

export function outputShape(stdout: { isTTY?: boolean; columns?: number }, stderr: { isTTY?: boolean }): OutputShape {
  return { stdoutTTY: Boolean(stdout.isTTY), stderrTTY: Boolean(stderr.isTTY), columns: stdout.isTTY ? (stdout.columns ?? null) : null };
}

/**
 * node:crypto, loaded only when a memo needs it (a large kernel file's digest, a recording's nonce):
 * loading it, and the streams it pulls in, was 6 of the ~15 ms a replay spends beside Node's start.
 */
export const nodeCrypto = lazyRequire<typeof import('node:crypto')>('node:crypto');

/**
 * The memo file of an invocation, named by a hash of its identity. Not a cryptographic one: the file
 * keeps the identity, and a replay compares it whole (a collision is a miss, never a wrong answer).
 */
export function memoPath(dir: string, identity: string): string {
  // FNV-1a, twice (two offsets) over the UTF-16 code units: 64 bits of name.
  let a = 0x811c9dc5;
  let b = 0x01000193 ^ identity.length;
  for (let i = 0; i < identity.length; i++) {
    const c = identity.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x01000193) ^ (b >>> 13);
  }
  const hex = (n: number) => (n >>> 0).toString(16).padStart(8, '0');
  return join(dir, `${hex(a)}${hex(b)}.json`);
}

/** A kernel file's bytes as an observation keeps them: themselves when small, else their digest. */
const CONTENT_KEPT_WHOLE = 4096;

function contentOf(bytes: Buffer): string {
  return bytes.length <= CONTENT_KEPT_WHOLE ? `base64:${bytes.toString('base64')}` : `sha256:${nodeCrypto().createHash('sha256').update(bytes).digest('hex')}`;
}

/**
 * Paths whose stat says nothing of their content (the kernel's files under /proc and /sys: size 0,
 * times of the mount): observed by their bytes. Directories there, a link there (/proc/self/exe:
 * the file it names, by its stat), and everything elsewhere (a tmpfs under /dev too), by their stat.
 */
function observedByContent(path: string, st: Stats | undefined, lstat: typeof lstatSync): boolean {
  return st !== undefined && (path.startsWith('/proc/') || path.startsWith('/sys/')) && lstat(path, { throwIfNoEntry: false })?.isFile() === true;
}

/** The file functions an observation uses (the recorder passes them as they were before it wrapped them). */
export interface ObserveIO {
  stat: typeof statSync;
  lstat: typeof lstatSync;
  read: typeof readFileSync;
}

/** How `path` looks now, by the memo's rules; `io` gives the unrecorded file functions. */
export function observe(path: string, io: ObserveIO = { stat: statSync, lstat: lstatSync, read: readFileSync }): Observation {
  const st: Stats | undefined = io.stat(path, { throwIfNoEntry: false });
  if (!st) return [path, 'a'];
  if (observedByContent(path, st, io.lstat)) {
    try {
      return [path, 'c', contentOf(io.read(path))];
    } catch (e) {
      return [path, 'c', `unreadable: ${(e as NodeJS.ErrnoException).code ?? 'error'}`];
    }
  }
  return [path, 'f', st.dev, st.ino, st.mode, st.size, st.mtimeMs, st.ctimeMs];
}

export function sameObservation(a: Observation, b: Observation): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * Host queries a command may make whose answer is a fact of this host and user (asked again at
 * replay and compared), by the object that answers them. A query not here, or one whose answer
 * moves by itself (free memory, load, uptime, CPU times), is a doubt: record.ts saves no memo after it.
 */
const FACT_QUERIES = {
  os: [
    'hostname',
    'homedir',
    'tmpdir',
    'userInfo',
    'platform',
    'type',
    'release',
    'version',
    'arch',
    'machine',
    'endianness',
    'totalmem',
    'availableParallelism',
  ],
  process: ['getuid', 'geteuid', 'getgid', 'getegid', 'getgroups'],
} as const;

// Each query as it was before record.ts wraps it: the os module's own object (the one record.ts
// patches) and the process, only these names read (spreading `process` would start its stdin).
const answerers: Record<keyof typeof FACT_QUERIES, Record<string, unknown>> = {
  os: createRequire(import.meta.url)('node:os') as Record<string, unknown>,
  process: process as unknown as Record<string, unknown>,
};
const originalQueries = new Map<string, () => unknown>(
  (Object.keys(FACT_QUERIES) as (keyof typeof FACT_QUERIES)[]).flatMap((owner) =>
    FACT_QUERIES[owner].flatMap((name) => {
      const fn = answerers[owner][name];
      return typeof fn === 'function' ? [[`${owner}.${name}`, (fn as () => unknown).bind(answerers[owner])] as const] : [];
    }),
  ),
);

/** The names of the host facts (`os.hostname`, `process.getuid`, ...). */
export const HOST_FACTS: readonly string[] = [...originalQueries.keys()];

export function factValue(name: string): string | undefined {
  const ask = originalQueries.get(name);
  return ask ? JSON.stringify(ask() ?? null) : undefined;
}

/** Says what the memo did, to PAIRBENCH_MEMO_LOG when set (a file: one line per command). */
export function log(env: NodeJS.ProcessEnv, line: string): string {
  const file = env['PAIRBENCH_MEMO_LOG'];
  if (file) appendFileSync(file, `${line}\n`);
  return line;
}
