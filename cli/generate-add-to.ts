/**
 * `generate --add-to CONFIG`: the generated task ids join the task matrix of every step of
 * CONFIG that reads its tasks from the directory generate wrote them to. The file is edited as
 * a YAML document (comments, anchors and layout kept): a matrix written once with an anchor
 * (`task: &ids [...]`) is edited once, and every alias of it follows. A task init wrote as a
 * placeholder and nobody edited leaves the matrix when real tasks arrive (its files stay).
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { isAlias, isMap, isScalar, isSeq, parseDocument, type YAMLMap, type YAMLSeq } from 'yaml';
import { writeFileAtomic } from '../pipeline/atomic-write.js';
import { INIT_PLACEHOLDER_MARK } from './init.js';

export type AddToOutcome = { ok: true; added: string[]; removedPlaceholders: string[]; steps: string[] } | { ok: false; message: string; hint: string };

/** Where a step reads its tasks from, when that is a directory (the default is `tasks`). */
function tasksDirOf(step: YAMLMap, configDir: string, deref: (n: unknown) => unknown): string | null {
  const node = deref(step.get('tasks', true));
  if (node === undefined) return resolve(configDir, 'tasks');
  if (isScalar(node) && typeof node.value === 'string') return resolve(configDir, node.value);
  return null; // a dataset (SWE-bench, Harbor): not where generate writes
}

/** Whether task `id` in `dir` is still init's placeholder, unedited. */
function isPlaceholder(dir: string, id: string): boolean {
  const file = join(dir, id, 'task.yaml');
  return existsSync(file) && readFileSync(file, 'utf8').includes(INIT_PLACEHOLDER_MARK);
}

export function addTasksToConfig(configFile: string, outDir: string, ids: readonly string[]): AddToOutcome {
  const file = resolve(configFile);
  if (!existsSync(file))
    return { ok: false, message: `--add-to ${configFile}: no such file`, hint: "give the config file the tasks belong to ('pairbench init' writes one)" };
  const text = readFileSync(file, 'utf8');
  const doc = parseDocument(text);
  if (doc.errors.length) return { ok: false, message: `${configFile}: ${doc.errors[0]!.message}`, hint: "fix the YAML first ('pairbench plan' says where)" };
  const steps = doc.get('steps', true);
  if (!isMap(steps)) return { ok: false, message: `${configFile} has no steps: mapping`, hint: 'give --add-to a pairbench config' };
  const dir = resolve(outDir);
  // An alias resolves to the node it names: a matrix (or its task list) shared by many steps is one node.
  const deref = (n: unknown): unknown => (isAlias(n) ? n.resolve(doc) : n);
  const matrices = new Set<YAMLSeq>();
  const names: string[] = [];
  const otherDirs = new Set<string>();
  for (const pair of steps.items) {
    const step = pair.value;
    if (!isMap(step)) continue;
    const matrix = deref(step.get('matrix', true));
    const resolved = isMap(matrix) ? deref(matrix.get('task', true)) : undefined;
    if (!isSeq(resolved)) continue;
    const from = tasksDirOf(step, dirname(file), deref);
    if (from === null) continue;
    if (from !== dir) {
      otherDirs.add(from);
      continue;
    }
    matrices.add(resolved);
    names.push(String(isScalar(pair.key) ? pair.key.value : pair.key));
  }
  if (!matrices.size) {
    const where = [...otherDirs].join(', ');
    return {
      ok: false,
      message: `no step of ${configFile} reads its tasks from ${dir}${where ? ` (its steps read ${where})` : ''}`,
      hint: where ? `give generate --out ${[...otherDirs][0]}, or set the steps' tasks: to ${dir}` : 'give --add-to a config whose steps have a task matrix',
    };
  }
  const added = new Set<string>();
  const removed = new Set<string>();
  for (const seq of matrices) {
    const present = seq.items.map((i) => String(isScalar(i) ? i.value : i));
    for (const [i, id] of [...present.entries()].reverse())
      if (!ids.includes(id) && isPlaceholder(dir, id)) {
        seq.delete(i);
        removed.add(id);
      }
    for (const id of ids)
      if (!present.includes(id)) {
        seq.add(doc.createNode(id));
        added.add(id);
      }
  }
  if (added.size || removed.size) writeFileAtomic(file, doc.toString());
  return { ok: true, added: [...added], removedPlaceholders: [...removed], steps: names };
}
