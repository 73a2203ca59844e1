import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { main } from '../cli/main.js';
import { COMMANDS, isCommandName } from '../cli/commands/index.js';
import type { CacheKey } from '../pipeline/digest.js';
import { Store } from '../pipeline/store/store.js';

export const BIN = join(dirname(fileURLToPath(import.meta.url)), '..', 'bin', 'pairbench.js');

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** A temp project directory with a config, real files and a log of which nodes executed. */
export class Rig {
  readonly dir: string;
  readonly execLog: string;

  constructor() {
    this.dir = mkdtempSync(join(tmpdir(), 'pairbench-test-'));
    this.execLog = join(this.dir, 'executions.log');
  }

  write(path: string, content: string): void {
    const p = join(this.dir, path);
    mkdirSync(dirname(p), { recursive: true });
    writeFileSync(p, content);
  }

  read(path: string): string {
    return readFileSync(join(this.dir, path), 'utf8');
  }

  exists(path: string): boolean {
    return existsSync(join(this.dir, path));
  }

  /** Node ids that executed, in order (each command appends $PAIRBENCH_NODE to the log). */
  executions(): string[] {
    return existsSync(this.execLog) ? readFileSync(this.execLog, 'utf8').split('\n').filter(Boolean) : [];
  }

  clearExecutions(): void {
    rmSync(this.execLog, { force: true });
  }

  /** `args` and this rig's config (for a command that reads one: init, verify-bundle and generate refuse --config). */
  private withConfig(args: string[]): string[] {
    const command = args[0];
    if (args.includes('--config') || (command && isCommandName(command) && !COMMANDS[command].config)) return args;
    return [...args, '--config', join(this.dir, 'bench.config.yaml')];
  }

  /** The CLI in this process (fast); env is controlled, as CI's would be. */
  async cli(...args: string[]): Promise<CliResult> {
    let stdout = '';
    let stderr = '';
    const code = await main(this.withConfig(args), {
      stdout: { write: (s: string) => (stdout += s) },
      stderr: { write: (s: string) => (stderr += s) },
      env: { PATH: process.env['PATH'], CI: '1', ...this.env },
    });
    return { code, stdout, stderr };
  }

  env: Record<string, string> = {};

  /** The real CLI as a separate process. */
  spawn(...args: string[]): ChildProcess & { done: Promise<CliResult> } {
    const child = spawn(process.execPath, [BIN, ...this.withConfig(args)], {
      env: { PATH: process.env['PATH'], CI: '1', ...this.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d) => (stdout += d));
    child.stderr!.on('data', (d) => (stderr += d));
    const done = new Promise<CliResult>((resolve) => child.on('close', (code, signal) => resolve({ code: code ?? (signal ? 128 : -1), stdout, stderr })));
    return Object.assign(child, { done });
  }

  /** The stored bytes of a cached node's output, as text (looked up the way a user would: explain --json). */
  async outputText(node: string, name: string): Promise<string> {
    const ex = JSON.parse((await this.cli('explain', node, '--json')).stdout) as { record: { outputs: Record<string, { digest: string }> } | null };
    const entry = ex.record?.outputs[name];
    if (!entry) throw new Error(`${node} has no cached output ${name}`);
    return readFileSync(join(this.dir, '.pairbench', 'cas', entry.digest.slice(0, 2), entry.digest), 'utf8');
  }

  /** An output of the record with this key (e.g. from `run --json`), whether or not the node is cached now. */
  recordOutputJson(key: string, name: string): any {
    const found = new Store(join(this.dir, '.pairbench')).actions.get(key as CacheKey);
    if (found.status !== 'hit') throw new Error(`no record for key ${key} (${found.status})`);
    const digest = found.record.outputs[name]!.digest;
    return JSON.parse(readFileSync(join(this.dir, '.pairbench', 'cas', digest.slice(0, 2), digest), 'utf8'));
  }

  async outputJson(node: string, name: string): Promise<any> {
    return JSON.parse(await this.outputText(node, name));
  }

  cleanup(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** A command that records that it ran, then does `body`. */
export function logged(rig: Rig, body: string): string {
  return `echo "$PAIRBENCH_NODE" >> ${rig.execLog}; ${body}`;
}
