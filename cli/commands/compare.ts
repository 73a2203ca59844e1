import { writeFileAtomic } from '../../pipeline/atomic-write.js';
import type { RunSide } from '../../stats/run-diff.js';
import { sideOf } from '../bundle-side.js';
import { defineCommand, EXIT, fail } from '../command.js';
import { printJson } from '../json-output.js';

export const compareCommand = defineCommand({
  name: 'compare',
  synopsis: 'compare BASE HEAD',
  summary: 'two bundles of a cohort compared task by task (the pull-request comment)',
  usage: 'pairbench compare BASE_BUNDLE HEAD_BUNDLE [options]',
  about: `Compares two exported bundles of a cohort (the base branch's and the pull request's),
comparison by comparison: the verdict and effect on each side, the change in effect
(head - base) paired by task over the tasks both share with its interval, the tasks
whose outcome flipped, and the change in cost per attempt. Runs that differ in tasks,
agent, model, isolation or scripting are named as such; where agent, model or
isolation differ no effect change is estimated. Each bundle is checked against its
manifest first. Prints Markdown (the comment the GitHub Action posts); --html writes
the same table as a page.`,
  options: [
    ['html', 'FILE', 'also write the comparison as an HTML page to FILE'],
    ['json', null, 'machine-readable output'],
    ['help', null, 'this help'],
  ],
  operands: { min: 2, max: 2, message: 'compare takes two bundle directories: BASE and HEAD' },
  config: false,
  exits: '0 compared (a mismatch between the runs is named, not an error);\n1 a bundle does not match its manifest or is not a bundle; 2 usage error.',
  async run({ io, json, values, operands }) {
    const sides = await Promise.all(operands.map((dir) => sideOf(dir)));
    const problems = sides.flatMap((s) => ('problem' in s ? [s.problem] : []));
    if (problems.length) return fail(io, json, problems, EXIT.nodeFailed);
    const [base, head] = sides.map((s) => (s as { side: RunSide }).side) as [RunSide, RunSide];
    const { diffRuns } = await import('../../stats/run-diff.js');
    const { runDiffHtml, runDiffMarkdown } = await import('../../report/run-diff.js');
    const diff = diffRuns(base, head);
    if (values.html !== undefined) writeFileAtomic(values.html, runDiffHtml(diff));
    if (json) printJson(io.stdout, { ok: true, ...diff });
    else io.stdout.write(runDiffMarkdown(diff));
    return EXIT.ok;
  },
});
