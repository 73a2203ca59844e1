/**
 * `generate stub_function` on a repository with 12 candidates (12 exported functions, each
 * covered by a node:test test), every candidate checked: its suite run with the stub, its
 * discrimination check, certify's scan. Candidates checked several at once (the default: 4, or
 * the cores if fewer) against one at a time (`--jobs 1`, what generate did before), A/B in pairs
 * in one run; the same tasks either way. Goal: several at once takes at most 0.8x the wall of one
 * at a time (median of the pairs), and the two write the same task ids.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { git, median, must, pairedRatios, spread, timed, type Timing } from './measure.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const bin = join(root, 'bin', 'pairbench.js');
const CANDIDATES = 12;
const ROUNDS = 3;

/** A CommonJS library of CANDIDATES functions in three files, a node:test file for each source file. */
function repository(repo: string): void {
  mkdirSync(join(repo, 'lib'), { recursive: true });
  mkdirSync(join(repo, 'test'), { recursive: true });
  writeFileSync(join(repo, 'package.json'), JSON.stringify({ name: 'mathkit', version: '1.0.0', scripts: { test: 'node --test' } }, null, 2));
  const perFile = CANDIDATES / 3;
  for (let f = 0; f < 3; f++) {
    const names = Array.from({ length: perFile }, (_, i) => `op${f}x${i}`);
    const src = names.map((n, i) => `/** ${n}: a times ${i + 2}, plus ${f}. */\nfunction ${n}(a) {\n  return a * ${i + 2} + ${f};\n}\n`).join('\n');
    writeFileSync(join(repo, 'lib', `ops${f}.js`), `'use strict';\n\n${src}\nmodule.exports = { ${names.join(', ')} };\n`);
    const tests = names.map((n, i) => `test('${n} scales', () => assert.strictEqual(${n}(5), ${5 * (i + 2) + f}));`).join('\n');
    writeFileSync(
      join(repo, 'test', `ops${f}.test.js`),
      `'use strict';\nconst test = require('node:test');\nconst assert = require('node:assert');\nconst { ${names.join(', ')} } = require('../lib/ops${f}.js');\n${tests}\n`,
    );
  }
  git(repo, 'init', '-q', '-b', 'main');
  git(repo, 'add', '-A');
  git(repo, 'commit', '-q', '-m', 'mathkit');
}

function generate(dir: string, out: string, jobs: number | null): { timing: Timing; ids: string[] } {
  const args = [bin, 'generate', 'stub_function', '--repo', join(dir, 'repo'), '--commit', 'HEAD', '--out', out, '--count', String(CANDIDATES)];
  const r = timed(() => spawnSync(process.execPath, jobs === null ? args : [...args, '--jobs', String(jobs)], { encoding: 'utf8', cwd: dir }));
  must(r.value, `pairbench generate${jobs === null ? '' : ` --jobs ${jobs}`}`);
  const ids = readdirSync(out).sort();
  rmSync(out, { recursive: true, force: true });
  return { timing: r.timing, ids };
}

console.log(`generate benchmark: stub_function on a repository with ${CANDIDATES} candidates, several at once against one at a time (A/B in pairs)\n`);
const dir = mkdtempSync(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'pairbench-generate-bench-'));
let ok = true;
try {
  repository(join(dir, 'repo'));
  const parallel: Timing[] = [];
  const one: Timing[] = [];
  let same = true;
  let written = 0;
  for (let i = 0; i < ROUNDS; i++) {
    const a = generate(dir, join(dir, `a${i}`), null);
    const b = generate(dir, join(dir, `b${i}`), 1);
    parallel.push(a.timing);
    one.push(b.timing);
    same &&= a.ids.join() === b.ids.join();
    written = a.ids.length;
  }
  const p = pairedRatios(parallel, one);
  const wallX = median(p.wall);
  const pass = wallX <= 0.8 && same && written === CANDIDATES;
  ok &&= pass;
  const per = (ts: Timing[]) => spread(ts.map((t) => t.wallMs / CANDIDATES));
  console.log(
    `  several at once (${Math.min(4, availableParallelism())}): in all ${spread(parallel.map((t) => t.wallMs))} ms wall, CPU ${spread(parallel.map((t) => t.cpuMs))} ms; per candidate ${per(parallel)} ms\n` +
      `  one at a time (--jobs 1): in all ${spread(one.map((t) => t.wallMs))} ms wall, CPU ${spread(one.map((t) => t.cpuMs))} ms; per candidate ${per(one)} ms\n` +
      `  paired x${ROUNDS}: wall ${spread(p.wall, 2)}x, CPU ${spread(p.cpu, 2)}x; ${written} tasks written, ${same ? 'the same' : 'DIFFERENT'} ids either way; goal <= 0.8x wall (median), the same ${CANDIDATES} tasks ${pass ? 'PASS' : 'MISSED'}`,
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
process.exitCode = ok ? 0 : 1;
