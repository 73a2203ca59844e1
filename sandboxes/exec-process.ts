import { spawn, type StdioOptions } from 'node:child_process';
import type { Writable } from 'node:stream';
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
  /** Bytes the child reads from file descriptors 3, 4, ... (each a pipe, closed once written). */
  inputFds?: Uint8Array[];
}

/** Output kept per stream; more is dropped and the drop is said at the end. */
const MAX_OUTPUT = 64 * 1024 * 1024;
const KILL_GRACE_MS = 2000;

/**
 * Runs argv as a host process in its own process group and collects its output.
 * A timeout or an abort kills the whole group (an agent's children included).
 * Plain `child_process.spawn`: this is the hot path of every attempt.
 */
export function runProcess(argv: string[], options: ProcessOptions): Promise<ExecResult> {
  const started = performance.now();
  const [file, ...args] = argv;
  const inputs = options.inputFds ?? [];
  const out: StdioOptions = [
    options.stdin !== undefined ? 'pipe' : 'ignore',
    options.logFd ?? 'pipe',
    options.logFd ?? 'pipe',
    ...inputs.map(() => 'pipe' as const),
  ];
  return new Promise((resolve) => {
    const child = spawn(file!, args, { cwd: options.cwd, env: options.env, detached: true, stdio: out });
    const stdout = new Capped();
    const stderr = new Capped();
    child.stdout?.on('data', (d: Buffer) => stdout.add(d));
    child.stderr?.on('data', (d: Buffer) => stderr.add(d));
    const feed = (stream: Writable | null | undefined, bytes: Uint8Array | string) => {
      if (!stream) return;
      stream.on('error', () => undefined); // the child may exit without reading
      stream.end(bytes);
    };
    if (options.stdin !== undefined) feed(child.stdin, options.stdin);
    inputs.forEach((bytes, i) => feed(child.stdio[3 + i] as Writable | null, bytes));

    const killGroup = (signal: NodeJS.Signals) => {
      try {
        if (child.pid) process.kill(-child.pid, signal);
      } catch {
        // gone
      }
    };
    let timedOut = false;
    /** Set once the group was told to stop (SIGTERM sent, SIGKILL due after the grace period). */
    let graceTimer: NodeJS.Timeout | undefined;
    const stop = () => {
      killGroup('SIGTERM');
      graceTimer ??= setTimeout(() => killGroup('SIGKILL'), KILL_GRACE_MS);
      graceTimer.unref();
    };
    const timer = options.timeoutMs ? setTimeout(() => ((timedOut = true), stop()), options.timeoutMs) : undefined;
    options.signal?.addEventListener('abort', stop);
    if (options.signal?.aborted) stop(); // aborted before we started listening

    let spawnError: Error | undefined;
    let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    let settled = false;
    const finish = () => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearTimeout(graceTimer);
      options.signal?.removeEventListener('abort', stop);
      child.stdout?.destroy();
      child.stderr?.destroy();
      resolve({
        exitCode: spawnError ? 127 : (exit?.code ?? null),
        signal: spawnError ? null : (exit?.signal ?? null),
        timedOut,
        stdout: stdout.text(),
        stderr: spawnError ? `${stderr.text()}${spawnError.message}\n` : stderr.text(),
        durationMs: Math.round(performance.now() - started),
      });
    };
    child.on('error', (e) => {
      spawnError = e;
      finish();
    });
    // When the command exits, what it left in its process group goes too; a process that
    // left the group and still holds the output pipes gets a moment, then is cut off.
    child.on('exit', (code, signal) => {
      exit = { code, signal };
      // Stopped, the group got SIGTERM: what is left of it has the grace period to act on it (a
      // test's handler saying it was stopped) before the SIGKILL the grace timer sends; a shell
      // that died of the SIGTERM first must not cut that short.
      if (!graceTimer) killGroup('SIGKILL');
      setTimeout(finish, KILL_GRACE_MS).unref();
    });
    child.on('close', finish);
  });
}

class Capped {
  private chunks: Buffer[] = [];
  private size = 0;
  private dropped = 0;
  add(chunk: Buffer): void {
    if (this.size + chunk.length <= MAX_OUTPUT) {
      this.chunks.push(chunk);
      this.size += chunk.length;
    } else this.dropped += chunk.length;
  }
  /** The output as text, without its final newline (as execa gave it). */
  text(): string {
    const s = Buffer.concat(this.chunks)
      .toString('utf8')
      .replace(/\r?\n$/, '');
    return this.dropped ? `${s}\n[pairbench: ${this.dropped} more bytes dropped]` : s;
  }
}
