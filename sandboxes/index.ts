import type { SandboxBackend } from './sandbox.js';
import type { BackendName } from './egress-modes.js';
import { localBackend } from './local.js';

export { EGRESS_MODES, SANDBOX_BACKENDS, type BackendName } from './egress-modes.js';

/** Backends by name; the isolating ones are loaded only when used. */
export async function sandboxBackend(name: BackendName): Promise<SandboxBackend> {
  switch (name) {
    case 'local':
      return localBackend;
    case 'bubblewrap':
      return (await import('./bubblewrap.js')).bubblewrapBackend;
    case 'docker':
      return (await import('./docker.js')).dockerBackend();
  }
}
