/**
 * Bundles at disk speed: writing a stored bundle out (`pairbench export`: every blob read,
 * verified and written, synced once) and `pairbench verify-bundle` (every file re-hashed
 * against manifest.json), against `sha256sum` over the same files in the same run.
 * Goal: each at >= 50% of sha256sum's throughput.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeStoredBundle } from '../cli/stored-bundle.js';
import { writeBundle } from '../report/bundle.js';
import { Store } from '../pipeline/store/store.js';
import { median, must } from './measure.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const bin = join(root, 'bin', 'pairbench.js');
const LARGE = 48; // x 4 MiB
const SMALL = 2000; // x 4 KiB
const REPS = 3;

function timed(f: () => void): number {
  const t = process.hrtime.bigint();
  f();
  return Number(process.hrtime.bigint() - t) / 1e6;
}

const work = mkdtempSync(join(tmpdir(), 'pairbench-bundle-bench-'));
try {
  // The bundle: large trajectories and many small per-attempt files, as a cohort's export holds.
  const src = join(work, 'src');
  const files = [];
  for (let i = 0; i < LARGE; i++) files.push({ path: `attempts/large-${i}.bin`, bytes: randomBytes(4 << 20) });
  for (let i = 0; i < SMALL; i++) files.push({ path: `attempts/${i % 50}/small-${i}.json`, bytes: randomBytes(4 << 10) });
  const written = writeBundle(src, files);
  if (!written.ok) throw new Error(written.error);
  const totalBytes = files.reduce((a, f) => a + f.bytes.length, 0);
  // The anchor's input: the same files as a sha256sum check list.
  const sums =
    Object.entries(written.value.files)
      .map(([p, e]) => `${e.sha256}  ${p}`)
      .join('\n') + '\n';
  writeFileSync(join(work, 'SHA256SUMS'), sums);
  const store = new Store(join(work, 'store'));
  store.init();
  const entry = store.cas.putPath(src);

  const anchor: number[] = [];
  const exported: number[] = [];
  const verified: number[] = [];
  for (let r = 0; r < REPS; r++) {
    anchor.push(timed(() => must(spawnSync('sha256sum', ['--quiet', '-c', join(work, 'SHA256SUMS')], { cwd: src, encoding: 'utf8' }), 'sha256sum -c')));
    const dest = join(work, `out-${r}`);
    mkdirSync(dest);
    exported.push(
      timed(() => {
        const w = writeStoredBundle(store, entry, dest);
        if (!w.ok) throw new Error(w.error);
      }),
    );
    verified.push(timed(() => must(spawnSync(process.execPath, [bin, 'verify-bundle', dest], { encoding: 'utf8' }), 'pairbench verify-bundle')));
    rmSync(dest, { recursive: true, force: true });
  }
  const mbps = (ms: number) => totalBytes / 1e6 / (ms / 1000);
  const a = mbps(median(anchor));
  console.log(`bundle benchmark: ${LARGE} x 4 MiB + ${SMALL} x 4 KiB files (${(totalBytes / 1e6).toFixed(0)} MB), median of ${REPS}, page cache warm\n`);
  console.log(`  sha256sum -c (the anchor)   ${a.toFixed(0).padStart(6)} MB/s`);
  let ok = true;
  for (const [name, ms] of [
    ['export (write + sync once)', median(exported)],
    ['verify-bundle (process)', median(verified)],
  ] as const) {
    const x = mbps(ms) / a;
    ok &&= x >= 0.5;
    console.log(
      `  ${name.padEnd(28)}${mbps(ms).toFixed(0).padStart(6)} MB/s   ${(x * 100).toFixed(0).padStart(4)}% of sha256sum   goal >= 50% ${x >= 0.5 ? 'PASS' : 'MISSED'}`,
    );
  }
  process.exitCode = ok ? 0 : 1;
} finally {
  rmSync(work, { recursive: true, force: true });
}
