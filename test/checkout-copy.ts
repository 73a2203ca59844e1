/**
 * What a new clone of this checkout has: its tracked (and untracked, not ignored) files, plus
 * this checkout's node_modules (linked: installing is not under test) and its build, dist/
 * (copied, with the stamp scripts/prepare.mjs leaves, so a copy's `npm run prepare` or first
 * `npx pairbench` finds it built, as a clone's does after `npm ci`).
 */
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const CHECKOUT = join(dirname(fileURLToPath(import.meta.url)), '..');

export function checkoutCopy(prefix = 'pairbench-copy-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const files = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: CHECKOUT, encoding: 'utf8' })
    .split('\0')
    .filter(Boolean);
  for (const f of files) {
    if (!existsSync(join(CHECKOUT, f))) continue; // deleted in the work tree
    mkdirSync(dirname(join(dir, f)), { recursive: true });
    cpSync(join(CHECKOUT, f), join(dir, f), { verbatimSymlinks: true });
  }
  symlinkSync(join(CHECKOUT, 'node_modules'), join(dir, 'node_modules'));
  // With its times: which of the bundle and the compiled entry is newer decides what bin/ runs.
  cpSync(join(CHECKOUT, 'dist'), join(dir, 'dist'), { recursive: true, preserveTimestamps: true });
  return dir;
}
