/**
 * `pairbench init [DIR] --repo PATH [--commit REV] [--test-command CMD]`: scaffolds a
 * commented cohort (bench.config.yaml), a first task pinned to a commit of the user's
 * repository, and the context file under test, so `pairbench plan` works at once and
 * every field a person must decide is marked in place. Never overwrites a file.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { packageRoot } from '../pipeline/package-root.js';

export interface InitOptions {
  dir: string;
  repo: string | undefined;
  commit: string | undefined;
  testCommand: string | undefined;
  /** Scaffold a scripted model (model/fake-model.json) instead of a provider: doctor, probe and run work before any key is set. */
  fakeModel?: boolean;
}

export type InitOutcome =
  { status: 'usage' | 'refused'; message: string; hint?: string } | { status: 'ok'; dir: string; files: string[]; commit: string; repo: string };

/** The repository's own test command, when it says one: npm's test script, else pytest for a Python project. */
function guessTestCommand(repo: string, commit: string): string | undefined {
  const show = (path: string) => spawnSync('git', ['-C', repo, 'show', `${commit}:${path}`], { encoding: 'utf8' });
  const pkg = show('package.json');
  if (pkg.status === 0) {
    try {
      if ((JSON.parse(pkg.stdout) as { scripts?: { test?: string } }).scripts?.test) return 'npm test';
    } catch {
      // not JSON: no guess from it
    }
  }
  if (show('pyproject.toml').status === 0 || show('setup.py').status === 0) return 'python -m pytest -q';
  return undefined;
}

const yamlString = (s: string) => JSON.stringify(s);

const PROVIDER_LINES = `    # The provider, through pairbench's recording gateway; the key is read from this variable.
    model: { upstream: https://api.anthropic.com, api_key_env: ANTHROPIC_API_KEY }`;

const FAKE_MODEL_LINES = `    # A scripted model on this machine (model/fake-model.json; its format: schemas/fake-model.schema.json):
    # the real agent CLI runs against it, with no key and no network. For a real model, replace
    # this line with: model: { upstream: https://api.anthropic.com, api_key_env: ANTHROPIC_API_KEY }
    model: { fake_script: model/fake-model.json }`;

/** A first scripted model: it reads the instructions and the file list, then stops without a change. */
export const FAKE_MODEL_SCRIPT = {
  $schema: '',
  turns: [
    {
      text: "Reading the project's instructions and its files first.",
      tool_calls: [
        {
          name: 'Bash',
          input: { command: 'cat CLAUDE.md 2>/dev/null; git ls-files 2>/dev/null | head -50 || ls', description: 'Read the instructions and list the files' },
        },
      ],
      usage: { input_tokens: 1500, output_tokens: 40 },
    },
    {
      text: 'Done. (A scripted model: it changes nothing. Write turns that do in model/fake-model.json, or point the run step at a real provider.)',
      usage: { input_tokens: 1800, output_tokens: 30 },
    },
  ],
};

function configText(schema: string, repoFromTask: string, commit: string, fakeModel: boolean): string {
  return `# yaml-language-server: $schema=${schema}
#
# A cohort: the same tasks through the same agent in two arms, with and without the
# context under test (context/CLAUDE.md), scored by each task's hidden verifier.
#
#   pairbench doctor     # every prerequisite, named with its fix
#   pairbench plan       # what would run, and why
#   pairbench run        # everything, cached; run it again and nothing re-runs
#   pairbench export --out report/
#
# Before the first run: write the first task's prompt and verifier
# (tasks/first-task/task.yaml), the context under test (context/CLAUDE.md), and add
# tasks (one directory each, or 'pairbench generate'). A claim needs at least 6
# independent tasks; the frozen fields lock at the first attempt (bump version to change them).
store: { path: .pairbench }
concurrency: { global: 4, kinds: { run: 2 } }

steps:
  materialize:
    kind: materialize
    description: Each task's pinned commit as a tree the agent works on (instruction files redacted).
    tasks: &tasks tasks
    matrix: &task { task: &ids [first-task] }

  certify:
    kind: certify
    description: Before any attempt, the verifier fails on the starting tree and nothing leaks it.
    needs: [materialize]
    tasks: *tasks
    matrix: *task
    sandbox: { backend: auto }

  attempts:
    kind: run
    description: One attempt per task x arm x rep; the arms differ only in the context file.
    needs: [materialize, certify]
    tasks: *tasks
    matrix: &attempt { task: *ids, arm: [control, claude-md], rep: 3 }
    agent: { adapter: claude-code, model: claude-sonnet-4-5 }
    arms:
      control: {}
      claude-md: { files: { CLAUDE.md: context/CLAUDE.md } }
    limits: { turns: 30, wall_seconds: 900, tokens: 400000, cost_usd: 2 }
    sandbox: { backend: auto }
${fakeModel ? FAKE_MODEL_LINES : PROVIDER_LINES}
    order_seed: 1

  verify:
    kind: verify
    description: The attempt's changes on a fresh tree; the hidden verifier in a fresh sandbox.
    needs: [materialize, attempts]
    tasks: *tasks
    matrix: *attempt
    sandbox: { backend: auto }

  audit:
    kind: audit
    description: Accepted or excluded, with a reason code.
    needs: [attempts, verify]
    tasks: *tasks
    matrix: *attempt

  context-file:
    kind: analyze
    description: Paired statistics and the verdict.
    version: 1
    needs: [audit]
    control: control
    treatments: [claude-md]

  export:
    kind: export
    needs: [materialize, certify, attempts, verify, audit, context-file]
    cohort: context-file
# The first task's repository: ${repoFromTask} at ${commit}.
`;
}

/** Marks init's first task until a person edits it: 'generate --add-to' then replaces it in the matrix. */
export const INIT_PLACEHOLDER_MARK = '# pairbench init: a placeholder task (delete this line once you write it)';

function taskText(schema: string, repoFromTask: string, commit: string, testCommand: string | undefined): string {
  return `# yaml-language-server: $schema=${schema}
${INIT_PLACEHOLDER_MARK}
id: first-task
family: first-task          # tasks of one family are dependent: the unit of the test is the family
category: bugfix
repo:
  path: ${yamlString(repoFromTask)}
  commit: ${commit}
# What the agent is asked, exactly as it will read it. Never name the verifier or the fix.
prompt: >-
  Describe the change the agent must make in this repository (write it here).
allowed_paths: ["**"]       # where the agent may write; anything else is an out-of-bounds write
verifier:
  # Hidden from the agent. It must fail on the commit above and pass once the task is done
  # (certify checks both before any attempt).
  fail_to_pass:
    tests: ${yamlString(testCommand ?? 'exit 1  # the command that checks the task is done')}
  timeout: 300
# The reference fix, so certify can check the verifier passes with it:
# solution: { patch: solution.patch }
`;
}

const CONTEXT = `# The context under test

Write here what the claude-md arm receives (its CLAUDE.md); the control arm receives nothing.
`;

export function init(o: InitOptions): InitOutcome {
  if (!o.repo) return { status: 'usage', message: 'missing --repo PATH: the local git repository the first task starts from' };
  const dir = resolve(o.dir);
  const configFile = join(dir, 'bench.config.yaml');
  if (existsSync(configFile))
    return { status: 'refused', message: `${configFile} exists: init never overwrites a file`, hint: 'edit that config, or give init another directory' };
  const repo = resolve(o.repo);
  const rev = spawnSync('git', ['-C', repo, 'rev-parse', '--verify', '--quiet', `${o.commit ?? 'HEAD'}^{commit}`], { encoding: 'utf8' });
  if (rev.status !== 0) {
    return {
      status: 'refused',
      message: `${repo} has no commit ${o.commit ?? 'HEAD'}${rev.stderr.trim() ? ` (${rev.stderr.trim()})` : ''}`,
      hint: 'give --repo a local git repository, and --commit one of its commits',
    };
  }
  const commit = rev.stdout.trim();
  const taskDir = join(dir, 'tasks', 'first-task');
  // The editor's schema: the installed package's, relative to each file.
  const schema = (from: string, name: string) => relative(from, join(packageRoot(), 'schemas', name));
  const files = [
    [configFile, configText(schema(dir, 'bench.config.schema.json'), relative(dir, repo) || '.', commit, o.fakeModel === true)],
    [
      join(taskDir, 'task.yaml'),
      taskText(schema(taskDir, 'task.schema.json'), relative(taskDir, repo), commit, o.testCommand ?? guessTestCommand(repo, commit)),
    ],
    [join(dir, 'context', 'CLAUDE.md'), CONTEXT],
    ...(o.fakeModel
      ? ([
          [
            join(dir, 'model', 'fake-model.json'),
            JSON.stringify({ ...FAKE_MODEL_SCRIPT, $schema: schema(join(dir, 'model'), 'fake-model.schema.json') }, null, 2) + '\n',
          ],
        ] as const)
      : []),
  ] as const;
  const taken = files.filter(([f]) => existsSync(f)).map(([f]) => f);
  if (taken.length) return { status: 'refused', message: `${taken.join(', ')} exist: init never overwrites a file`, hint: 'give init an empty directory' };
  for (const [file, text] of files) {
    mkdirSync(join(file, '..'), { recursive: true });
    writeFileSync(file, text, { flag: 'wx' });
  }
  // The store stays out of version control.
  const ignore = join(dir, '.gitignore');
  if (!existsSync(ignore) || !readFileSync(ignore, 'utf8').split('\n').includes('.pairbench/')) writeFileSync(ignore, '.pairbench/\n', { flag: 'a' });
  return { status: 'ok', dir, files: files.map(([f]) => f), commit, repo };
}
