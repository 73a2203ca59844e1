import { CONFIG_ERROR, defineCommand } from '../command.js';

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
image, a path not mounted) is named before any attempt. Exit 0 when all pass, 1
otherwise.`,
  options: [['skip-canary', null, 'check the prerequisites only; run no agent']],
  config: true,
  usesStore: true,
  exits: `0 every check passed; 1 some check failed; ${CONFIG_ERROR}.`,
  async run({ io, json, values, project }) {
    // Loaded on demand: doctor talks to Docker, and a no-op run should not pay for that.
    const { runDoctor } = await import('../doctor.js');
    return runDoctor(project, io, json, undefined, { canary: !values['skip-canary'] });
  },
});
