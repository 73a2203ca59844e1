/**
 * A task format: how one task directory of a step's task source (`tasks: DIR`, or
 * `tasks: {dir, repo, commit}`) is read. The directory's marker file says which format a task
 * is in (steps/task-sources/index.ts lists them, the first match wins). Types only.
 */
import type { Diagnostic } from '../../pipeline/diagnostic.js';
import type { Result } from '../../pipeline/result.js';
import type { TaskSource } from '../config-types.generated.js';
import type { Task } from '../task.js';

/** A step's `tasks:` when it names a directory of task directories. */
export type TaskDirSource = Exclude<TaskSource, { swebench: string }>;

export interface TaskFormat {
  /** What the format is called in messages. */
  name: string;
  /** The file in a task's directory that makes it a task of this format. */
  marker: string;
  /**
   * Task `id`, from `<tasksDir>/<id>/`. `source` is the step's `tasks:` as written, `root` the
   * directory its paths are relative to, `field` where to point an error about it.
   */
  load(tasksDir: string, id: string, source: TaskDirSource, context: { root: string; field: string }): Result<Task, Diagnostic[]>;
}
