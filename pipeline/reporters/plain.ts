import { styleText } from 'node:util';
import type { EngineEvent, Reporter, RunSummary } from '../events.js';

export interface Writer {
  write(text: string): unknown;
  isTTY?: boolean;
}

export function summaryLine(s: RunSummary): string {
  return `${s.total} nodes: ${s.executed} ran, ${s.cached} cached, ${s.failed} failed, ${s.skipped} skipped (${(s.durationMs / 1000).toFixed(2)} s)`;
}

function indent(text: string): string {
  return text
    .split('\n')
    .map((l) => `    | ${l}`)
    .join('\n');
}

/** One line per event, for CI logs and pipes. Cached nodes are counted, not listed, unless verbose. */
export class PlainReporter implements Reporter {
  private readonly color: boolean;

  constructor(
    private readonly out: Writer,
    private readonly options: { verbose?: boolean; color?: boolean } = {},
  ) {
    this.color = options.color ?? (Boolean(out.isTTY) && !process.env['NO_COLOR']);
  }

  private paint(style: 'red' | 'green' | 'yellow' | 'dim', text: string): string {
    return this.color ? styleText(style, text) : text;
  }

  event(e: EngineEvent): void {
    const line = this.format(e);
    if (line !== undefined) this.out.write(line + '\n');
  }

  private format(e: EngineEvent): string | undefined {
    switch (e.type) {
      case 'start':
        return `pairbench: ${e.total} nodes in ${e.steps.length} steps`;
      case 'cached':
        if (e.remote) return this.options.verbose ? this.paint('dim', `cached  ${e.node} (remote cache)`) : undefined;
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
          `done    ${e.node} (${(e.durationMs / 1000).toFixed(2)} s${e.worker ? `, on ${e.worker}` : ''})${e.recorded ? '' : ' [not cached]'}`,
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
