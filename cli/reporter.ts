import type { Reporter } from '../pipeline/events.js';
import { PlainReporter } from '../pipeline/reporters/plain.js';
import type { CliIO, Out } from './command-context.js';

/** What a run prints as it goes: listr2 on an interactive terminal, plain lines otherwise (or in CI), or nothing. */
export function chooseReporter(io: CliIO, mode: string | undefined, verbose: boolean): Reporter {
  const m = mode ?? 'auto';
  if (m === 'none') return { event: () => undefined };
  const interactive = m === 'auto' && io.stderr.isTTY && !io.env['CI'];
  if (interactive) {
    // Loaded only when needed: a no-op run in CI should not pay for it.
    return new LazyListr(io.stderr);
  }
  return new PlainReporter(io.stderr, { verbose, color: Boolean(io.stderr.isTTY) && !io.env['NO_COLOR'] });
}

/** Defers importing listr2 until the first event; events arrive synchronously, so buffer them. */
class LazyListr implements Reporter {
  private inner?: Reporter;
  private readonly ready: Promise<void>;
  private readonly queue: Parameters<Reporter['event']>[0][] = [];
  constructor(out: Out) {
    this.ready = import('../pipeline/reporters/listr.js').then((m) => {
      this.inner = new m.ListrReporter(out);
      for (const e of this.queue.splice(0)) this.inner.event(e);
    });
  }
  event(e: Parameters<Reporter['event']>[0]): void {
    if (this.inner) this.inner.event(e);
    else this.queue.push(e);
  }
  async close(): Promise<void> {
    await this.ready;
    await this.inner?.close?.();
  }
}
