/**
 * scripts/prepare.mjs, npm's `prepare`: a checkout that is built is not built again (npm 11 runs
 * prepare on the first `npx pairbench` in each checkout), and one whose sources or build changed
 * is. Run on a copy of this checkout (its build and stamp included, as a clone has them after
 * `npm ci`); the sources changed are generated from the inputs the script derives (every
 * directory tsconfig.json includes), so a new source directory is covered without a new case.
 */
import { spawnSync } from 'node:child_process';
import { appendFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHECKOUT, checkoutCopy } from './checkout-copy.js';

const check = (dir: string) => spawnSync(process.execPath, [join(dir, 'scripts', 'prepare.mjs'), '--check'], { cwd: dir, encoding: 'utf8' });

/** The first source file (by name) under `dir`, a directory of the copy. */
function firstSource(dir: string): string {
  for (const name of readdirSync(dir).sort()) {
    if (name.startsWith('.') || name === 'node_modules') continue;
    const p = join(dir, name);
    if (statSync(p).isDirectory()) {
      const found = firstSource(p);
      if (found) return found;
    } else if (/\.(ts|mjs|js|json)$/.test(name)) return p;
  }
  return '';
}

/** Runs `change` on `file`, expects the check to ask for a build naming `why`, restores the file, expects it up to date again. */
function expectRebuildOn(dir: string, file: string, why: string, change: (f: string) => void) {
  const before = readFileSync(file);
  change(file);
  const r = check(dir);
  expect(r.status, `${file}: ${r.stdout}${r.stderr}`).toBe(1);
  expect(r.stdout).toContain(why);
  writeFileSync(file, before);
  expect(check(dir).status, `${file} restored`).toBe(0);
}

describe('prepare builds only what is not built', () => {
  let dir: string;
  beforeAll(() => {
    const own = check(CHECKOUT);
    expect(own.status, `this checkout's dist/ is not the build of its sources (${own.stdout.trim()}): run node scripts/prepare.mjs`).toBe(0);
    dir = checkoutCopy('pairbench-prepare-');
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('a copy of a built checkout is up to date', () => {
    const r = check(dir);
    expect(r.stdout).toContain('up to date');
    expect(r.status).toBe(0);
  });

  it('each source directory tsconfig.json includes, and the build files, are inputs: a change to any asks for a build', () => {
    const include = (JSON.parse(readFileSync(join(dir, 'tsconfig.json'), 'utf8')) as { include: string[] }).include;
    expect(include.length).toBeGreaterThan(5);
    for (const d of [...include, 'viewer-app', 'scripts', 'bin', 'schemas']) {
      const file = firstSource(join(dir, d));
      expect(file, `a source file under ${d}/`).not.toBe('');
      expectRebuildOn(dir, file, 'sources changed', (f) => appendFileSync(f, '\n'));
    }
    for (const f of ['package.json', 'package-lock.json', 'tsconfig.json'])
      expectRebuildOn(dir, join(dir, f), 'sources changed', (p) => appendFileSync(p, ' '));
  });

  it('a changed build asks for a build; what the CLI writes into dist/ as it runs (V8 code cache) and a bench cache do not', () => {
    expectRebuildOn(dir, join(dir, 'dist', 'cli', 'main.js'), 'dist/ changed', (f) => appendFileSync(f, '\n// edited\n'));
    mkdirSync(join(dir, 'dist', 'bundle', '.v8-cache'), { recursive: true });
    writeFileSync(join(dir, 'dist', 'bundle', '.v8-cache', 'planted'), 'x');
    mkdirSync(join(dir, 'bench', '.cache'), { recursive: true });
    writeFileSync(join(dir, 'bench', '.cache', 'planted.json'), '{}');
    expect(check(dir).status).toBe(0);
  });

  it('a tsc since the build (dist/ rewritten with the same bytes) asks for a build: bin/ would run the compiled modules, not the bundle and its memo', () => {
    const entry = join(dir, 'dist', 'cli', 'index.js');
    const st = statSync(entry);
    utimesSync(entry, st.atime, new Date(statSync(join(dir, 'dist', 'bundle', 'main.cjs')).mtimeMs + 1000));
    const r = check(dir);
    expect(r.status, r.stdout).toBe(1);
    expect(r.stdout).toContain('newer than the CLI bundle');
    utimesSync(entry, st.atime, st.mtime);
    expect(check(dir).status).toBe(0);
  });

  it("the first npx pairbench in a fresh copy runs the copy's build as it is: no second build", () => {
    const main = join(dir, 'dist', 'cli', 'main.js');
    const built = statSync(main).mtimeMs;
    const cache = mkdtempSync(join(tmpdir(), 'pairbench-prepare-npm-'));
    try {
      const r = spawnSync('npx', ['pairbench', '--version'], {
        cwd: dir,
        encoding: 'utf8',
        env: { PATH: process.env['PATH'], HOME: process.env['HOME'], npm_config_cache: cache, npm_config_foreground_scripts: 'true' },
      });
      expect(r.status, r.stderr).toBe(0);
      expect(r.stdout).toMatch(/^\d+\.\d+\.\d+$/m);
      // npm ran prepare (its self-execution installs the checkout), which found nothing to build.
      expect(r.stdout + r.stderr).toContain('nothing to build');
      expect(statSync(main).mtimeMs).toBe(built);
    } finally {
      rmSync(cache, { recursive: true, force: true });
    }
  });
});
