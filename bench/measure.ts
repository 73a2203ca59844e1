/**
 * What the benchmarks share: a median, paired timings of child processes, the execution time each
 * cached node recorded, and git and a checked child process for building their workloads.
 */
import { execFileSync, type spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Store } from '../pipeline/store/store.js';

export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

/** Node id -> the duration its action record holds, for every record in the project's store. */
export function nodeDurations(projectDir: string): Map<string, number> {
  const store = new Store(join(projectDir, '.pairbench'));
  const out = new Map<string, number>();
  for (const r of store.actions.list()) {
    const found = store.actions.get(r.key);
    if (found.status === 'hit') out.set(found.record.node, found.record.duration_ms);
  }
  return out;
}

/** One timed process: its wall time and the CPU it (and whatever it waited for) used, in ms. */
export interface Timing {
  wallMs: number;
  cpuMs: number;
}

/**
 * The CPU of this process's children that have been waited for (user + system, /proc/self/stat
 * fields cutime and cstime), in ms: a spawnSync child's CPU is the difference around it. Clock
 * ticks are 10 ms here; the processes timed this way take tens of ms or more.
 */
export function childrenCpuMs(): number {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // fields[0] is stat field 3 (state): cutime and cstime are fields 16 and 17.
  return (Number(fields[13]) + Number(fields[14])) * 10;
}

/** `run` (a spawnSync of one process) timed: wall and CPU. */
export function timed<T>(run: () => T): { timing: Timing; value: T } {
  const cpu0 = childrenCpuMs();
  const t0 = process.hrtime.bigint();
  const value = run();
  return { timing: { wallMs: Number(process.hrtime.bigint() - t0) / 1e6, cpuMs: childrenCpuMs() - cpu0 }, value };
}

/** min / median / max, as text. */
export function spread(xs: readonly number[], digits = 0): string {
  const s = [...xs].sort((a, b) => a - b);
  return `${s[0]!.toFixed(digits)}/${median(s).toFixed(digits)}/${s[s.length - 1]!.toFixed(digits)}`;
}

/**
 * Ratios of measures taken in pairs (A then B, A then B, ...: each pair under the same load),
 * wall and CPU, as min/median/max. A CPU anchor below a clock tick is taken as one tick.
 */
export function pairedRatios(a: readonly Timing[], b: readonly Timing[]): { wall: number[]; cpu: number[] } {
  return {
    wall: a.map((x, i) => x.wallMs / b[i]!.wallMs),
    cpu: a.map((x, i) => x.cpuMs / Math.max(10, b[i]!.cpuMs)),
  };
}

/** git in `cwd` with a fixed identity and dates (a workload's commits are the same every run); its output, trimmed. */
export function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, {
    cwd,
    encoding: 'utf8',
    maxBuffer: 1 << 26,
    env: {
      PATH: process.env['PATH'],
      GIT_AUTHOR_NAME: 'b',
      GIT_AUTHOR_EMAIL: 'b@b',
      GIT_COMMITTER_NAME: 'b',
      GIT_COMMITTER_EMAIL: 'b@b',
      GIT_AUTHOR_DATE: '2026-01-01T00:00:00Z',
      GIT_COMMITTER_DATE: '2026-01-01T00:00:00Z',
      HOME: '/nonexistent',
    },
  }).trim();
}

/** Throws, with the end of its stderr, when a child a benchmark needs did not succeed. */
export function must(r: ReturnType<typeof spawnSync>, what: string): void {
  if (r.status !== 0) throw new Error(`${what} exited ${r.status}: ${String(r.stderr ?? '').slice(-800)}`);
}
