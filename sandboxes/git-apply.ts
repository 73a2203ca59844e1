import { dirname } from 'node:path';
import { loadExeca } from './lazy-execa.js';

/** Git without the user's or the system's configuration: a patch applies the same on every machine. */
export const HERMETIC_GIT_ENV: Readonly<Record<string, string>> = {
  PATH: process.env['PATH'] ?? '/usr/local/bin:/usr/bin:/bin',
  HOME: '/nonexistent',
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
  LANG: 'C',
};

/**
 * Applies a unified diff to a plain directory tree (materialize, the verifier's test patch, a
 * generator's trees, the simple agent: one implementation). The tree may sit inside some other
 * git repository (the project, the store): without a ceiling, `git apply` would find that
 * repository, treat the patch's paths as outside it, skip them and still exit 0. The ceiling
 * makes it treat `tree` as a plain directory.
 */
export async function gitApply(tree: string, patch: string): Promise<{ ok: boolean; stderr: string }> {
  const r = await (
    await loadExeca()
  )('git', ['apply', '--whitespace=nowarn', '-'], {
    cwd: tree,
    input: patch,
    reject: false,
    extendEnv: false,
    env: { ...HERMETIC_GIT_ENV, GIT_CEILING_DIRECTORIES: dirname(tree) },
  });
  return { ok: r.exitCode === 0, stderr: String(r.stderr ?? '').trim() };
}
