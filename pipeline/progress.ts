/**
 * Signs of life on long work, shared by the terminal reporters and the viewer: how long each
 * running node has run, and an estimate of when a step ends, from the nodes of the same step
 * (one kind, one config) that have finished. Pure: the callers pass the clock's readings.
 */

export interface StepFacts {
  /** How long each finished (executed, not cached-by-lookup) node of the step took. */
  finishedMs: readonly number[];
  /** How long each running node has run so far. */
  runningMs: readonly number[];
  /** Nodes of the step not started yet. */
  queued: number;
}

/**
 * The time left for the step: each queued node takes the mean of the finished ones, each running
 * node what is left of that mean, shared over as many as run at once (at least one). Null when no
 * node of the step has finished (nothing to estimate from), or nothing is left.
 */
export function etaMs(f: StepFacts): number | null {
  if (!f.finishedMs.length || (f.queued === 0 && f.runningMs.length === 0)) return null;
  const mean = f.finishedMs.reduce((a, b) => a + b, 0) / f.finishedMs.length;
  const left = f.queued * mean + f.runningMs.reduce((a, r) => a + Math.max(0, mean - r), 0);
  return left / Math.max(1, f.runningMs.length);
}

/** 850 ms -> "1s", 65 s -> "1m05s", 3725 s -> "1h02m": short enough for a progress line. */
export function shortDuration(ms: number): string {
  const s = Math.max(1, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(m / 60)}h${String(m % 60).padStart(2, '0')}m`;
}

/** Per step: what has finished and what runs, from the engine's events, for the reporters. */
export class ProgressTracker {
  private readonly steps = new Map<string, { total: number; settled: number; finishedMs: number[]; running: Map<string, number> }>();

  constructor(private readonly now: () => number = Date.now) {}

  static stepOf(node: string): string {
    return node.split('/')[0]!;
  }

  start(steps: readonly { name: string; nodes: number }[]): void {
    for (const s of steps) this.steps.set(s.name, { total: s.nodes, settled: 0, finishedMs: [], running: new Map() });
  }

  running(node: string): void {
    this.steps.get(ProgressTracker.stepOf(node))?.running.set(node, this.now());
  }

  /** A node settled (built, cached, failed or skipped); a built one's duration feeds the estimate. */
  settled(node: string, builtInMs?: number): void {
    const s = this.steps.get(ProgressTracker.stepOf(node));
    if (!s) return;
    s.running.delete(node);
    s.settled++;
    if (builtInMs !== undefined) s.finishedMs.push(builtInMs);
  }

  /** The running nodes, longest first, with how long each has run. */
  runningNodes(): { node: string; ms: number }[] {
    const t = this.now();
    return [...this.steps.values()]
      .flatMap((s) => [...s.running].map(([node, since]) => ({ node, ms: t - since })))
      .sort((a, b) => b.ms - a.ms || (a.node < b.node ? -1 : 1));
  }

  /** The step's estimated time left, or null (none finished yet, or unknown step). */
  etaOf(step: string): number | null {
    const s = this.steps.get(step);
    if (!s) return null;
    const t = this.now();
    const runningMs = [...s.running.values()].map((since) => t - since);
    return etaMs({ finishedMs: s.finishedMs, runningMs, queued: s.total - s.settled - s.running.size });
  }

  /** "certify 3/8, ETA ~2m10s" for a step, or just the count when nothing can be estimated yet. */
  stepLine(step: string): string | null {
    const s = this.steps.get(step);
    if (!s) return null;
    const eta = this.etaOf(step);
    return `${step} ${s.settled}/${s.total}${eta !== null ? `, ETA ~${shortDuration(eta)}` : ''}`;
  }

  queued(): number {
    return [...this.steps.values()].reduce((a, s) => a + s.total - s.settled - s.running.size, 0);
  }
}
