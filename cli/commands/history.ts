import { historyLines } from '../../steps/preregistration.js';
import { registryOf } from '../cohorts.js';
import { ANY_OPERANDS, CONFIG_ERROR, defineCommand, EXIT, fail } from '../command.js';
import { printJson } from '../json-output.js';
import { chosenCohorts } from './cohort-selection.js';

export const historyCommand = defineCommand({
  name: 'history',
  synopsis: 'history [COHORT]',
  summary: "a cohort's versions: freeze digests, dates, what each observed",
  usage: 'pairbench history [COHORT...] [options]',
  about: `Every registered version of a cohort: its freeze digest, when it was frozen and
bound, how many attempts it executed, and every observation it made (the verdicts,
when, by which node, and which attempts it reused from which version), from the
store's hash-chained registry log (a broken chain is an error).`,
  options: [],
  operands: ANY_OPERANDS,
  config: true,
  usesStore: false,
  exits: `0 listed; ${CONFIG_ERROR}, or an unknown cohort.`,
  async run(inv) {
    const { io, json, project } = inv;
    const chosen = chosenCohorts(inv);
    if ('code' in chosen) return chosen.code;
    const registry = registryOf(project.ctx);
    const read = chosen.cohorts.map((c) => ({ c, r: registry.read(c.name) }));
    const broken = read.flatMap(({ c, r }) => (r.ok ? [] : [{ message: `cohort ${c.name}: its registry log is broken: ${r.problem}` }]));
    if (broken.length) return fail(io, json, broken, EXIT.nodeFailed);
    const records = read.flatMap(({ r }) => (r.ok ? [r.record] : []));
    if (json) printJson(io.stdout, { ok: true, cohorts: records });
    else io.stdout.write(records.flatMap(historyLines).join('\n') + '\n');
    return EXIT.ok;
  },
});
