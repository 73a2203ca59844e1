import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { execFileSync } from 'node:child_process';

/** Fixed identity and dates: the same files give the same commit ids on every machine. */
const GIT_ENV = {
  GIT_AUTHOR_NAME: 'Fixture',
  GIT_AUTHOR_EMAIL: 'fixture@example.invalid',
  GIT_COMMITTER_NAME: 'Fixture',
  GIT_COMMITTER_EMAIL: 'fixture@example.invalid',
  GIT_AUTHOR_DATE: '2026-01-01T00:00:00Z',
  GIT_COMMITTER_DATE: '2026-01-01T00:00:00Z',
  HOME: '/nonexistent',
  GIT_CONFIG_NOSYSTEM: '1',
  PATH: process.env['PATH'] ?? '/usr/bin:/bin',
};

export function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, env: GIT_ENV, encoding: 'utf8' }).trim();
}

function writeAll(root: string, files: Record<string, string>): void {
  for (const [p, content] of Object.entries(files)) {
    mkdirSync(dirname(join(root, p)), { recursive: true });
    writeFileSync(join(root, p), content);
  }
}

/** A real git repository with one commit per entry of `commits`; returns the commit ids. */
export function makeRepo(dir: string, commits: Record<string, string>[]): string[] {
  mkdirSync(dir, { recursive: true });
  git(dir, 'init', '-q', '-b', 'main');
  const ids: string[] = [];
  commits.forEach((files, i) => {
    writeAll(dir, files);
    git(dir, 'add', '-A');
    git(dir, 'commit', '-q', '-m', `commit ${i + 1}`);
    ids.push(git(dir, 'rev-parse', 'HEAD'));
  });
  return ids;
}

/** The calculator fixture: `add` subtracts; the task is to fix it. */
/** A unified diff that adds `path` holding `lines` (the shape of a SWE-bench test patch). */
export function newFilePatch(path: string, lines: readonly string[]): string {
  return [
    `diff --git a/${path} b/${path}`,
    'new file mode 100644',
    '--- /dev/null',
    `+++ b/${path}`,
    `@@ -0,0 +1,${lines.length} @@`,
    ...lines.map((l) => `+${l}`),
    '',
  ].join('\n');
}

/** The reference fix of src/add.mjs (a - b made a + b), as a SWE-bench gold patch. */
export const FIX_ADD_PATCH = [
  'diff --git a/src/add.mjs b/src/add.mjs',
  '--- a/src/add.mjs',
  '+++ b/src/add.mjs',
  '@@ -1 +1 @@',
  '-export const add = (a, b) => a - b;',
  '+export const add = (a, b) => a + b;',
  '',
].join('\n');

export function calculatorTask(projectDir: string, options: { id?: string; commit?: string } = {}): { repo: string; commit: string; taskDir: string } {
  const repo = join(projectDir, 'repos', 'calc');
  const [commit] = makeRepo(repo, [
    {
      'src/add.mjs': 'export const add = (a, b) => a - b;\n',
      'README.md': '# calc\n',
      'CLAUDE.md': 'Repository instructions that must not reach any arm.\n',
      '.claude/settings.json': '{"permissions": {}}\n',
      'docs/AGENTS.md': 'nested agent instructions\n',
    },
  ]);
  const id = options.id ?? 'fix-add';
  const taskDir = join(projectDir, 'tasks', id);
  writeAll(taskDir, {
    'task.yaml': `# yaml-language-server: $schema=../../schemas/task.schema.json
id: ${id}
family: arithmetic
category: bugfix
repo:
  path: ../../repos/calc
  commit: ${options.commit ?? commit}
prompt: "add(a, b) in src/add.mjs returns the wrong result. Fix it."
allowed_paths: ["src/**"]
verifier:
  fail_to_pass:
    add_works: node "$VERIFIER_DIR/test_add.mjs"
  pass_to_pass:
    module_exists: test -f src/add.mjs
  timeout: 30
solution:
  patch: solution.patch
`,
    'verifier/test_add.mjs': `const { add } = await import(process.cwd() + '/src/add.mjs');
if (add(2, 3) !== 5) { console.error('add(2, 3) = ' + add(2, 3)); process.exit(1); }
console.log('ok');
`,
    'solution.patch': `diff --git a/src/add.mjs b/src/add.mjs
--- a/src/add.mjs
+++ b/src/add.mjs
@@ -1 +1 @@
-export const add = (a, b) => a - b;
+export const add = (a, b) => a + b;
`,
  });
  return { repo, commit: commit!, taskDir };
}

/** Copies a task of `projectDir/tasks` (task.yaml, solution, verifier) under another id and family: more tasks on the same repository. */
export function copyTask(projectDir: string, from: string, to: string, edit: (yaml: string) => string = (y) => y): void {
  const src = join(projectDir, 'tasks', from);
  const yaml = readFileSync(join(src, 'task.yaml'), 'utf8')
    .replace(`id: ${from}`, `id: ${to}`)
    .replace(/^family: .*$/m, `family: ${to}`);
  writeAll(join(projectDir, 'tasks', to), {
    'task.yaml': edit(yaml),
    'solution.patch': readFileSync(join(src, 'solution.patch'), 'utf8'),
    'verifier/test_add.mjs': readFileSync(join(src, 'verifier', 'test_add.mjs'), 'utf8'),
  });
}

/** The agent a cohort config runs by default: it fixes add() only when its arm has a CLAUDE.md. */
export const READS_CLAUDE_MD = 'if [ -f CLAUDE.md ]; then sed -i "s/a - b/a + b/" src/add.mjs; fi';

/** What a paired cohort's config may change from its defaults (the local backend, one rep, no export). */
export interface PairedCohortOptions {
  /** The run and verify steps' sandbox (a YAML flow map); default local, egress open. */
  sandbox?: string;
  /** The verify step's own sandbox, when it differs from the run step's. */
  verifySandbox?: string;
  /** More fields of the verify step (e.g. `repeats: 1`). */
  verify?: string;
  reps?: number;
  /** The analysis' version (a cohort registered again). */
  version?: number;
  /** An export step of the cohort. */
  exported?: boolean;
}

/**
 * A whole paired cohort over `tasks` (materialize, run with a control and a CLAUDE.md treatment
 * from fixtures/CLAUDE.md, verify, audit, analyze), on the local backend with one rep unless
 * `options` says otherwise. `head` goes before `steps:` (e.g. a cache: section).
 */
export function pairedCohortConfig(tasks: readonly string[], agent = READS_CLAUDE_MD, head = '', options: PairedCohortOptions = {}): string {
  const m = `matrix: { task: [${tasks.join(', ')}], arm: [control, treatment], rep: ${options.reps ?? 1} }`;
  const sandbox = options.sandbox ?? '{ backend: local, egress: open }';
  return `${head}steps:
  materialize: { kind: materialize, matrix: { task: [${tasks.join(', ')}] } }
  attempts:
    kind: run
    needs: [materialize]
    ${m}
    agent: { adapter: command, command: '${agent.replace(/'/g, "''")}' }
    arms:
      control: {}
      treatment: { files: { CLAUDE.md: fixtures/CLAUDE.md } }
    sandbox: ${sandbox}
  verify:
    kind: verify
    needs: [materialize, attempts]
    ${m}
    sandbox: ${options.verifySandbox ?? sandbox}${options.verify ? `\n    ${options.verify}` : ''}
  audit:
    kind: audit
    needs: [attempts, verify]
    ${m}
  analyze:
    kind: analyze
    needs: [audit]${options.version ? `\n    version: ${options.version}` : ''}
    control: control
    treatments: [treatment]
    bootstrap: { resamples: 200, seed: 1 }
${options.exported ? '  export: { kind: export, needs: [materialize, attempts, verify, audit, analyze] }\n' : ''}`;
}

const READS_CONTEXT = `if grep -q "use +" CLAUDE.md 2>/dev/null; then sed -i "s/a - b/a + b/" src/add.mjs; fi`;

/**
 * Every kind but environment, on the local backend: a cohort of one task (fix-add, calculatorTask)
 * whose treatment arm receives a generated notes file that makes its attempts pass. Needs
 * generator.json and judge.json (fake model scripts) beside it.
 */
export function everyLocalKindConfig(commit: string): string {
  const m = 'matrix: { task: [fix-add], arm: [without, with], rep: 2 }';
  const local = 'sandbox: { backend: local, egress: open }';
  return `steps:
  notes: { kind: command, cmd: 'printf "use +\\n" > notes.md', outs: [notes.md] }
  generate-context:
    kind: context
    repo: repos/calc
    commit: ${commit}
    prompt: Write a CLAUDE.md.
    model: { name: claude-fake-1, fake_script: generator.json }
  materialize: { kind: materialize, matrix: { task: [fix-add] } }
  certify: { kind: certify, needs: [materialize, notes], matrix: { task: [fix-add] }, ${local}, policy: { repeats: 1 } }
  attempts:
    kind: run
    needs: [materialize, certify, notes]
    ${m}
    agent: { adapter: command, command: '${READS_CONTEXT.replace(/'/g, "''")}' }
    arms:
      without: {}
      with: { files: { CLAUDE.md: { from: notes, out: notes.md } } }
    ${local}
  verify: { kind: verify, needs: [materialize, attempts], ${m}, ${local} }
  audit: { kind: audit, needs: [attempts, verify], ${m} }
  judge:
    kind: judge
    needs: [materialize, attempts, verify]
    matrix: { task: [fix-add] }
    control: without
    treatment: with
    rubric: (a) helped (b) no difference (c) hurt
    model: { name: judge-fake-1, fake_script: judge.json }
  study:
    kind: analyze
    needs: [audit, judge]
    control: without
    treatments: [with]
    judge: judge
    bootstrap: { resamples: 200, seed: 1 }
  study-gate: { kind: gate, needs: [study], analysis: study, require: { treatment: with, min_effect: 0.5 } }
  export: { kind: export, needs: [materialize, certify, attempts, verify, audit, judge, study] }
`;
}
