import { admitCohorts } from '../cohorts.js';
import { ANY_OPERANDS, CONFIG_ERROR, defineCommand, EXIT, fail } from '../command.js';
import { printJson } from '../json-output.js';
import { chosenCohorts } from './cohort-selection.js';

export const freezeCommand = defineCommand({
  name: 'freeze',
  synopsis: 'freeze [COHORT]',
  summary: "record a cohort version's freeze digest (a run does it too)",
  usage: 'pairbench freeze [COHORT...] [options]',
  about: `A cohort is an analyze step. Its freeze is derived from the graph: the key inputs
of every node upstream of it (prompts, repositories and commits, verifier bytes,
treatments and the steps that make them, agent and model, image and resources,
caps, admission policy, every step's config, sample size and attempt order) and its
own analysis, whatever their kind. A version is bound to its freeze at its first
observation (an attempt executed, or an analysis, look, gate or export produced or
reused); after that 'run' refuses any change, naming the step and field, until
"version" is bumped. The record is a hash-chained log in the store; every record an
attempt leaves names the registration it was made under, so a registry that was
moved or cut short is found.`,
  options: [
    [
      'acknowledge-reset',
      null,
      `go on in this store although its records name registrations
its registry lost (moved, cut short, rewritten): the gap is
written into the registry and every later bundle says so`,
    ],
  ],
  operands: ANY_OPERANDS,
  config: true,
  usesStore: false,
  exits: `0 frozen (or already frozen with the same fields); ${CONFIG_ERROR}, an unknown cohort, a frozen field changed after the version was bound, or a registry that lost what the store's records name.`,
  async run(inv) {
    const { io, json, values, project } = inv;
    const chosen = chosenCohorts(inv);
    if ('code' in chosen) return chosen.code;
    const admitted = await admitCohorts(project.ctx, chosen.cohorts, { acknowledgeReset: Boolean(values['acknowledge-reset']) });
    if (admitted.refusals.length) {
      if (!json) for (const n of admitted.notes) io.stderr.write(`${n}\n`);
      return fail(
        io,
        json,
        admitted.refusals.map((message) => ({ message })),
      );
    }
    if (json)
      printJson(io.stdout, {
        ok: true,
        cohorts: chosen.cohorts.map((c) => ({ cohort: c.name, version: c.version, freeze_digest: c.freeze.digest, fields: c.freeze.fields })),
        notes: admitted.notes,
      });
    else
      io.stdout.write([...admitted.notes, ...chosen.cohorts.map((c) => `cohort ${c.name} version ${c.version}: freeze ${c.freeze.digest}`)].join('\n') + '\n');
    return EXIT.ok;
  },
});
