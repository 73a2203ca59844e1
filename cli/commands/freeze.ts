import { admitCohorts } from '../cohorts.js';
import { ANY_OPERANDS, CONFIG_ERROR, defineCommand, EXIT, fail } from '../command.js';
import { printJson } from '../json-output.js';
import { chosenCohorts } from './cohort-selection.js';
import { lockWith, readLock, writeLock } from '../../steps/record-lock.js';
import { recordKey } from '../../pipeline/store/record-key.js';

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
moved or cut short is found. Each entry is signed with the record key, which lives
outside the store ($PAIRBENCH_RECORD_KEY, or one made in ~/.config/pairbench).
freeze writes CONFIG.lock beside the config: each cohort's version, freeze digest
and record head, with the keys that signed it. Commit it: run refuses a store
whose record does not begin with it (cut short, rewritten, re-signed, or a
fresh store drawing the version again), and on a pull request the base's lock
is the anchor.`,
  options: [
    [
      'relock',
      null,
      `write the lock again from this store's record even where it disagrees
with the lock there now (after restoring a record, or to re-anchor on purpose:
the change shows in the lock's diff, for review)`,
    ],
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
    const lock = readLock(project.config.configFile);
    if (!lock.ok) return fail(io, json, [{ message: lock.problem }]);
    const admitted = await admitCohorts(project.ctx, chosen.cohorts, {
      acknowledgeReset: Boolean(values['acknowledge-reset']),
      ...(lock.lock && !values['relock'] ? { lock: { path: lock.path, lock: lock.lock } } : {}),
    });
    if (admitted.refusals.length) {
      if (!json) for (const n of admitted.notes) io.stderr.write(`${n}\n`);
      return fail(
        io,
        json,
        admitted.refusals.map((message) => ({ message })),
      );
    }
    // The record's head as it is now, anchored in a file to commit with the config.
    const written = writeLock(
      project.config.configFile,
      lockWith(
        lock.lock,
        chosen.cohorts.map((c) => {
          const read = project.ctx.store.logs.read(c.name);
          return { name: c.name, version: c.version, freeze_digest: c.freeze.digest, entries: read.ok ? read.entries : [] };
        }),
        recordKey().id,
      ),
    );
    if (json)
      printJson(io.stdout, {
        ok: true,
        cohorts: chosen.cohorts.map((c) => ({ cohort: c.name, version: c.version, freeze_digest: c.freeze.digest, fields: c.freeze.fields })),
        lock: written,
        notes: admitted.notes,
      });
    else
      io.stdout.write(
        [
          ...admitted.notes,
          ...chosen.cohorts.map((c) => `cohort ${c.name} version ${c.version}: freeze ${c.freeze.digest}`),
          `anchored in ${written}: commit it with the config (run refuses a store whose record does not begin with it)`,
        ].join('\n') + '\n',
      );
    return EXIT.ok;
  },
});
