import { join } from 'node:path';
import { defineCommand, EXIT, fail, usageError } from '../command.js';
import { printJson } from '../json-output.js';

export const initCommand = defineCommand({
  name: 'init',
  synopsis: 'init [DIR]',
  summary: 'scaffold a commented cohort and a first task (--repo PATH [--commit REV])',
  usage: 'pairbench init [DIR] --repo PATH [--commit REV] [options]',
  about: `Scaffolds a cohort in DIR (default: here): bench.config.yaml (two arms, with and
without the context file under test, every step commented), tasks/first-task/task.yaml
pinned to the full id of REV (default HEAD) of the repository at PATH, and
context/CLAUDE.md. What a person must write (the prompt, the verifier, the context) is
marked in place. Never overwrites a file.`,
  options: [
    ['repo', 'PATH', "a local git repository: the first task's starting point"],
    ['commit', 'REV', 'the commit (default HEAD), recorded as its full id'],
    ['test-command', 'CMD', "the first task's verifier (default: npm test when package.json\nhas a test script, python -m pytest -q for a Python project)"],
    ['fake-model', null, 'a scripted model (model/fake-model.json) instead of a provider:\ndoctor, probe and run work end to end before any key is set'],
    ['json', null, 'machine-readable output'],
    ['help', null, 'this help'],
  ],
  operands: { min: 0, max: 1, message: 'init takes at most one DIR' },
  config: false,
  exits: '0 written; 2 usage error, DIR already has a config (or one of the files), or PATH has no such commit.',
  async run({ io, json, values, operands }) {
    const { init } = await import('../init.js');
    const outcome = init({
      dir: operands[0] ?? '.',
      repo: values.repo,
      commit: values.commit,
      testCommand: values['test-command'],
      fakeModel: values['fake-model'] === true,
    });
    if (outcome.status !== 'ok') {
      return outcome.status === 'usage'
        ? usageError(io, json, 'init', outcome.message)
        : fail(io, json, [{ message: outcome.message, ...(outcome.hint ? { hint: outcome.hint } : {}) }]);
    }
    if (json) printJson(io.stdout, { ok: true, dir: outcome.dir, commit: outcome.commit, files: outcome.files });
    else {
      io.stdout.write(
        [
          ...outcome.files.map((f) => `wrote ${f}`),
          `next: write the context in context/CLAUDE.md and the tasks: tasks/first-task/task.yaml by hand, or derived from the repository's tests with`,
          `  pairbench generate stub_function --repo ${outcome.repo} --commit ${outcome.commit} --out ${join(outcome.dir, 'tasks')} --add-to ${join(outcome.dir, 'bench.config.yaml')}`,
          `then (in ${outcome.dir}) pairbench doctor && pairbench plan`,
        ].join('\n') + '\n',
      );
    }
    return EXIT.ok;
  },
});
