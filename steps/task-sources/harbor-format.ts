/**
 * A Harbor task: `<id>/task.toml`, whose `environment/` is the starting tree, read from the git
 * repository the step names (`tasks: {dir, repo, commit}`) at its full commit (harbor.ts).
 */
import { join, relative, resolve } from 'node:path';
import { err } from '../../pipeline/result.js';
import { loadHarborTask } from './harbor.js';
import type { TaskFormat } from './task-format.js';

export const HARBOR_TASK_FORMAT: TaskFormat = {
  name: 'Harbor',
  marker: 'task.toml',
  load(tasksDir, id, source, { root, field }) {
    if (typeof source === 'string' || !source.repo || !source.commit) {
      return err([
        {
          message: `task "${id}" is a Harbor task: give the step tasks: {dir, repo, commit} (the git repository holding the task directories and its full commit)`,
          field,
        },
      ]);
    }
    const repo = resolve(root, source.repo);
    const dir = join(tasksDir, id);
    return loadHarborTask(dir, id, { source: repo, commit: source.commit, subdir: relative(repo, join(dir, 'environment')) });
  },
};
