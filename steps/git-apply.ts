import { dirname } from 'node:path';
import { loadExeca } from '../sandboxes/lazy-execa.js';

/**
 * Applies a unified diff to a plain directory tree. The tree may sit inside some
 * other git repository (the project, the store): without a ceiling, `git apply`
 * would find that repository, treat the patch's paths as outside it, skip them and
 * still exit 0. The ceiling makes it treat `tree` as a plain directory.
 */
export async function gitApply(tree: string, patch: string): Promise<{ ok: boolean; stderr: string }> {
  const r = await (
    await loadExeca()
  )('git', ['apply', '--whitespace=nowarn', '-'], {
    cwd: tree,
    input: patch,
    reject: false,
    env: { GIT_CEILING_DIRECTORIES: dirname(tree) },
  });
  return { ok: r.exitCode === 0, stderr: String(r.stderr ?? '').trim() };
}
