import { CONFIG_ERROR, defineCommand, EXIT, fail } from '../command.js';
import { READ_STORE_OPTION, readStoresOf } from '../read-stores.js';

export const doctorCommand = defineCommand({
  name: 'doctor',
  synopsis: 'doctor',
  summary: 'preflight: names every missing prerequisite (exit 1), never half-starts',
  usage: 'pairbench doctor [options]',
  about: `Checks every prerequisite of the configured steps and names EVERY missing one with
its fix: git and tar; free disk for the store; free memory after what is already
committed (MemAvailable minus running containers' limits, never MemTotal); and what
each step kind needs (its preflight): each sandbox backend working (bwrap runnable,
dockerd answering) and each pinned image present; the agent CLIs installed at their
pinned versions; the credentials each arm needs (by name; a value is never printed);
task repositories and commits reachable. Then, when all of that passes, the agent
canary: one real turn of each run step's agent CLI in that step's own sandbox and
image, against pairbench's scripted model (no provider is contacted, nothing is
recorded), so an agent that cannot start there (a library or binary missing from the
image, a path not mounted) is named before any attempt. A canary that passed with the
same agent bytes and version, sandbox, image and machine (kept in the store, or in a
--read-store) is not run again. Exit 0 when all pass, 1 otherwise.`,
  options: [['skip-canary', null, 'check the prerequisites only; run no agent'], READ_STORE_OPTION],
  config: true,
  usesStore: true,
  exits: `0 every check passed; 1 some check failed; ${CONFIG_ERROR}.`,
  async run({ io, json, values, project }) {
    // Loaded on demand: doctor talks to Docker, and a no-op run should not pay for that.
    const readStores = readStoresOf(values['read-store'], project.ctx.store.dir);
    if (!readStores.ok) return fail(io, json, [{ message: readStores.error }], EXIT.usage);
    const { runDoctor } = await import('../doctor.js');
    return runDoctor(project, io, json, undefined, { canary: !values['skip-canary'], readStores: readStores.value });
  },
});
