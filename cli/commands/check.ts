import { writeFileAtomic } from '../../pipeline/atomic-write.js';
import { defineCommand, EXIT, fail } from '../command.js';
import { printJson } from '../json-output.js';

const BASE_MISSING = ['not-run', 'no-config', 'push'] as const;

export const checkCommand = defineCommand({
  name: 'check',
  synopsis: 'check HEAD_BUNDLES',
  summary: "a pull request's check: head against base, the base's gate, one comment",
  usage: 'pairbench check HEAD_BUNDLES [--base BASE_BUNDLES] [--review FILE] [options]',
  about: `The pull request's check over the bundles export --out wrote for the head (the
review tree's run) and for the base. The base decides: the gate its analysis
preregistered (analyze gate:, or the default: negative, unisolated, invalid,
regression, new-harm) judges the head's own verdicts and the head against the base,
paired by task -- regression (the head's effect significantly below the base's,
one-sided exact test at the cohort's alpha), new-harm (more tasks the head hurts in
every rep, that the base did not, than no change gives), not-noninferior (the head not
shown within the preregistered margin) -- and any protocol change the review names
fails it. Prints the comment (Markdown, bottom line first; every string a pull request
or an agent controls is inert), or writes it to --out.`,
  options: [
    ['base', 'DIR', "the base's bundles (absent or missing: see --base-missing)"],
    [
      'base-missing',
      'WHY',
      `why the base has no bundle: not-run (default: the gates against it fail,
since the check does not pass a change it did not compare), no-config (the
base branch has no config yet) or push (the head is the base branch: no
comparison); with these two only the head's own verdicts count`,
    ],
    ['fail-on', 'LIST', "verdicts and gates added to the base's preregistered gate (never taken from it)"],
    ['review', 'FILE', 'what pairbench review wrote: the treatment taken and the protocol changes'],
    ['link', 'URL', 'where the bundles are (the run page with the artifact), linked from the comment'],
    ['base-label', 'TEXT', 'how the base is named in the comment (e.g. its commit)'],
    ['head-label', 'TEXT', 'how the head is named'],
    ['out', 'FILE', 'write the comment to FILE instead of printing it'],
    ['json', null, 'machine-readable output'],
    ['help', null, 'this help'],
  ],
  operands: { min: 1, max: 1, message: "check takes the head's bundle directory (export --out): HEAD_BUNDLES" },
  config: false,
  exits: `0 the check passed; ${EXIT.gateFailed} it failed (a gate, a protocol change, a refused treatment); 1 a bundle does not match its manifest; 2 usage error.`,
  check: (values) => {
    const m = values['base-missing'];
    if (m !== undefined && !(BASE_MISSING as readonly string[]).includes(m)) return `--base-missing is ${BASE_MISSING.join(' or ')}, not "${m}"`;
    const link = values.link;
    if (link !== undefined && !(/^https?:\/\//.test(link) && URL.canParse(link))) return `--link takes an http(s) URL, not "${link}"`;
    return undefined;
  },
  async run({ io, json, values, operands }) {
    const { prCheck } = await import('../pr-check.js');
    const r = await prCheck({
      head: operands[0]!,
      base: values.base,
      baseMissing: (values['base-missing'] as (typeof BASE_MISSING)[number] | undefined) ?? 'not-run',
      ...(values['fail-on'] ? { failOn: values['fail-on'] } : {}),
      review: values.review,
      link: values.link,
      labels: { base: values['base-label'] ?? 'the base', head: values['head-label'] ?? 'the head' },
    });
    if (!r.ok) return fail(io, json, r.error, EXIT.nodeFailed);
    const { prComment } = await import('../../report/pr-comment.js');
    const comment = prComment(r.value);
    if (values.out !== undefined) writeFileAtomic(values.out, comment);
    if (json)
      printJson(io.stdout, {
        ok: true,
        passed: r.value.passed,
        cohorts: r.value.cohorts.map((c) => ({
          node: c.node,
          cohort: c.check.cohort,
          gate: c.check.gate,
          failures: c.check.failures,
          notes: c.check.notes,
          diff: c.diff,
          sizing: c.sizing,
        })),
        review: r.value.review,
        comment,
      });
    else if (values.out === undefined) io.stdout.write(comment);
    else io.stdout.write(`${comment.split('\n')[0]}\nwrote ${values.out}\n`);
    return r.value.passed ? EXIT.ok : EXIT.gateFailed;
  },
});
