import type { SandboxBackend } from './sandbox.js';
import { localBackend } from './local.js';

export const SANDBOX_BACKENDS = ['local', 'bubblewrap', 'docker'] as const;
export type BackendName = (typeof SANDBOX_BACKENDS)[number];

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
