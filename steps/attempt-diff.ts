/** What an attempt changed, as a unified diff against the tree it started from. */
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { loadExeca } from '../sandboxes/lazy-execa.js';
import type { ExecutionContext } from '../pipeline/step-kind.js';
import type { OutputEntry } from '../pipeline/store/cas.js';
import type { WorkspaceChanges } from './workspace.js';

/**
 * `git diff --no-index` per written or deleted path, with a/ and b/ prefixes; only the
 * files the attempt touched are read from the starting tree (never the whole tree).
 */
export async function attemptDiff(
  ctx: Pick<ExecutionContext, 'artifacts' | 'workDir'>,
  tree: OutputEntry | undefined,
  changed: OutputEntry,
  changes: WorkspaceChanges,
  label: string,
): Promise<string> {
  const scratch = join(ctx.workDir, 'diff', label.replace(/[^A-Za-z0-9_.-]/g, '_'));
  const parts: string[] = [];
  for (const p of [...Object.keys(changes.written), ...changes.deleted].sort()) {
    const beforeEntry = tree ? ctx.artifacts.entryAt(tree, p) : undefined;
    const afterEntry = changes.deleted.includes(p) ? undefined : ctx.artifacts.entryAt(changed, p);
    const side = (entry: OutputEntry | undefined, which: 'a' | 'b'): string => {
      if (entry?.type !== 'file') return '/dev/null';
      mkdirSync(dirname(join(scratch, which, p)), { recursive: true });
      ctx.artifacts.materialize(entry, join(scratch, which, p));
      return `${which}/${p}`;
    };
    const a = side(beforeEntry, 'a');
    const b = side(afterEntry, 'b');
    if (a === '/dev/null' && b === '/dev/null') continue;
    // Relative a/PATH and b/PATH with --no-prefix: the headers read a/PATH b/PATH, a patch `git apply` takes.
    const r = await (await loadExeca())('git', ['diff', '--no-index', '--no-color', '--no-prefix', '--', a, b], { reject: false, cwd: scratch });
    parts.push(String(r.stdout));
  }
  return parts.filter(Boolean).join('\n') + (parts.some(Boolean) ? '\n' : '');
}
