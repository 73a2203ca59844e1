import { resolve } from 'node:path';
import type { StepConfig } from '../pipeline/config/load.js';
import type { Diagnostic } from '../pipeline/diagnostic.js';
import type { GraphNode } from '../pipeline/step-kind.js';
import { loadTask, type Task } from './task.js';

/** Where a step finds its tasks: `tasks:` in the step (default `tasks`), relative to the config file. */
export function tasksDir(step: StepConfig): string {
  return resolve(step.rootDir, (step.spec['tasks'] as string | undefined) ?? 'tasks');
}

/** Checks that the step fans out over `task` and that every task loads. */
export function checkTasks(step: StepConfig): Diagnostic[] {
  const dim = step.matrix.find((d) => d.name === 'task');
  if (!dim) {
    return [{ field: `steps.${step.name}.matrix`, message: `a ${step.kind} step fans out over tasks: give it matrix.task (task ids)`, location: step.source.locate([...step.path, 'matrix']) }];
  }
  const out: Diagnostic[] = [];
  for (const id of dim.values) {
    const t = loadTask(tasksDir(step), id);
    if (!t.ok) out.push(...t.error);
  }
  return out;
}

/** The node's task (checked at load time, so it is there). */
export function taskOf(node: GraphNode): Task {
  const t = loadTask(tasksDir(node.step), node.matrix['task']!);
  if (!t.ok) throw new Error(t.error.map((d) => d.message).join('; '));
  return t.value;
}
