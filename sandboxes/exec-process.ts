import { execa } from 'execa';
import type { ExecResult } from './sandbox.js';

export interface ProcessOptions {
  cwd: string;
  env: Record<string, string>;
  timeoutMs?: number;
  signal?: AbortSignal;
  stdin?: string;
  /**
   * Send stdout and stderr to this file descriptor instead of collecting them. Then a
   * process left in the background holding them does not keep the caller waiting
   * (the group is killed once the command exits).
   */
  logFd?: number;
}

/**
 * Runs argv as a host process in its own process group and collects its output.
 * A timeout or an abort kills the whole group (an agent's children included).
 */
export async function runProcess(argv: string[], options: ProcessOptions): Promise<ExecResult> {
  const started = Date.now();
  const [file, ...args] = argv;
  const child = execa(file!, args, {
    cwd: options.cwd,
    env: options.env,
    extendEnv: false,
    reject: false,
    detached: true,
    ...(options.stdin !== undefined ? { input: options.stdin } : { stdin: 'ignore' as const }),
    // execa's types list only small fd literals; any open fd works at run time.
    ...(options.logFd !== undefined ? { stdout: options.logFd as 3, stderr: options.logFd as 3 } : {}),
    maxBuffer: 64 * 1024 * 1024,
  });
  const killGroup = (signal: NodeJS.Signals) => {
    try {
      if (child.pid) process.kill(-child.pid, signal);
    } catch {
      // gone
    }
  };
  let timedOut = false;
  const stop = () => {
    killGroup('SIGTERM');
    setTimeout(() => killGroup('SIGKILL'), 2000).unref();
  };
  const timer = options.timeoutMs ? setTimeout(() => ((timedOut = true), stop()), options.timeoutMs) : undefined;
  options.signal?.addEventListener('abort', stop);
  if (options.signal?.aborted) stop(); // aborted before we started listening
  const r = await child.finally(() => {
    clearTimeout(timer);
    options.signal?.removeEventListener('abort', stop);
  });
  killGroup('SIGKILL');
  return {
    exitCode: r.exitCode ?? null,
    signal: r.signal ?? null,
    timedOut,
    stdout: String(r.stdout ?? ''),
    stderr: String(r.stderr ?? ''),
    durationMs: Date.now() - started,
  };
}
