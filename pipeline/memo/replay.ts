/**
 * Answers a memoizable command from its memo (memo-file.ts) when nothing it read has changed:
 * every path observed again (stat; content under /proc and /sys), every host fact and stamp asked
 * again. Any difference, or no memo, is a miss: the command then runs in full and records. On a
 * hit the command's effects are made again (effects.ts), then its output is printed, each
 * duration it printed being this replay's own.
 */
import { readFileSync, statSync } from 'node:fs';
import { renderElapsed } from './declare.js';
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

export interface Streams {
  stdout: NodeJS.WriteStream;
  stderr: NodeJS.WriteStream;
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
  } catch {
    log(env, 'miss: no memo for this command line');
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
