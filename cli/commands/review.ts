import { writeFileAtomic } from '../../pipeline/atomic-write.js';
import { defineCommand, EXIT, fail } from '../command.js';
import { printJson } from '../json-output.js';

export const reviewCommand = defineCommand({
  name: 'review',
  synopsis: 'review BASE_CONFIG HEAD_CONFIG',
  summary: "a pull request's cohort as the base decides it: the base's protocol, the pull request's treatment",
  usage: 'pairbench review BASE_CONFIG HEAD_CONFIG --out FILE [options]',
  about: `Turns the base branch's checkout (BASE_CONFIG's directory) into the review tree of
a pull request (HEAD_CONFIG, in its checkout): everything stays the base's except the
treatment under review -- the entries of the arms that are not an analysis' control,
and the files they name -- which are taken from the pull request. Run the review
tree's config after it: the base's tasks, arms, reps, agent, model, limits, analysis
and gate, with the pull request's treatment.

Whatever else the pull request changed in what is frozen is named, field by field,
in FILE's "protocol" (the freezes of the review tree and of HEAD_CONFIG, compared);
pairbench check fails on it until the change lands on the base branch. A treatment
file that any other input reads, or that moves anything but its own digest when its
bytes change (a task's prompt, a script the config loads), is refused: FILE's
"refused" says why, and the review tree stays the base. Nothing of the pull request
runs: its config is only read.`,
  options: [
    ['out', 'FILE', 'where the review is written (JSON, for pairbench check --review)'],
    ['json', null, 'machine-readable output'],
    ['help', null, 'this help'],
  ],
  operands: { min: 2, max: 2, message: "review takes the base checkout's config and the pull request's: BASE_CONFIG HEAD_CONFIG" },
  config: false,
  exits: "0 reviewed (protocol changes and a refused treatment are in the review, not errors); 2 usage error, or the base's config does not load.",
  check: (values) => (values.out ? undefined : 'review needs --out FILE'),
  async run({ io, json, values, operands }) {
    const { review } = await import('../review.js');
    const r = await review(operands[0]!, operands[1]!, io.env);
    if (!r.ok) return fail(io, json, [{ message: r.error, hint: 'fix the base branch first: the base decides the protocol' }], EXIT.usage);
    const report = r.report;
    writeFileAtomic(values.out!, JSON.stringify(report, null, 2) + '\n');
    if (json) {
      printJson(io.stdout, { ok: true, ...report });
      return EXIT.ok;
    }
    const protocol = Object.entries(report.protocol).flatMap(([cohort, lines]) => lines.map((l) => `  ${cohort}: ${l}`));
    const lines = [
      report.refused.length
        ? `the treatment was not taken:\n${report.refused.map((l) => `  ${l}`).join('\n')}`
        : `treatment taken: ${report.treatment.files.length} file(s) (${report.treatment.files.join(', ') || 'none changed'}), ${report.treatment.entries.length} arm entr${report.treatment.entries.length === 1 ? 'y' : 'ies'}`,
      protocol.length
        ? `protocol changes (the base decides them; the check fails until they land on the base branch):\n${protocol.join('\n')}`
        : 'no protocol change',
      `wrote ${values.out}`,
    ];
    io.stdout.write(lines.join('\n') + '\n');
    return EXIT.ok;
  },
});
