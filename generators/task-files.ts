import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { stringify } from 'yaml';
import { packageRoot } from '../pipeline/package-root.js';
import type { ReportFormat } from '../test-results/index.js';

/** Everything a generated task directory holds, before it is written. */
export interface TaskFiles {
  id: string;
  family: string;
  category: 'stub_function' | 'revert_reimplement';
  commit: string;
  prompt: string;
  allowedPaths: string[];
  failToPass: Record<string, string>;
  passToPass: Record<string, string>;
  timeoutSec: number;
  setupPatch: string;
  solutionPatch: string;
  /** What the setup patch removes from the tree beyond the task's own change, and why (written as redactions.json). */
  redactions?: VendoredRedaction[];
  /** One invocation of the test runner for every test, read from its report (verifier.runner). */
  runner?: { command: string; report: ReportFormat };
}

/** A vendored copy of the package under test that the setup patch takes out of the tree. */
export interface VendoredRedaction {
  /** The directory, with a trailing slash (node_modules/minimist/). */
  path: string;
  replaced_by: string;
  reason: string;
  /** Every file removed, with its sha256. */
  files: { path: string; sha256: string }[];
}

/** The receipt of what a generated task's setup patch redacts (beside task.yaml). */
export const REDACTIONS_FILE = 'redactions.json';

/**
 * Writes `<outDir>/<id>/` (task.yaml, setup.patch, solution.patch, and redactions.json when the
 * setup patch redacts a vendored copy), replacing what was there.
 * Nothing in the files depends on time or on anything but the arguments.
 */
export function writeTaskDir(outDir: string, repo: string, taskRepoPath: string | undefined, t: TaskFiles): string {
  const dir = resolve(outDir, t.id);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const schema = relative(dir, join(packageRoot(), 'schemas', 'task.schema.json'));
  const doc = {
    id: t.id,
    family: t.family,
    category: t.category,
    repo: { path: taskRepoPath ?? (relative(dir, resolve(repo)) || '.'), commit: t.commit, setup_patch: 'setup.patch' },
    prompt: t.prompt,
    allowed_paths: t.allowedPaths,
    verifier: {
      ...(t.runner ? { runner: t.runner } : {}),
      fail_to_pass: t.failToPass,
      ...(Object.keys(t.passToPass).length ? { pass_to_pass: t.passToPass } : {}),
      timeout: t.timeoutSec,
    },
    solution: { patch: 'solution.patch' },
  };
  const yaml = `# yaml-language-server: $schema=${schema}\n${stringify(doc, { lineWidth: 0, minContentWidth: 0 })}`;
  writeFileSync(join(dir, 'task.yaml'), yaml);
  writeFileSync(join(dir, 'setup.patch'), t.setupPatch);
  writeFileSync(join(dir, 'solution.patch'), t.solutionPatch);
  if (t.redactions?.length)
    writeFileSync(join(dir, REDACTIONS_FILE), JSON.stringify({ schema_version: 1, setup_patch: 'setup.patch', redacted: t.redactions }, null, 2) + '\n');
  return dir;
}
