/**
 * Answers a memoizable command from its memo (memo-file.ts) when nothing it read has changed:
 * every path observed again (stat; content under /proc and /sys), every host fact and stamp asked
 * again. Any difference, or no memo, is a miss: the command then runs in full and records. On a
 * hit the command's effects are made again (effects.ts), then its output is printed, each
 * duration it printed being this replay's own.
 */
import { fstatSync, readFileSync, statSync, writeSync } from 'node:fs';
import { basename } from 'node:path';
import { lazyRequire } from '../lazy-require.js';
import { renderElapsed } from '../hooks.js';
import { performEffects, type EffectPerformers } from './effects.js';
import { changedAnswer, type StampAskers } from './stamps.js';
import {
  factValue,
  invocationIdentity,
  log,
  MEMO_VERSION,
  memoDir,
  memoPath,
  observe,
  outputShape,
  sameObservation,
  type MemoFile,
  type OutputPart,
} from './memo-file.js';

/** Where a replay prints, and what it tells of the terminal (the memo's identity holds it). */
export interface Output {
  isTTY?: boolean;
  columns?: number;
  write(text: string): unknown;
}

export interface Streams {
  stdout: Output;
  stderr: Output;
}

/**
 * Whether `fd` is a terminal. Only a character device can be, and node:tty loads node:net: a pipe
 * or a file is told apart by its stat, without it.
 */
function isatty(fd: number): boolean {
  try {
    if (!fstatSync(fd).isCharacterDevice()) return false;
  } catch {
    return false;
  }
  return nodeTty().isatty(fd);
}

const nodeTty = lazyRequire<typeof import('node:tty')>('node:tty');

/**
 * This process's stdout and stderr, written by file descriptor: process.stdout on a pipe loads
 * Node's stream and net modules, a fifth of what a replay spends beside Node's own start.
 */
export function descriptorStreams(): Streams {
  const of = (fd: 1 | 2, stream: () => NodeJS.WriteStream): Output => ({
    get isTTY() {
      return isatty(fd);
    },
    get columns() {
      return isatty(fd) ? stream().columns : undefined;
    },
    write(text: string) {
      const bytes = Buffer.from(text);
      let off = 0;
      try {
        while (off < bytes.length) off += writeSync(fd, bytes, off);
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        // A reader that has gone (`| head`) takes nothing more, as for the stream; a non-blocking pipe gets the rest through the stream, which waits.
        if (code === 'EAGAIN') stream().write(bytes.subarray(off));
        else if (code !== 'EPIPE') throw e;
      }
      return true;
    },
  });
  return { stdout: of(1, () => process.stdout), stderr: of(2, () => process.stderr) };
}

/** The exit code of the memo's run after printing its output, or undefined on a miss (said in PAIRBENCH_MEMO_LOG). */
export async function replayMemo(
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
  cwd: string,
  out: Streams,
  owners: { askers: StampAskers; performers: EffectPerformers },
): Promise<number | undefined> {
  const identity = invocationIdentity(argv, env, cwd, outputShape(out.stdout, out.stderr));
  const file = memoPath(memoDir(env), identity);
  let memo: MemoFile;
  try {
    // What a memo says is printed as this command's output: only a file this user alone could write is believed.
    const st = statSync(file);
    if (st.uid !== process.getuid?.() || (st.mode & 0o022) !== 0) {
      log(env, `miss: ${file} is not this user's alone`);
      return undefined;
    }
    memo = JSON.parse(readFileSync(file, 'utf8')) as MemoFile;
  } catch (e) {
    // Which it was (none saved, or one that cannot be read) says where to look when a memo saved is not found.
    const code = (e as NodeJS.ErrnoException).code;
    log(env, `miss: no memo for this command line (${code === 'ENOENT' ? `no ${basename(file)}` : `${basename(file)}: ${code ?? (e as Error).message}`})`);
    return undefined;
  }
  const why = changed(memo, identity) ?? (await changedAnswer(memo.stamps, owners.askers)) ?? performEffects(memo.effects, owners.performers);
  if (why) {
    log(env, `miss: ${why}`);
    return undefined;
  }
  // This process's own duration so far, from its start: what a replayed command took.
  const tookMs = performance.now();
  out.stdout.write(printed(memo.stdout, tookMs));
  out.stderr.write(printed(memo.stderr, tookMs));
  log(env, `hit: ${memo.observations.length} paths unchanged${memo.effects.length ? `, ${memo.effects.length} effects made again` : ''}`);
  return memo.exitCode;
}

function printed(parts: readonly OutputPart[], tookMs: number): string {
  return parts.map((p) => (typeof p === 'string' ? p : renderElapsed(tookMs, p[0]))).join('');
}

function changed(memo: MemoFile, identity: string): string | undefined {
  if (memo.v !== MEMO_VERSION || memo.identity !== identity) return 'the memo is of another version or command line';
  for (const seen of memo.observations) if (!sameObservation(seen, observe(seen[0]))) return `${seen[0]} changed`;
  for (const [name, value] of memo.facts) if (factValue(name) !== value) return `${name}() changed`;
  return undefined;
}
