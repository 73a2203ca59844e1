import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Diagnostic } from '../../pipeline/diagnostic.js';
import { parseJsonArtifact } from '../../pipeline/artifact.js';
import { writeFileAtomic } from '../../pipeline/atomic-write.js';
import type { RunSide } from '../../stats/run-diff.js';
import { RESULTS_FILE } from '../../steps/bundle-layout.js';
import { defineCommand, EXIT, fail } from '../command.js';
import { printJson } from '../json-output.js';

/** A bundle as one side of the comparison: its files checked against its manifest, its results by their descriptor. */
async function sideOf(dir: string): Promise<{ side: RunSide } | { problem: Diagnostic }> {
  const hint = 'give the directory pairbench export --out wrote';
  if (!existsSync(join(dir, 'manifest.json'))) return { problem: { message: `${dir} is not a bundle: it has no manifest.json`, hint } };
  const { mismatchedFiles, verifyBundle } = await import('../../report/bundle.js');
  const checked = verifyBundle(dir);
  if (!checked.ok) {
    const files = mismatchedFiles(checked.error).map(({ file, how }) => `${file} ${how}`);
    return {
      problem: {
        message: `${dir} does not match its manifest.json (${files.slice(0, 5).join(', ')}${files.length > 5 ? `, and ${files.length - 5} more` : ''}): it is not the bundle that was exported`,
        hint: `run 'pairbench verify-bundle ${dir}' for every file, and export the bundle again`,
      },
    };
  }
  const results = parseJsonArtifact(RESULTS_FILE, readFileSync(join(dir, RESULTS_FILE.name), 'utf8'), dir);
  if (!results.ok) return { problem: { message: results.error, hint } };
  const r = results.value;
  return { side: { label: dir, cohort: r.cohort, version: r.version, analysis: r.analysis, attempts: r.attempts } };
}

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
    const sides = await Promise.all(operands.map(sideOf));
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
