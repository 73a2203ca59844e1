import { styleText } from 'node:util';
import type { EngineEvent, Reporter, RunSummary } from '../events.js';
import { ProgressTracker, shortDuration } from '../progress.js';

export interface Writer {
  write(text: string): unknown;
  isTTY?: boolean;
}

export function summaryLine(s: RunSummary): string {
  const interrupted = s.interrupted ? `, ${s.interrupted} interrupted` : '';
  return `${s.total} nodes: ${s.executed} ran, ${s.cached} cached, ${s.failed} failed${interrupted}, ${s.skipped} skipped (${s.elapsed.seconds()})`;
}

function indent(text: string): string {
  return text
    .split('\n')
    .map((l) => `    | ${l}`)
    .join('\n');
}

/** How often a plain log says what is still running, when something is (a long certify is not silence). */
export const HEARTBEAT_MS = 30_000;

/**
 * One line per event, for CI logs and pipes. Cached nodes are counted, not listed, unless verbose.
 * A built node's line ends with its step's progress and ETA; while nodes run, a line every
 * `heartbeatMs` names them with how long each has run.
 */
export class PlainReporter implements Reporter {
  private readonly color: boolean;
  private readonly progress: ProgressTracker;
  private timer: ReturnType<typeof setInterval> | undefined;

  constructor(
    private readonly out: Writer,
    private readonly options: { verbose?: boolean; color?: boolean; heartbeatMs?: number; now?: () => number } = {},
  ) {
    this.color = options.color ?? (Boolean(out.isTTY) && !process.env['NO_COLOR']);
    this.progress = new ProgressTracker(options.now);
  }

  /** The heartbeat line: what runs, for how long, what waits, and each running step's ETA. */
  heartbeat(): string | undefined {
    const running = this.progress.runningNodes();
    if (!running.length) return undefined;
    const shown = running.slice(0, 4).map((r) => `${r.node} (${shortDuration(r.ms)})`);
    const steps = [...new Set(running.map((r) => ProgressTracker.stepOf(r.node)))].map((st) => this.progress.stepLine(st));
    return this.paint(
      'dim',
      `still running: ${shown.join(', ')}${running.length > 4 ? `, and ${running.length - 4} more` : ''}; ${this.progress.queued()} queued · ${steps.join(' · ')}`,
    );
  }

  private track(e: EngineEvent): void {
    switch (e.type) {
      case 'start':
        this.progress.start(e.steps);
        if (this.options.heartbeatMs !== 0) {
          this.timer = setInterval(() => {
            const line = this.heartbeat();
            if (line) this.out.write(line + '\n');
          }, this.options.heartbeatMs ?? HEARTBEAT_MS);
          this.timer.unref();
        }
        return;
      case 'running':
        return this.progress.running(e.node);
      case 'done':
        return this.progress.settled(e.node, e.durationMs);
      case 'cached':
      case 'failed':
      case 'skipped':
        return this.progress.settled(e.node);
      case 'end':
        return this.stop();
    }
  }

  private stepSuffix(node: string): string {
    const line = this.progress.stepLine(ProgressTracker.stepOf(node));
    return line ? ` · ${line}` : '';
  }

  private stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  close(): Promise<void> {
    this.stop();
    return Promise.resolve();
  }

  private paint(style: 'red' | 'green' | 'yellow' | 'dim', text: string): string {
    // Whether to colour is this reporter's decision (its stream, NO_COLOR, --color): Node's styleText
    // would otherwise decide again from process.stdout, which is not the stream written to.
    return this.color ? styleText(style, text, { validateStream: false }) : text;
  }

  event(e: EngineEvent): void {
    this.track(e);
    const line = this.format(e);
    if (line !== undefined) this.out.write(line + '\n');
  }

  private format(e: EngineEvent): string | undefined {
    switch (e.type) {
      case 'start':
        return `pairbench: ${e.total} nodes in ${e.steps.length} steps`;
      case 'cached':
        if (e.from)
          return this.options.verbose ? this.paint('dim', `cached  ${e.node} (${e.from === 'remote' ? 'remote cache' : 'read-only store'})`) : undefined;
        return e.builtElsewhere ? `cached  ${e.node} (built by a concurrent run)` : this.options.verbose ? this.paint('dim', `cached  ${e.node}`) : undefined;
      case 'waiting':
        return this.paint('yellow', `waiting ${e.node}: another run is building it (${e.holder})`);
      case 'running':
        return `run     ${e.node}`;
      case 'done':
        if (e.outcome)
          return this.paint(
            'yellow',
            `${e.outcome.word.padEnd(7)} ${e.node} (${(e.durationMs / 1000).toFixed(2)} s)${e.recorded ? '' : ' [not cached]'}: ${e.outcome.detail}`,
          );
        return this.paint(
          'green',
          `done    ${e.node} (${(e.durationMs / 1000).toFixed(2)} s${e.worker ? `, on ${e.worker}` : ''})${e.recorded ? '' : ' [not cached]'}${this.stepSuffix(e.node)}`,
        );
      case 'failed':
        return this.paint('red', `FAILED  ${e.node}: ${e.failure.message}`) + (e.logTail ? `\n${indent(e.logTail)}` : '');
      case 'skipped':
        return this.paint('yellow', `skipped ${e.node}: ${e.because}`);
      case 'warning':
        return this.paint('yellow', `warning: ${e.node ? `${e.node}: ` : ''}${e.message}`);
      case 'end':
        return summaryLine(e.summary);
    }
  }
}
