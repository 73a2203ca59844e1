import type { CacheKey } from './digest.js';
import type { Elapsed } from './hooks.js';
import type { StepFailure } from './step-kind.js';

/** What the engine tells a reporter; reporters decide how (or whether) to show it. */
export type EngineEvent =
  | { type: 'start'; total: number; steps: { name: string; nodes: number }[] }
  | { type: 'cached'; node: string; key: CacheKey; builtElsewhere: boolean; from?: 'remote' | 'read-only' }
  | { type: 'waiting'; node: string; holder: string }
  | { type: 'running'; node: string }
  | { type: 'done'; node: string; key: CacheKey; durationMs: number; recorded: boolean; outcome?: { word: string; detail: string }; worker?: string }
  | { type: 'failed'; node: string; failure: StepFailure; logTail: string }
  | { type: 'skipped'; node: string; because: string }
  | { type: 'warning'; message: string; node?: string }
  | { type: 'end'; summary: RunSummary };

export interface RunSummary {
  total: number;
  cached: number;
  executed: number;
  failed: number;
  /** Nodes an interrupt (Ctrl-C, SIGTERM) stopped before they finished: not failures, built again next run. */
  interrupted: number;
  skipped: number;
  /** How long the run took (printed as itself only: a replay of the run prints its own). */
  elapsed: Elapsed;
}

export interface Reporter {
  event(e: EngineEvent): void;
  /** Flushes output; called once at the end. */
  close?(): Promise<void>;
}
