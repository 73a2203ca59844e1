import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { displayPath } from '../pipeline/config/load.js';
import { validateAgainstSchema } from '../pipeline/config/schema-validate.js';
import { YamlSource } from '../pipeline/config/yaml-source.js';
import type { Diagnostic } from '../pipeline/diagnostic.js';
import { err, ok, type Result } from '../pipeline/result.js';
import type { ReportFormat } from '../test-results/index.js';

/** A task as the steps use it: paths resolved, hidden parts separated from what an agent may see. */
export interface Task {
  id: string;
  family: string;
  category: string;
  dir: string;
  file: string;
  /** Where the tree comes from: a repository at a full commit (optionally one subdirectory of it). */
  repo: { source: string; commit: string; subdir?: string; setupPatch?: string | null };
  prompt: string;
  allowedPaths: string[];
  /** Where allowedPaths came from when the task format does not state them (an import derives them). */
  allowedPathsFrom?: string;
  verifier: {
    command: string | null;
    failToPass: Record<string, string>;
    passToPass: Record<string, string>;
    timeoutSec: number;
    /** Host directory of hidden verifier files (mounted at /verifier at verify time only). */
    filesDir: string | null;
    /** A hidden patch (e.g. SWE-bench's test_patch) applied to the workspace before the tests run. */
    patch: string | null;
    /** A hidden patch the verifier applies itself (an eval script): scanned by certify, never applied by pairbench. */
    scanOnlyPatch?: string | null;
    /** The verdict: exit codes of the commands, or a Harbor reward file (/logs/verifier/reward.txt|json). */
    result: 'exit-code' | 'reward-file';
    /** Workspace paths the verifier owns beyond the built-in ones (verifier-owned.ts). */
    owned?: string[];
    /**
     * One test-runner invocation for every listed test (SWE-bench at real sizes): `command`
     * with `{tests}` replaced by the shell-quoted ids of failToPass and passToPass (whose map
     * keys are the ids); each test's result read from the runner's report.
     */
    runner?: TestRunner;
  };
  /** The reference solution: a unified diff (text) or a host path to a script run in the workspace. */
  solution: { patch: string | null; script: string | null };
  /**
   * The task's own environment (Harbor's task.toml and environment/Dockerfile): the image
   * an `environment` step builds from the tree, and the limits the task sets for itself.
   */
  environment?: TaskEnvironment;
  /** Where the task was defined, for messages: a file, or file + instance. */
  origin: string;
  /** The instance's own image name (SWE-bench 5.x `image`): what `{image}` in sandbox.image stands for. */
  image?: string;
  /**
   * The record's fields that describe its environment, not its answer (SWE-bench: repo, version,
   * environment_setup_commit, ...): what an environment step's Dockerfile template may use.
   */
  environmentFields?: Record<string, string>;
  /** Where the tree is mounted in a docker sandbox when the task says (SWE-bench: /testbed). */
  workdir?: string;
  canary: string | null;
  /** Facts the answer depends on that only the memory under test holds (certify checks both halves). */
  facts?: string[];
}

export interface TaskEnvironment {
  /** The Dockerfile, relative to the tree (the task's environment/ directory). */
  dockerfile: string;
  /** The task may use the network (its network mode is not no-network): the build gets the engine's network. */
  allowInternet: boolean;
  /** [environment] network_mode (Harbor's default: public; allow_internet = false is no-network). */
  network: 'public' | 'no-network' | 'allowlist';
  /** [environment] allowed_hosts, with network allowlist. */
  allowedHosts: string[];
  /** [verifier] network_mode, when the verifier's phase sets its own. */
  verifierNetwork: 'public' | 'no-network' | 'allowlist' | null;
  verifierAllowedHosts: string[];
  /** [verifier] user (Harbor's default: the image's USER, root when it sets none). */
  verifierUser: string | null;
  /** task.toml fields pairbench reads but does not carry out, each with the reason (certify lists them). */
  ignored: { field: string; reason: string }[];
  buildTimeoutSec: number;
  /** [agent] timeout_sec. */
  agentTimeoutSec: number | null;
  cpus: number | null;
  memoryMb: number | null;
  /** [verifier] env: variables the task's tests expect. */
  verifierEnv: Record<string, string>;
}

export interface TestRunner {
  command: string;
  /** Variables the runner's command reads (e.g. an instance's eval script). */
  env?: Record<string, string>;
  report: ReportFormat;
  /** The report file's name in pairbench's report directory (`{report}` in the command is its path); null: the default name. */
  reportFile: string | null;
  /** Per-test timeout, handed to the runner as $PAIRBENCH_TEST_TIMEOUT (e.g. pytest-timeout's --timeout). */
  testTimeoutSec: number | null;
}

const FULL_SHA = /^[0-9a-f]{40}$/;
/** Task `id` lives in `<tasksDir>/<id>/task.yaml`; its hidden files in `verifier/` beside it. */
export function loadTask(tasksDir: string, id: string): Result<Task, Diagnostic[]> {
  return parseTask(resolve(tasksDir, id, 'task.yaml'), id);
}

/** A task's verifier fields as the schema admits them. */
type VerifierFields = {
  command?: string;
  fail_to_pass?: Record<string, string>;
  pass_to_pass?: Record<string, string>;
  timeout?: number;
  files?: string;
  result?: 'exit-code' | 'reward-file';
  owned?: string[];
  runner?: { command: string; report: ReportFormat };
};

/** What is wrong with a task's verifier fields beyond the schema (a missing files directory, a runner without its report). */
function verifierProblems(id: string, v: VerifierFields, dir: string, source: YamlSource): Diagnostic[] {
  const problems: Diagnostic[] = [];
  if (v.files && !existsSync(join(dir, v.files))) {
    problems.push({ field: 'verifier.files', message: `task "${id}": ${v.files} does not exist`, location: source.locate(['verifier', 'files']) });
  }
  if (v.runner && !v.runner.command.includes('{report}')) {
    problems.push({
      field: 'verifier.runner.command',
      message: `task "${id}": the runner's command must write its report to {report} (a path pairbench owns)`,
      hint: 'e.g. vitest run --reporter=json --outputFile={report} FILES, jest --json --outputFile={report} FILES, python -m pytest --junitxml={report} FILES',
      location: source.locate(['verifier', 'runner', 'command']),
    });
  }
  if (v.runner && v.command) {
    problems.push({
      field: 'verifier.runner',
      message: `task "${id}": give a runner with fail_to_pass tests, or a command, not both`,
      location: source.locate(['verifier', 'runner']),
    });
  }
  if (!v.command && !v.fail_to_pass && !v.pass_to_pass) {
    problems.push({ field: 'verifier', message: `task "${id}": the verifier needs a command or fail_to_pass tests`, location: source.locate(['verifier']) });
  }
  return problems;
}

function parseTask(file: string, id: string): Result<Task, Diagnostic[]> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return err([
      { message: `task "${id}": no task file at ${displayPath(file)}`, hint: 'each matrix value of `task` names a directory tasks/<id>/ with a task.yaml' },
    ]);
  }
  const { source, diagnostics } = YamlSource.parse(displayPath(file), text);
  if (diagnostics.length) return err(diagnostics);
  // Checked against task.schema.json on the next line before any field is read.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- its shape is the schema's
  const data = source.toJS() as Record<string, any>;
  const problems = validateAgainstSchema('task.schema.json', data, source);
  if (problems.length) return err(problems);
  const dir = dirname(file);
  if (data['id'] !== id) {
    problems.push({ field: 'id', message: `task "${id}": id is "${data['id']}"; it must match its directory name`, location: source.locate(['id']) });
  }
  const repo = data['repo'] as { path?: string; url?: string; commit: string; setup_patch?: string };
  if (repo.setup_patch && !existsSync(join(dirname(file), repo.setup_patch))) {
    problems.push({ field: 'repo.setup_patch', message: `task "${id}": ${repo.setup_patch} does not exist`, location: source.locate(['repo', 'setup_patch']) });
  }
  if (!FULL_SHA.test(repo.commit)) {
    problems.push({
      field: 'repo.commit',
      message: `task "${id}": commit "${repo.commit}" is not a full 40-hex commit id`,
      hint: 'pin the exact commit: git rev-parse <ref>',
      location: source.locate(['repo', 'commit']),
    });
  }
  if (!repo.path === !repo.url) {
    problems.push({ field: 'repo', message: `task "${id}": give exactly one of repo.path or repo.url`, location: source.locate(['repo']) });
  }
  const v = data['verifier'] as VerifierFields;
  problems.push(...verifierProblems(id, v, dirname(file), source));
  const sol = (data['solution'] ?? {}) as { patch?: string; script?: string };
  for (const [k, p] of Object.entries(sol)) {
    if (p && !existsSync(join(dir, p)))
      problems.push({ field: `solution.${k}`, message: `task "${id}": ${p} does not exist`, location: source.locate(['solution', k]) });
  }
  if (problems.length) return err(problems);
  const verifierDir = join(dir, v.files ?? 'verifier');
  return ok({
    id,
    family: data['family'] ?? id,
    category: data['category'] ?? 'uncategorized',
    dir,
    file,
    repo: {
      source: repo.path ? resolve(dir, repo.path) : repo.url!,
      commit: repo.commit,
      setupPatch: repo.setup_patch ? readFileSync(join(dir, repo.setup_patch), 'utf8') : null,
    },
    prompt: data['prompt'],
    allowedPaths: data['allowed_paths'] ?? ['**'],
    verifier: {
      command: v.command ?? null,
      failToPass: v.fail_to_pass ?? {},
      passToPass: v.pass_to_pass ?? {},
      timeoutSec: v.timeout ?? 600,
      filesDir: existsSync(verifierDir) ? verifierDir : null,
      patch: null,
      result: v.result ?? 'exit-code',
      ...(v.owned ? { owned: v.owned } : {}),
      ...(v.runner ? { runner: { command: v.runner.command, report: v.runner.report, reportFile: null, testTimeoutSec: null } } : {}),
    },
    solution: { patch: sol.patch ? readFileSync(join(dir, sol.patch), 'utf8') : null, script: sol.script ? join(dir, sol.script) : null },
    canary: data['canary'] ?? null,
    facts: data['facts'] ?? [],
    origin: displayPath(file),
  });
}
