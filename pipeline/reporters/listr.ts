import { Listr, type ListrTaskWrapper } from 'listr2';
import type { EngineEvent, Reporter } from '../events.js';
import { ProgressTracker, shortDuration } from '../progress.js';
import { PlainReporter, summaryLine, type Writer } from './plain.js';

interface StepProgress {
  total: number;
  cached: number;
  done: number;
  failed: number;
  skipped: number;
  running: number;
  task?: ListrTaskWrapper<unknown, never, never>;
  finish?: () => void;
  fail?: (e: Error) => void;
}

/** Interactive progress on a TTY: one listr2 task per step, updated as its nodes settle. */
export class ListrReporter implements Reporter {
  private readonly steps = new Map<string, StepProgress>();
  private readonly nodeStep = (node: string) => node.split('/')[0]!;
  private readonly after: string[] = [];
  private listr?: Promise<unknown>;
  private readonly plain: PlainReporter;
  private readonly progress = new ProgressTracker();
  private timer: ReturnType<typeof setInterval> | undefined;
  /** The run ended: a step still unsettled never will be. */
  private ended = false;

  constructor(private readonly out: Writer) {
    this.plain = new PlainReporter({ write: (t: string) => this.after.push(t) }, { color: !process.env['NO_COLOR'] });
  }

  private title(name: string, p: StepProgress): string {
    const settled = p.cached + p.done + p.failed + p.skipped;
    const parts = [`${settled}/${p.total}`];
    if (p.cached) parts.push(`${p.cached} cached`);
    if (p.done) parts.push(`${p.done} ran`);
    if (p.running) parts.push(`${p.running} running`);
    if (p.failed) parts.push(`${p.failed} failed`);
    if (p.skipped) parts.push(`${p.skipped} skipped`);
    // The longest-running node of the step, how long it has run, and when the step should end.
    const longest = this.progress.runningNodes().find((r) => ProgressTracker.stepOf(r.node) === name);
    if (longest) parts.push(`${longest.node} ${shortDuration(longest.ms)}`);
    const eta = this.progress.etaOf(name);
    if (eta !== null && settled < p.total) parts.push(`ETA ~${shortDuration(eta)}`);
    return `${name}  ${parts.join(', ')}`;
  }

  private update(node: string, change: (p: StepProgress) => void): void {
    const name = this.nodeStep(node);
    const p = this.steps.get(name);
    if (!p) return;
    change(p);
    if (p.task) p.task.title = this.title(name, p);
    this.settleIfDone(name, p);
  }

  private settleIfDone(name: string, p: StepProgress): void {
    // At the end of a run every step settles: an interrupted one (its nodes stopped, or never started) fails.
    if (this.ended && p.cached + p.done + p.failed + p.skipped < p.total) return p.fail?.(new Error(`${this.title(name, p)}, interrupted`));
    if (p.cached + p.done + p.failed + p.skipped < p.total) return;
    if (p.failed || p.skipped) p.fail?.(new Error(this.title(name, p)));
    else p.finish?.();
  }

  /** Elapsed times and ETAs change with the clock: the titles of steps with running nodes, once a second. */
  private tick(): void {
    for (const [name, p] of this.steps) if (p.running && p.task) p.task.title = this.title(name, p);
  }

  event(e: EngineEvent): void {
    if (e.type === 'start') this.progress.start(e.steps);
    else if (e.type === 'running') this.progress.running(e.node);
    else if (e.type === 'done') this.progress.settled(e.node, e.durationMs);
    else if (e.type === 'cached' || e.type === 'failed' || e.type === 'skipped') this.progress.settled(e.node);
    switch (e.type) {
      case 'start': {
        this.timer = setInterval(() => this.tick(), 1000);
        this.timer.unref();
        for (const s of e.steps) this.steps.set(s.name, { total: s.nodes, cached: 0, done: 0, failed: 0, skipped: 0, running: 0 });
        const tasks = [...this.steps].map(([name, p]) => ({
          title: this.title(name, p),
          task: (_: unknown, task: ListrTaskWrapper<unknown, never, never>) =>
            new Promise<void>((resolve, reject) => {
              p.task = task;
              p.finish = resolve;
              p.fail = reject;
              // The step may have settled before listr started this task.
              task.title = this.title(name, p);
              this.settleIfDone(name, p);
            }),
        }));
        this.listr = new Listr(tasks as never, {
          concurrent: true,
          exitOnError: false,
          // Its own SIGINT listener exits 127 at once; run's handler stops the nodes and exits 130.
          registerSignalListeners: false,
          // Only a terminal gets the live renderer (a writer that is not one, e.g. in tests, gets nothing).
          renderer: this.out.isTTY ? 'default' : 'silent',
          rendererOptions: { collapseErrors: false },
        })
          .run()
          .catch(() => undefined);
        return;
      }
      case 'cached':
        return this.update(e.node, (p) => p.cached++);
      case 'running':
        return this.update(e.node, (p) => p.running++);
      case 'done':
        if (e.outcome) this.plain.event(e);
        return this.update(e.node, (p) => {
          p.running--;
          p.done++;
        });
      case 'failed':
        this.plain.event(e);
        return this.update(e.node, (p) => {
          if (p.running > 0) p.running--;
          p.failed++;
        });
      case 'skipped':
        return this.update(e.node, (p) => p.skipped++);
      case 'waiting':
      case 'warning':
        this.plain.event(e);
        return;
      case 'end':
        clearInterval(this.timer);
        this.ended = true;
        for (const [name, p] of this.steps) this.settleIfDone(name, p);
        this.after.push(summaryLine(e.summary) + '\n');
        return;
    }
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.listr;
    for (const line of this.after) this.out.write(line);
  }
}
