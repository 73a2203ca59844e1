/**
 * `npm run bench`: every benchmark, in turn, each printing its figures beside its goal and
 * the anchor it measured in the same run; a missed goal does not stop the others. Exits 1
 * at the end if any goal was missed (or a benchmark failed to run).
 */
import { spawnSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const BENCHES = [
  'engine-bench.js',
  'execution-bench.js',
  'materialize-bench.js',
  'bundle-bench.js',
  'analyze-bench.js',
  'swebench-bench.js',
  'scale-out-bench.js',
  'turbo-bench.js',
  'pr-job-bench.js',
  'certify-bench.js',
  'generate-bench.js',
];
const results: { name: string; code: number | null; seconds: number }[] = [];
// Every figure is a ratio to an anchor measured in the same run; the machine's load says how far to trust them.
const load = () =>
  `load average (1, 5, 15 min): ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`;
for (const name of BENCHES) {
  process.stdout.write(`\n${name.replace(/\.js$/, '')}: ${load()}\n`);
  const t = performance.now();
  const r = spawnSync(process.execPath, [join(here, name)], { stdio: 'inherit' });
  results.push({ name, code: r.status, seconds: (performance.now() - t) / 1000 });
}
const missed = results.filter((r) => r.code !== 0);
process.stdout.write(
  [
    '',
    'benchmarks:',
    ...results.map((r) => `  ${r.code === 0 ? 'PASS' : 'MISS'}  ${r.name.replace(/\.js$/, '')} (${r.seconds.toFixed(0)} s)`),
    missed.length ? `${missed.length} benchmark(s) missed a goal` : 'every goal met',
    load(),
  ].join('\n') + '\n',
);
process.exitCode = missed.length ? 1 : 0;
