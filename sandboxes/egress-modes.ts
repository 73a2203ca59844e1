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

/**
 * What a backend's processes run with besides their inputs, and whether a key pins it: an image
 * by ID does (its ID is in every key of a node that names it); the host's own files do not. Said
 * beside a verdict, so one whose verifier environment is not pinned is labelled so.
 */
export const ENVIRONMENT: Record<
  BackendName,
  (env: { image: string | null; hostPaths?: Readonly<Record<string, string>> }, of: { who: string; step: string }) => { pinned: boolean; text: string }
> = {
  local: (_, of) => ({ pinned: false, text: `not pinned: ${of.who} ran on the host (local), reading whatever the host holds` }),
  bubblewrap: ({ hostPaths }, of) =>
    hostPaths
      ? {
          pinned: true,
          text: `host paths ${Object.entries(hostPaths)
            .map(([p, d]) => `${p} (${d.slice(0, 12)})`)
            .join(', ')} only, each digested into every ${of.step} key`,
        }
      : {
          pinned: false,
          text: "not pinned: bubblewrap mounts the host's system directories read-only, and their contents are not in the key (declare sandbox.host_paths to pin them)",
        },
  docker: ({ image }, of) =>
    image ? { pinned: true, text: `image ${image}, pinned by ID in every ${of.step} key` } : { pinned: false, text: `not pinned: ${of.who} named no image` },
};
