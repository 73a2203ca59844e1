import { defineCommand, EXIT, usageError } from '../command.js';
import { printJson, printJsonErrors } from '../json-output.js';

export const generateCommand = defineCommand({
  name: 'generate',
  synopsis: 'generate KIND',
  summary: "derive tasks from a repo's own test suite (stub_function, revert_reimplement)",
  usage: 'pairbench generate stub_function|revert_reimplement --repo DIR --commit REV --out DIR [options]',
  about: `Derives tasks from a repository's own test suite, deterministically for (commit,
seed), and writes each as a task directory (task.yaml, setup.patch, solution.patch)
a person can read and freeze. stub_function replaces an exported function's body
with a throw (JS/TS) or raise NotImplementedError (Python); revert_reimplement puts
a file recently changed by a small commit back to its parent version. The covering
tests are found by running the suite. Every candidate goes through the
discrimination check (its verifier fails on the starting tree and passes with the
solution) and certify's static scan (nothing of the solution left in the tree);
failures are dropped with a reason. --count is an upper bound: what was found is
written. With --add-to CONFIG the new task ids join the task matrix of every step of
CONFIG that reads its tasks from --out (init's unwritten placeholder task leaves it).`,
  options: [
    ['repo', 'DIR', 'a local git repository (read from git objects, never its working tree)'],
    ['commit', 'REV', 'a commit, branch or tag (HEAD too), frozen to its full id in the tasks'],
    ['out', 'DIR', 'where task directories are written'],
    ['seed', 'N', 'orders the candidates (default 0)'],
    ['count', 'N', 'at most how many tasks (default 5)'],
    ['add-to', 'CONFIG', "add the new task ids to CONFIG's task matrix (edited in place, comments kept)"],
    ['language', 'js|python', "(default: the repository's: package.json is js, pyproject.toml, setup.py, setup.cfg, pytest.ini or tox.ini python)"],
    [
      'test-command',
      'CMD',
      "runs the suite with per-test results (default: the repository's own:\npackage.json scripts.test when it is vitest, jest, mocha, tape or node --test; pytest)",
    ],
    ['repeats', 'N', 'discrimination check repeats (default 2)'],
    ['jobs', 'N', "candidates checked at once (default: --add-to CONFIG's concurrency.global, else 4 or the cores, if fewer)"],
    ['json', null, 'machine-readable output'],
    ['help', null, 'this help'],
  ],
  operands: { min: 1, max: 1, message: 'generate takes exactly one KIND: stub_function or revert_reimplement' },
  config: false,
  exits: '0 tasks written (up to --count); 1 refused (no valid task, or --add-to could not add them; said why); 2 usage error.',
  async run({ io, json, values, operands }) {
    const { generate } = await import('../generate.js');
    const outcome = await generate(
      {
        kind: operands[0]!,
        repo: values.repo,
        commit: values.commit,
        seed: values.seed,
        count: values.count,
        language: values.language,
        testCommand: values['test-command'],
        out: values.out,
        repeats: values.repeats,
        addTo: values['add-to'],
        jobs: values.jobs,
      },
      (line) => {
        if (!json) io.stderr.write(line + '\n');
      },
    );
    switch (outcome.status) {
      case 'usage':
        return usageError(io, json, 'generate', outcome.message);
      case 'refused':
        if (json) printJsonErrors(io.stdout, [{ message: outcome.message }]);
        else io.stderr.write(`pairbench generate: ${outcome.message}\n`);
        return EXIT.nodeFailed;
      case 'ok': {
        const { report, asked, commit, added } = outcome;
        const { tasks, dropped } = report;
        if (json) printJson(io.stdout, { ok: true, commit: commit.id, asked, tasks, dropped, added_to: added });
        else {
          const lines = commit.given === commit.id ? [] : [`${commit.given} is commit ${commit.id} (the tasks are pinned to it)`];
          lines.push(...tasks.map((t) => `wrote ${t.dir}  (${t.file}; fail_to_pass: ${t.covering.join(', ')})`));
          for (const d of dropped) lines.push(`dropped ${d.candidate}: ${d.reason}`);
          lines.push(`${tasks.length} task${tasks.length === 1 ? '' : 's'} written (up to ${asked} asked for), ${dropped.length} candidates dropped`);
          if (added?.ok) {
            if (added.removedPlaceholders.length)
              lines.push(`removed ${added.removedPlaceholders.join(', ')} from the matrix (init's placeholder, never written; its files are kept)`);
            lines.push(
              added.added.length
                ? `added ${added.added.join(', ')} to ${values['add-to']} (steps ${added.steps.join(', ')})`
                : `${values['add-to']} already lists every task`,
            );
            lines.push('next: pairbench doctor && pairbench plan');
          } else if (!added) lines.push("next: add the task ids to your config's task matrix (or run again with --add-to bench.config.yaml)");
          io.stdout.write(lines.join('\n') + '\n');
        }
        if (added && !added.ok) {
          if (!json) io.stderr.write(`pairbench generate: the tasks are written, but ${added.message}\n  hint: ${added.hint}\n`);
          return EXIT.nodeFailed;
        }
        return EXIT.ok;
      }
    }
  },
});
