/**
 * A bundle may come from anyone: its readers (the Harbor job, the viewer) check each JSON file
 * they believe by the descriptor of the kind that wrote it. The cases come from the readers' own
 * lists (HARBOR_SOURCES, BUNDLED): each JSON file is forged in turn in a real bundle of the
 * shipped example (its golden store, exported here), and the reader must refuse it by name.
 */
import { cpSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../cli/main.js';
import type { JsonArtifact } from '../pipeline/artifact.js';
import { writeHarborJob } from '../report/harbor-layout.js';
import { BUNDLED, HARBOR_SOURCES, RESULTS_FILE } from '../steps/bundle-layout.js';
import { BundleReader } from '../viewer/bundle-reader.js';
import { goldenStore } from './golden-store.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
let work: string;
let bundle: string;

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'pairbench-bundle-readers-'));
  await goldenStore('bench.config.yaml', join(work, 'store'));
  let out = '';
  const code = await main(['export', '--config', join(ROOT, 'bench.config.yaml'), '--store', join(work, 'store'), '--out', join(work, 'out'), '--json'], {
    stdout: { write: (s: string) => (out += s) },
    stderr: { write: (s: string) => (out += s) },
    env: { PATH: process.env['PATH'], CI: '1' },
  });
  expect(code, out).toBe(0);
  bundle = (JSON.parse(out) as { bundles: { dir: string }[] }).bundles[0]!.dir;
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

const isJson = (d: unknown): d is JsonArtifact<unknown> => typeof d === 'object' && d !== null && 'problems' in d;

/** Every path (relative to the bundle) of a file named `name`. */
function filesNamed(dir: string, name: string): string[] {
  return (readdirSync(dir, { recursive: true }) as string[]).filter((p) => p.split('/').pop() === name).sort();
}

/** A copy of the bundle with every file named `name` replaced by JSON of another type (two kinds may share a name: certify's and verify's verdict.json). */
function forged(name: string): { dir: string; paths: string[] } {
  const dir = mkdtempSync(join(work, 'forged-'));
  cpSync(bundle, dir, { recursive: true });
  const paths = filesNamed(dir, name);
  for (const p of paths) writeFileSync(join(dir, p), JSON.stringify(['forged']));
  return { dir, paths };
}

describe("a bundle's JSON files, checked by their readers", () => {
  it('the Harbor job: each JSON file it reads, forged in turn, is refused naming that file', () => {
    const json = Object.entries(HARBOR_SOURCES).filter(([, d]) => isJson(d)) as [string, JsonArtifact<unknown>][];
    expect(json.map(([k]) => k)).toEqual(expect.arrayContaining(['results', 'verdict', 'certification']));
    const honest = writeHarborJob(bundle, HARBOR_SOURCES, join(work, 'job-honest'));
    expect(honest.ok, honest.ok ? '' : honest.error).toBe(true);
    for (const [what, d] of json) {
      expect(filesNamed(bundle, d.name).length, `${what}: the example's bundle holds a ${d.name}`).toBeGreaterThan(0);
      const { dir, paths } = forged(d.name);
      const r = writeHarborJob(dir, HARBOR_SOURCES, join(work, `job-${what}`));
      expect(r.ok, `${what}: a forged ${d.name} was believed`).toBe(false);
      if (!r.ok)
        expect(
          paths.some((p) => r.error.startsWith(`${join(dir, p)}: `)),
          r.error,
        ).toBe(true);
    }
  });

  it('the viewer: a forged results file is not a bundle, a forged trajectory is not shown', () => {
    const honest = new BundleReader(bundle);
    const attempt = honest.resultsFile().attempts[0]!;
    expect(honest.attempt(attempt.node)?.trajectory).not.toBeNull();

    const results = forged(RESULTS_FILE.name);
    expect(() => new BundleReader(results.dir).resultsFile()).toThrow(/is not a pairbench bundle: .*must be object/);

    const trajectory = forged(BUNDLED.trajectory.name);
    const shown = new BundleReader(trajectory.dir);
    for (const a of shown.resultsFile().attempts) expect(shown.attempt(a.node)?.trajectory, a.node).toBeNull();
  });
});
