/**
 * The task formats a directory of tasks may hold, each found by its marker file. The first whose
 * marker a task's directory has reads it; with none, the first reads it and says what is
 * missing. A new format is its module and a line here.
 */
import { HARBOR_TASK_FORMAT } from './harbor-format.js';
import { PAIRBENCH_TASK_FORMAT } from './pairbench-format.js';
import type { TaskFormat } from './task-format.js';

export const TASK_FORMATS: readonly TaskFormat[] = [PAIRBENCH_TASK_FORMAT, HARBOR_TASK_FORMAT];
