import picomatch from 'picomatch';
import type { Task } from './task.js';

/**
 * Files the verifier owns: the tests, their configuration and the runner's entry
 * points. An attempt that edits them could make any answer pass (a test script
 * `exit 0`, an .npmrc `script-shell=/bin/true`, a node_modules/.bin/node shim, a
 * conftest.py hook, a pytest.ini `addopts=--collect-only`). At verify time they are
 * taken from the pristine tree whatever the agent wrote, and audit counts a change
 * to them as an out-of-bounds write.
 *
 * A task that asks for such a file (writing tests, adding a dependency) lists it in
 * its allowed_paths explicitly (not through `**`); `verifier.owned` adds patterns.
 */
export const VERIFIER_OWNED: readonly string[] = Object.freeze([
  // Test files.
  '**/test/**',
  '**/tests/**',
  '**/__tests__/**',
  '**/*.test.*',
  '**/*.spec.*',
  '**/test_*.py',
  '**/*_test.py',
  '**/*_test.go',
  // JavaScript runners: manifests (scripts), lockfiles, npm/yarn/pnpm settings, installed packages (.bin shims).
  '**/package.json',
  '**/package-lock.json',
  '**/npm-shrinkwrap.json',
  '**/yarn.lock',
  '**/pnpm-lock.yaml',
  '**/.npmrc',
  '**/.yarnrc',
  '**/.yarnrc.yml',
  '**/.pnpmfile.cjs',
  '**/node_modules/**',
  '**/jest.config.*',
  '**/vitest.config.*',
  '**/vite.config.*',
  '**/.mocharc*',
  '**/.taprc',
  // Python runners: hooks, settings, interpreter start-up files, compiled modules.
  '**/conftest.py',
  '**/pytest.ini',
  '**/tox.ini',
  '**/setup.cfg',
  '**/pyproject.toml',
  '**/noxfile.py',
  '**/sitecustomize.py',
  '**/usercustomize.py',
  '**/*.pth',
  '**/__pycache__/**',
  '**/.pytest_cache/**',
  // Build entry points a verifier may call.
  '**/Makefile',
]);

/** Allowed-path patterns that grant everything, and so never grant a verifier-owned file. */
const WILDCARD_ONLY = /^(\*\*?\/?)+$/;

/** A test of whether a workspace path belongs to the verifier, for this task. */
export function verifierOwned(task: Pick<Task, 'allowedPaths' | 'verifier'>): (path: string) => boolean {
  const owned = matcherOf([...VERIFIER_OWNED, ...(task.verifier.owned ?? [])]);
  const explicit = task.allowedPaths.filter((p) => !WILDCARD_ONLY.test(p));
  const granted = explicit.length ? matcherOf(explicit) : () => false;
  return (path) => owned(path) && !granted(path);
}

/** Compiled matchers by pattern list: compiling them cost every verify node ~1 ms (picomatch builds a regex per pattern). */
const matchers = new Map<string, (path: string) => boolean>();

function matcherOf(patterns: string[]): (path: string) => boolean {
  const key = JSON.stringify(patterns);
  let m = matchers.get(key);
  if (!m) {
    m = picomatch(patterns, { dot: true });
    if (matchers.size < 256) matchers.set(key, m);
  }
  return m;
}
