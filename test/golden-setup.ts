/**
 * vitest globalSetup: one directory for this run's golden stores (test/golden-store.ts), given to
 * every worker, and removed when the run ends. Nothing is built here: a run of one test file
 * that needs no golden store pays nothing for it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    goldenDir: string;
  }
}

export default function setup(project: TestProject): () => void {
  const dir = mkdtempSync(join(tmpdir(), 'pairbench-golden-'));
  project.provide('goldenDir', dir);
  return () => rmSync(dir, { recursive: true, force: true });
}
