import type { BackendDoctor } from './backend-doctor.js';
import type { BackendName } from './egress-modes.js';
import { localBackend } from './local.js';
import type { SandboxBackend } from './sandbox.js';

export { EGRESS_MODES, SANDBOX_BACKENDS, type BackendName } from './egress-modes.js';

/**
 * The sandbox backends: each one's module and what doctor checks for it, loaded only when used
 * (a plan loads none, a run only the backends its steps name). Adding one is its module, its
 * doctor module, its line here and its name and egress modes in egress-modes.ts.
 */
const BACKENDS: Record<BackendName, { load(): Promise<SandboxBackend>; doctor(): Promise<BackendDoctor> }> = {
  local: { load: async () => localBackend, doctor: async () => (await import('./local-doctor.js')).localDoctor },
  bubblewrap: {
    load: async () => (await import('./bubblewrap.js')).bubblewrapBackend,
    doctor: async () => (await import('./bubblewrap-doctor.js')).bubblewrapDoctor,
  },
  docker: { load: async () => (await import('./docker.js')).dockerBackend(), doctor: async () => (await import('./docker-doctor.js')).dockerDoctor },
};

/** A backend by name. */
export function sandboxBackend(name: BackendName): Promise<SandboxBackend> {
  return BACKENDS[name].load();
}

/** What doctor checks for a backend (sandboxes/backend-doctor.ts). */
export function backendDoctor(name: BackendName): Promise<BackendDoctor> {
  return BACKENDS[name].doctor();
}
