import { existsSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { StepConfig } from '../pipeline/config/load.js';
import type { Diagnostic } from '../pipeline/diagnostic.js';
import { err, ok, type Result } from '../pipeline/result.js';
import { selectIds, type TaskSelection } from './task-selection.js';
import type { GraphNode } from '../pipeline/step-kind.js';
import type { Task } from './task.js';
import { TASK_FORMATS } from './task-sources/index.js';
import { loadSwebenchInstancesById } from './task-sources/swebench.js';
import { anySpecOf } from './step-spec.js';
import type { TaskSource } from './config-types.generated.js';
import { EGRESS_MODES, SANDBOX_BACKENDS, type BackendName } from '../sandboxes/egress-modes.js';
import type { EgressMode } from '../sandboxes/sandbox.js';

/**
 * Where a step finds its tasks (`tasks:` in the step, relative to the config file):
 * - a directory of task directories (default `tasks`), each in one of the task formats of
 *   steps/task-sources/index.ts, told apart by its marker file (task.yaml: pairbench's own;
 *   task.toml: a Harbor task, whose `environment/` is read from the git repository `repo` at `commit`);
 * - `{swebench: FILE (JSON Lines or a JSON array), repos: {owner/name: path}, test_command: "... {tests} ..."}`
 *   (one runner invocation per verification, results from its report) or `"... {test} ..."` (one process per test).
 */
export type TaskSourceSpec = TaskSource;

/**
 * What one load of the config has read, by the parsed config file (a new object on every load):
 * a task file edited since is read again (a long-lived worker, or a library caller that loads
 * twice, never plans or runs a stale task), while the steps and nodes of one load share a parse.
 */
const readThisLoad = new WeakMap<object, Map<string, unknown>>();

function once<T>(step: StepConfig, key: unknown[], read: () => T): T {
  let memo = readThisLoad.get(step.source);
  if (!memo) readThisLoad.set(step.source, (memo = new Map()));
  const k = JSON.stringify(key);
  if (!memo.has(k)) memo.set(k, read());
  return memo.get(k) as T;
}

/** The step's `tasks:` as written (undefined: not written). */
function tasksField(step: StepConfig): TaskSourceSpec | undefined {
  const spec = anySpecOf(step);
  return 'tasks' in spec ? spec.tasks : undefined;
}

function sourceOf(step: StepConfig): TaskSourceSpec {
  return tasksField(step) ?? 'tasks';
}

/** Loads task `id` from the step's task source; errors name the file, the task and the field. */
export function loadStepTask(step: StepConfig, id: string): Result<Task, Diagnostic[]> {
  return once(step, ['step', step.name, id], () => readStepTask(step, id));
}

type SwebenchSource = Extract<TaskSourceSpec, { swebench: string }>;

/** Every instance of a SWE-bench file, each loaded on its own (read once per load of the config). */
function swebenchInstances(step: StepConfig, src: SwebenchSource): Result<Map<string, Result<Task, Diagnostic[]>>, Diagnostic[]> {
  const file = resolve(step.rootDir, src.swebench);
  const repos = Object.fromEntries(Object.entries(src.repos).map(([k, v]) => [k, resolve(step.rootDir, v)]));
  // Two steps may read one file with other repos or another test command.
  if (!src.test_command && !src.eval_script && !src.test_commands) {
    return err([
      {
        message: `a SWE-bench task source needs test_command (with {tests} or {test}), test_commands per repository, or eval_script: true`,
        field: `steps.${step.name}.tasks`,
        location: step.source.locate([...step.path, 'tasks']),
      },
    ]);
  }
  const options = {
    // Without test_command, an instance that neither its repository's command nor an eval script covers fails its verification.
    testCommand: src.test_command ?? 'echo "no test command for this repository: give test_command or test_commands" >&2; false {tests}',
    ...(src.test_commands
      ? {
          perRepo: Object.fromEntries(
            Object.entries(src.test_commands).map(([repo, c]) => [repo, { testCommand: c.command, report: c.report ?? 'pytest-rA' }]),
          ),
        }
      : {}),
    ...(src.eval_script ? { evalScript: true } : {}),
    ...(src.report ? { report: src.report } : {}),
    ...(src.report_file ? { reportFile: src.report_file } : {}),
    ...(src.timeout ? { timeoutSec: src.timeout } : {}),
    ...(src.test_timeout ? { testTimeoutSec: src.test_timeout } : {}),
  };
  return once(step, ['swebench', file, repos, options], () => loadSwebenchInstancesById(file, repos, options));
}

function readStepTask(step: StepConfig, id: string): Result<Task, Diagnostic[]> {
  const src = sourceOf(step);
  if (typeof src === 'object' && 'swebench' in src) {
    const all = swebenchInstances(step, src);
    if (!all.ok) return all;
    const t = all.value.get(id);
    return t ? t : err([{ message: `task "${id}" is not an instance_id in ${src.swebench}`, field: `steps.${step.name}.matrix.task` }]);
  }
  const dir = resolve(step.rootDir, typeof src === 'string' ? src : src.dir);
  // Steps that read the same task source share its parse (an error names the first step's field).
  return once(step, ['task', dir, id, src, step.rootDir], () => {
    const format = TASK_FORMATS.find((f) => existsSync(join(dir, id, f.marker))) ?? TASK_FORMATS[0]!;
    return format.load(dir, id, src, { root: step.rootDir, field: `steps.${step.name}.tasks` });
  });
}

/** Every task id the step's source holds: a SWE-bench file's instance ids, or the task directories (with a format's marker) of a directory. */
function sourceIds(step: StepConfig): Result<string[], Diagnostic[]> {
  const missing = taskSourceProblem(step);
  if (missing) return err([missing]);
  const src = sourceOf(step);
  if (typeof src === 'object' && 'swebench' in src) {
    const all = swebenchInstances(step, src);
    return all.ok ? ok([...all.value.keys()]) : all;
  }
  const dir = resolve(step.rootDir, typeof src === 'string' ? src : src.dir);
  return ok(
    readdirSync(dir, { withFileTypes: true })
      .filter((e) => e.isDirectory() && TASK_FORMATS.some((f) => existsSync(join(dir, e.name, f.marker))))
      .map((e) => e.name),
  );
}

/**
 * StepKind.matrixSource of the kinds that fan out over tasks: `task: {from: tasks, select}`
 * drawn from the step's own task source (steps/task-selection.ts).
 */
export function taskMatrixSource(step: StepConfig, dimension: string, source: Record<string, unknown>): Result<string[], Diagnostic[]> {
  if (dimension !== 'task' || source['from'] !== 'tasks')
    return err([
      { message: `only matrix.task is drawn from a source, and from its task source (from: tasks)`, hint: 'list the values of the other dimensions' },
    ]);
  const ids = sourceIds(step);
  if (!ids.ok) return ids;
  const src = sourceOf(step);
  const name = typeof src === 'string' ? src : 'swebench' in src ? src.swebench : src.dir;
  return selectIds(ids.value, source['select'] as TaskSelection, name);
}

/** Checks that the step fans out over `task` and that every task loads (the first 20 failures are listed). */
export function checkTasks(step: StepConfig, options: { hostPaths?: boolean } = {}): Diagnostic[] {
  const dim = step.matrix.find((d) => d.name === 'task');
  if (!dim) {
    return [
      {
        field: `steps.${step.name}.matrix`,
        message: `a ${step.kind} step fans out over tasks: give it matrix.task (task ids)`,
        location: step.source.locate([...step.path, 'matrix']),
      },
    ];
  }
  const missingSource = taskSourceProblem(step);
  if (missingSource) return [missingSource];
  const out: Diagnostic[] = [...sandboxProblems(step), ...hostPathProblems(step, options.hostPaths === true)];
  let failing = 0;
  dim.values.forEach((id, i) => {
    if (failing >= 20) return void failing++;
    const t = loadStepTask(step, id);
    if (t.ok) return;
    failing++;
    // A problem inside a task file points there; one about the task as a whole points at its id in the config.
    const where = { location: step.source.locate([...step.path, 'matrix', 'task', i]), field: `steps.${step.name}.matrix.task[${i}]` };
    out.push(...t.error.map((d) => (d.location ? d : { ...d, ...where })));
  });
  if (failing > 20)
    out.push({
      message: `... and ${failing - 20} more tasks of steps.${step.name} fail to load`,
      field: `steps.${step.name}.matrix.task`,
      location: step.source.locate([...step.path, 'matrix', 'task']),
    });
  return out;
}

/**
 * A sandbox its backend would refuse to make (the local backend cannot enforce egress none or an
 * allowlist): refused when the config is loaded, by `plan` as by `run`, for any step with a sandbox.
 */
function sandboxProblems(step: StepConfig): Diagnostic[] {
  const sandbox = step.spec['sandbox'];
  if (typeof sandbox !== 'object' || sandbox === null) return [];
  const { backend, egress } = sandbox as { backend?: string; egress?: EgressMode };
  if (!backend || backend === 'auto' || !egress || !(backend in EGRESS_MODES)) return [];
  const modes = EGRESS_MODES[backend as BackendName];
  if (modes.includes(egress)) return [];
  const others = SANDBOX_BACKENDS.filter((b) => EGRESS_MODES[b].includes(egress));
  return [
    {
      field: `steps.${step.name}.sandbox.egress`,
      message: `the ${backend} backend cannot run egress "${egress}" (it runs ${modes.join(', ')})`,
      location: step.source.locate([...step.path, 'sandbox', 'egress']),
      hint: `use backend ${others.join(' or ')} for egress ${egress}, or egress ${modes.join(' or ')} on ${backend}`,
    },
  ];
}

/** sandbox.host_paths: only where the hidden verifier runs (verify, certify), only under bubblewrap. */
function hostPathProblems(step: StepConfig, runsVerifier: boolean): Diagnostic[] {
  const sandbox = step.spec['sandbox'] as { backend?: string; host_paths?: string[] } | undefined;
  if (!sandbox?.host_paths) return [];
  const where = { field: `steps.${step.name}.sandbox.host_paths`, location: step.source.locate([...step.path, 'sandbox', 'host_paths']) };
  if (!runsVerifier)
    return [
      {
        ...where,
        message: `host_paths pins the hidden verifier's environment: a ${step.kind} step does not run it`,
        hint: 'declare it on the verify and certify steps',
      },
    ];
  if (sandbox.backend !== 'bubblewrap')
    return [
      {
        ...where,
        message: `host_paths is for the bubblewrap backend (this step's is ${sandbox.backend ?? 'auto'})`,
        hint: sandbox.backend === 'docker' ? 'docker pins the environment by image ID: remove host_paths' : 'set sandbox.backend: bubblewrap',
      },
    ];
  return [];
}

/** A task source that is not there at all: one error at `tasks`, not one per task. */
function taskSourceProblem(step: StepConfig): Diagnostic | undefined {
  const src = sourceOf(step);
  const path = typeof src === 'string' ? src : 'swebench' in src ? src.swebench : src.dir;
  if (existsSync(resolve(step.rootDir, path))) return undefined;
  const field = typeof src === 'string' ? ['tasks'] : 'swebench' in src ? ['tasks', 'swebench'] : ['tasks', 'dir'];
  return {
    field: `steps.${step.name}.${field.join('.')}`,
    message: `${path} does not exist (relative to ${step.rootDir})`,
    location: step.source.locate([...step.path, ...field]),
    hint:
      typeof src === 'string' && tasksField(step) === undefined
        ? 'tasks: is not set, so the directory "tasks" beside the config is read; set tasks: DIR'
        : 'give a directory of task directories, or {swebench: FILE, repos, test_command}',
  };
}

/** The node's task (checked at load time, so it is there). */
export function taskOf(node: GraphNode): Task {
  const t = loadStepTask(node.step, node.matrix['task']!);
  if (!t.ok) throw new Error(t.error.map((d) => d.message).join('; '));
  return t.value;
}
