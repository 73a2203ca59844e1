import type { BackendName } from '../sandboxes/index.js';
import type { EgressMode } from '../sandboxes/sandbox.js';

/** A step's `sandbox:` block as the run, verify and environment kinds read it (types only: no cycle between them). */
export interface SandboxSettings {
  backend?: BackendName | 'auto';
  egress?: EgressMode;
  allow?: string[];
  image?: string;
  resources?: { cpus?: number; memory_mb?: number; pids?: number };
  host_paths?: string[];
}
