/** pairbench's own task format: `<id>/task.yaml`, its hidden verifier files in `<id>/verifier/` (steps/task.ts). */
import { loadTask } from '../task.js';
import type { TaskFormat } from './task-format.js';

export const PAIRBENCH_TASK_FORMAT: TaskFormat = {
  name: 'pairbench',
  marker: 'task.yaml',
  load: (tasksDir, id) => loadTask(tasksDir, id),
};
