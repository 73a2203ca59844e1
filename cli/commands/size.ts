import { ANY_OPERANDS, CONFIG_ERROR, defineCommand, EXIT } from '../command.js';
import { printJson } from '../json-output.js';
import { chosenCohorts } from './cohort-selection.js';

const fraction = (name: string) => (v: string) =>
  Number(v) > 0 && Number(v) <= 1 ? undefined : `--${name} takes a fraction in (0, 1], such as 0.3, not "${v}"`;

export const sizeCommand = defineCommand({
  name: 'size',
  synopsis: 'size [COHORT...]',
  summary: "before anyone pays: what a cohort's pull-request gates can see at its size, what size they need, and its price",
  usage: 'pairbench size [COHORT...] [options]',
  about: `The planner. For each cohort (an analyze step), at its size (tasks x reps x arms),
its alpha and power and its gate (analyze gate: detect, noninferiority_margin):
how often regression catches a drop of 'detect' and the tasks it needs at these reps
and at others, the fewest tasks hurt in every rep that new-harm fails on, how often
not-noninferior fails a pull request that changes nothing and the tasks its margin
needs, from how many reps one task shows a flip on its own -- each by simulating pull
requests through the check's own tests -- and what the size costs at the price per
attempt of the cohort's recorded attempts (or --cost-per-attempt; pairbench probe
measures one). The treatment's pass rate per task is the cohort's last analysis in
the store, else the worst case. doctor and the pull-request comment say when a
configured gate cannot be met at the cohort's size.`,
  options: [
    ['detect', 'DROP', "the drop regression must catch (default: the gate's detect, 0.3)"],
    ['margin', 'M', "not-noninferior's margin (default: the gate's noninferiority_margin)"],
    ['baseline', 'P', "the treatment's pass rate for every task (default: the last analysis, else the worst case)"],
    ['cost-per-attempt', 'USD', 'the price of one attempt (default: the recorded attempts)'],
  ],
  operands: ANY_OPERANDS,
  config: true,
  usesStore: false,
  exits: `0 sized (a gate the size cannot carry is a warning, not an error); ${CONFIG_ERROR}, or an unknown cohort.`,
  check: (values) =>
    (['detect', 'margin', 'baseline'] as const).map((k) => (values[k] === undefined ? undefined : fraction(k)(values[k]!))).find(Boolean) ??
    (values['cost-per-attempt'] !== undefined && !(Number(values['cost-per-attempt']) >= 0)
      ? `--cost-per-attempt takes a price in USD, such as 0.12, not "${values['cost-per-attempt']}"`
      : undefined),
  async run(inv) {
    const chosen = chosenCohorts(inv);
    if ('code' in chosen) return chosen.code;
    const { io, json, values, project } = inv;
    const { sizeCohort, sizeLines } = await import('../size.js');
    const given = { detect: values.detect, margin: values.margin, baseline: values.baseline, costPerAttempt: values['cost-per-attempt'] };
    const flags = Object.fromEntries(Object.entries(given).flatMap(([k, v]) => (v === undefined ? [] : [[k, Number(v)]])));
    const sizes = [];
    for (const c of chosen.cohorts) sizes.push(await sizeCohort(project, c, flags));
    if (json) printJson(io.stdout, { ok: true, cohorts: sizes });
    else io.stdout.write(sizes.flatMap(sizeLines).join('\n') + '\n');
    return EXIT.ok;
  },
});
