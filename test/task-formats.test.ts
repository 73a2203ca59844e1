/**
 * The task formats of a directory of tasks (steps/task-sources/index.ts), each found by its
 * marker file. Generated from the registry: a task directory holding one format's marker is
 * read as that format (a broken marker file is refused naming that very file, through `plan`),
 * and no two formats claim one marker.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TASK_FORMATS } from '../steps/task-sources/index.js';
import { makeRepo } from './fixtures.js';
import { Rig } from './rig.js';

let rig: Rig;
beforeEach(() => (rig = new Rig()));
afterEach(() => rig.cleanup());

describe('task formats, from their registry', () => {
  it('each marker belongs to one format', () => {
    expect(TASK_FORMATS.length).toBeGreaterThanOrEqual(2);
    expect(new Set(TASK_FORMATS.map((f) => f.marker)).size).toBe(TASK_FORMATS.length);
  });

  for (const format of TASK_FORMATS) {
    it(`a task directory holding ${format.marker} is read as a ${format.name} task`, async () => {
      const [commit] = makeRepo(rig.dir + '/repo', [{ 'README.md': 'x\n' }]);
      rig.write(`repo/tasks/broken/${format.marker}`, 'this = is [ not { a task\n');
      rig.write(
        'bench.config.yaml',
        `steps:\n  materialize:\n    kind: materialize\n    tasks: { dir: repo/tasks, repo: repo, commit: ${commit} }\n    matrix: { task: [broken] }\n`,
      );
      const r = await rig.cli('plan');
      expect(r.code).toBe(2);
      // The error is about that file: the format that owns the marker read it.
      expect(r.stderr, r.stderr).toContain(`broken/${format.marker}`);
      for (const other of TASK_FORMATS.filter((f) => f !== format)) expect(r.stderr).not.toContain(`broken/${other.marker}`);
    });
  }
});
