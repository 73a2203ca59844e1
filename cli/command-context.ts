import type { BenchConfig } from '../pipeline/config/load.js';
import type { Graph } from '../pipeline/dag.js';
import type { EngineContext } from '../pipeline/engine.js';
import type { ResolvedInput } from '../pipeline/inputs.js';

// What every command is handed, as types only: commands import this, never each other's modules
// for their types (which made cycles: main <-> worker, doctor <-> canary).

/** Where a command writes. */
export type Out = { write(s: string | Uint8Array): unknown; isTTY?: boolean };

/** A command's streams and environment (the process's own, or a test's). */
export interface CliIO {
  stdout: Out;
  stderr: Out;
  env: Record<string, string | undefined>;
}

/** A config loaded and planned: what doctor, probe, view and the run commands work from. */
export interface LoadedConfig {
  config: BenchConfig;
  graph: Graph;
  ctx: EngineContext;
  inputs: Map<string, ResolvedInput[]>;
}
