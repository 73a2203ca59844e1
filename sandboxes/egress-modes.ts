import type { EgressMode } from './sandbox.js';

export const SANDBOX_BACKENDS = ['local', 'bubblewrap', 'docker'] as const;
export type BackendName = (typeof SANDBOX_BACKENDS)[number];

/**
 * The egress modes each backend runs (enforced, or `open` recorded as not enforced); it refuses
 * the others when a sandbox is made. Known before any backend is loaded, so that `plan` refuses
 * what `run` would: the backends' create() consult this table too.
 */
export const EGRESS_MODES: Record<BackendName, readonly EgressMode[]> = {
  local: ['open'],
  bubblewrap: ['none', 'allowlist', 'open'],
  docker: ['none', 'allowlist', 'open'],
};
