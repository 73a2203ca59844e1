/**
 * What `pairbench doctor` asks of a sandbox backend: each backend checks this machine for the
 * steps that use it (sandboxes/<name>-doctor.ts, found through the registry in index.ts), so
 * doctor knows no backend by name. Types only.
 */
import type { PreflightCheck } from '../pipeline/step-kind.js';
import type { HostEnv } from '../pipeline/step-kind.js';
import type { EgressMode } from './sandbox.js';

/** One step's use of a backend, as its settings resolve (`backend: auto` already resolved). */
export interface BackendUse {
  step: string;
  egress: EgressMode;
  image: string | null;
  resources: { cpus?: number; memory_mb?: number; pids?: number };
  /** The backend was not written (or written `auto`): the machine chose it. */
  auto: boolean;
  /** The step runs agent attempts (what the memory check counts). */
  attempts: boolean;
  /** Its nodes run in the image an environment step builds for each task (nothing to look up beforehand). */
  builtImage: boolean;
  /** For an image template (`sweb.eval.x86_64.{instance_id}`): each task's image as its node resolved it. */
  templateImages: { name: string; id: string | null }[];
}

export interface BackendDoctorContext {
  env: HostEnv;
  /** Why `backend: auto` fell back to no isolation here, and what isolates on this machine (null: it did not). */
  fallback: { cause: string; fix: string } | null;
}

/** Memory a backend's engine already holds or may claim (a container may grow to its limit). */
export interface EngineMemory {
  /** Limit minus current use, summed over running containers that have a limit. */
  reservedBytes: number;
  /** Per container max(limit, use), summed: what the engine's memory already holds or promised. */
  heldBytes: number;
  limited: number;
  unlimited: number;
  /** The engine's own memory (it differs from the host's when the engine runs in a VM). */
  totalBytes: number;
}

export interface BackendReport {
  checks: PreflightCheck[];
  /** What the backend adds to doctor's memory check. */
  memory?: {
    /** The least one agent run of these steps reserves, in MiB (a container's memory limit). */
    perRunMb?: number;
    /** What the backend's engine holds (`memory` null: it could not be asked). */
    engine?: { name: string; memory: EngineMemory | null };
  };
}

export type BackendDoctor = (uses: readonly BackendUse[], ctx: BackendDoctorContext) => Promise<BackendReport>;
