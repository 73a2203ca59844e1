/**
 * What the agent CLIs that are Node scripts (Qwen Code, Gemini CLI) share: where their package
 * is, their version from `node SCRIPT --version`, and the shell line that writes their settings
 * into the attempt's private home before running them with the host's node.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { installedPackageDir } from '../pipeline/installed-package.js';
import { packageRoot } from '../pipeline/package-root.js';
import { binaryVersion } from './binary-version.js';

/** An agent package's directory, wherever Node finds it from pairbench (or where it would be). */
export function agentPackageDir(pkg: string): string {
  return installedPackageDir(pkg) ?? join(packageRoot(), 'node_modules', pkg);
}

/** `node SCRIPT --version`'s last line (cached per script file by binaryVersion), or not-installed. */
export function nodeCliVersion(script: string, env: Record<string, string> = {}): string {
  return binaryVersion(script, () => {
    const r = spawnSync(process.execPath, [script, '--version'], { encoding: 'utf8', env: { HOME: '/nonexistent', PATH: process.env['PATH'] ?? '', ...env } });
    return r.status === 0 ? String(r.stdout).trim().split('\n').pop()!.trim() : 'not-installed';
  });
}

/**
 * `sh -c` script: write the JSON in $PAIRBENCH_AGENT_SETTINGS to `file` (a path under a variable
 * of the attempt's env, e.g. `$HOME/.qwen/settings.json`: the agent rewrites it, so it must be
 * a writable copy), then exec the Node script given as $0 with the rest of the argv.
 */
export function writeSettingsThenRun(file: string): string {
  return `mkdir -p "$(dirname "${file}")" && printf %s "$PAIRBENCH_AGENT_SETTINGS" > "${file}" && exec node "$0" "$@"`;
}
