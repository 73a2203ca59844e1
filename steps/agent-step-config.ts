import { existsSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import type { StepConfig } from '../pipeline/config/load.js';
import type { Diagnostic } from '../pipeline/diagnostic.js';
import { err, type Result } from '../pipeline/result.js';
import type { GraphNode } from '../pipeline/step-kind.js';
import { loadTask, type Task } from './task.js';
import { loadHarborTask } from './task-sources/harbor.js';
import { loadSwebenchInstances } from './task-sources/swebench.js';

/**
 * Where a step finds its tasks (`tasks:` in the step, relative to the config file):
 * - a directory of task directories (default `tasks`): `<id>/task.yaml` (pairbench's
 *   own format) or `<id>/task.toml` (a Harbor task, whose `environment/` is the tree,
 *   read from the git repository `repo` at `commit`);
 * - `{swebench: FILE.jsonl, repos: {owner/name: path}, test_command: "... {test} ..."}`.
 */
export type TaskSourceSpec =
  | string
  | { dir: string; repo?: string; commit?: string }
  | { swebench: string; repos: Record<string, string>; test_command: string };

const swebenchCache = new Map<string, Result<Map<string, Task>, Diagnostic[]>>();

function sourceOf(step: StepConfig): TaskSourceSpec {
  return (step.spec['tasks'] as TaskSourceSpec | undefined) ?? 'tasks';
}

/** Loads task `id` from the step's task source; errors name the file, the task and the field. */
export function loadStepTask(step: StepConfig, id: string): Result<Task, Diagnostic[]> {
  const src = sourceOf(step);
  if (typeof src === 'object' && 'swebench' in src) {
    const file = resolve(step.rootDir, src.swebench);
    const repos = Object.fromEntries(Object.entries(src.repos).map(([k, v]) => [k, resolve(step.rootDir, v)]));
    // Two steps may read one file with other repos or another test command.
    const cacheKey = JSON.stringify([file, repos, src.test_command]);
    let all = swebenchCache.get(cacheKey);
    if (!all) swebenchCache.set(cacheKey, (all = loadSwebenchInstances(file, repos, { testCommand: src.test_command })));
    if (!all.ok) return all;
    const t = all.value.get(id);
    return t ? { ok: true, value: t } : err([{ message: `task "${id}" is not an instance_id in ${src.swebench}`, field: `steps.${step.name}.matrix.task` }]);
  }
  const dir = resolve(step.rootDir, typeof src === 'string' ? src : src.dir);
  if (existsSync(join(dir, id, 'task.toml')) && !existsSync(join(dir, id, 'task.yaml'))) {
    if (typeof src === 'string' || !src.repo || !src.commit) {
      return err([{ message: `task "${id}" is a Harbor task: give the step tasks: {dir, repo, commit} (the git repository holding the task directories and its full commit)`, field: `steps.${step.name}.tasks` }]);
    }
    const repo = resolve(step.rootDir, src.repo);
    return loadHarborTask(join(dir, id), id, { source: repo, commit: src.commit, subdir: relative(repo, join(dir, id, 'environment')) });
  }
  return loadTask(dir, id);
}

/** Checks that the step fans out over `task` and that every task loads. */
export function checkTasks(step: StepConfig): Diagnostic[] {
  const dim = step.matrix.find((d) => d.name === 'task');
  if (!dim) {
    return [{ field: `steps.${step.name}.matrix`, message: `a ${step.kind} step fans out over tasks: give it matrix.task (task ids)`, location: step.source.locate([...step.path, 'matrix']) }];
  }
  const out: Diagnostic[] = [];
  for (const id of dim.values) {
    const t = loadStepTask(step, id);
    if (!t.ok) out.push(...t.error);
  }
  return out;
}

/** The node's task (checked at load time, so it is there). */
export function taskOf(node: GraphNode): Task {
  const t = loadStepTask(node.step, node.matrix['task']!);
  if (!t.ok) throw new Error(t.error.map((d) => d.message).join('; '));
  return t.value;
}
