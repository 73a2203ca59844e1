/**
 * Golden stores: a shipped config run end to end once per suite run, and copied to each test
 * that needs its results. Building the example costs ~45 s of CPU (32 attempts of the real
 * Claude Code CLI, their verifications and canaries); several test files need it (cohorts, github-action,
 * remote-cache, viewer), so the suite builds it once instead of once each.
 *
 * Whichever test asks first builds it, in its own worker (mkdir is the lock); any other worker
 * waits for the record the builder leaves (a file event, not a sleep), whether the build passed
 * or failed. A failed build fails every test that asked, with the build's output. The directory
 * is per suite run (test/golden-setup.ts); outside vitest's globalSetup (an editor running one
 * file) a directory per process is used.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, watch, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { inject } from 'vitest';
import { main } from '../cli/main.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

/** Every config the repository ships: the quick-start example and each cohort file. */
export const SHIPPED_CONFIGS = ['bench.config.yaml', ...readdirSync(join(ROOT, 'cohorts')).flatMap((f) => (f.endsWith('.yaml') ? [`cohorts/${f}`] : []))];

/** What building a golden store gave: the run's exit code and output, as the test that built it saw them. */
export interface GoldenBuild {
  config: string;
  code: number;
  stdout: string;
  stderr: string;
}

let ownDir: string | undefined;
function goldenDir(): string {
  const provided = inject('goldenDir') as string | undefined;
  if (provided) return provided;
  ownDir ??= mkdtempSync(join(tmpdir(), 'pairbench-golden-'));
  return ownDir;
}

/** Resolves once `file` exists, woken by the directory's events. */
function fileAppears(file: string): Promise<void> {
  return new Promise((resolve) => {
    const watcher = watch(dirname(file), () => {
      if (existsSync(file)) {
        watcher.close();
        resolve();
      }
    });
    // It may have appeared before the watcher was set.
    if (existsSync(file)) {
      watcher.close();
      resolve();
    }
  });
}

/** Runs `config` end to end into `store`; whatever happens, a record (a waiting worker needs one). */
async function build(config: string, store: string): Promise<GoldenBuild> {
  let stdout = '';
  let stderr = '';
  let code: number;
  try {
    execFileSync(process.execPath, [join(ROOT, 'scripts', 'build-fixtures.mjs'), '--quiet'], { stdio: 'inherit' });
    code = await main(['run', '--config', join(ROOT, config), '--store', store], {
      stdout: { write: (s: string) => (stdout += s) },
      stderr: { write: (s: string) => (stderr += s) },
      env: { PATH: process.env['PATH'], CI: '1' },
    });
  } catch (e) {
    code = 70;
    stderr += String((e as Error).stack ?? e);
  }
  return { config, code, stdout, stderr };
}

/**
 * A fresh copy of the store `config` (relative to the checkout) leaves when run end to end,
 * and how that run went. The copy is the caller's to change; the golden store is never written
 * after it is built.
 */
export async function goldenStore(config: string, into: string): Promise<GoldenBuild> {
  const base = join(goldenDir(), config.replace(/[^A-Za-z0-9]/g, '_'));
  const record = `${base}.json`;
  let mine = false;
  try {
    mkdirSync(`${base}.lock`);
    mine = true;
  } catch {
    // another test builds it
  }
  if (mine) {
    const result = await build(config, join(base, 'store'));
    writeFileSync(`${record}.tmp`, JSON.stringify(result));
    renameSync(`${record}.tmp`, record);
  } else await fileAppears(record);
  const result = JSON.parse(readFileSync(record, 'utf8')) as GoldenBuild;
  if (result.code !== 0) throw new Error(`the golden run of ${config} exited ${result.code}:\n${result.stderr}\n${result.stdout}`);
  cpSync(join(base, 'store'), into, { recursive: true });
  return result;
}
