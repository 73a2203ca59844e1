import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { libcOfInterpreter, libcOfReport } from '../steps/command.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const ENV = { PATH: process.env['PATH'], CI: '1' };
const scratch: string[] = [];
afterEach(() => {
  for (const d of scratch.splice(0)) rmSync(d, { recursive: true, force: true });
});
const tempDir = (prefix: string) => {
  const d = mkdtempSync(join(tmpdir(), prefix));
  scratch.push(d);
  return d;
};

// A copy of the real bin/ beside a dist/ whose two entries say which of them ran.
function fakePackage(entries: { compiled?: number; bundled?: number }): string {
  const pkg = tempDir('pairbench-bin-');
  mkdirSync(join(pkg, 'bin'));
  for (const f of ['pairbench.js', 'code-cache.js', 'package.json']) copyFileSync(join(ROOT, 'bin', f), join(pkg, 'bin', f));
  writeFileSync(join(pkg, 'package.json'), '{ "type": "module" }\n');
  const write = (file: string, text: string, at: number) => {
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, text);
    utimesSync(file, at, at);
  };
  if (entries.compiled !== undefined) write(join(pkg, 'dist', 'cli', 'index.js'), "process.stdout.write('compiled');\n", entries.compiled);
  if (entries.bundled !== undefined)
    write(join(pkg, 'dist', 'bundle', 'main.cjs'), "exports.main = async () => (process.stdout.write('bundled'), 0);\n", entries.bundled);
  return pkg;
}
const ran = (pkg: string) => spawnSync(process.execPath, [join(pkg, 'bin', 'pairbench.js')], { encoding: 'utf8', env: ENV });

describe('bin/pairbench.js picks the bundle only while it is fresh', () => {
  it('runs the bundle built after the compiled modules', () => {
    expect(ran(fakePackage({ compiled: 1_000, bundled: 2_000 })).stdout).toBe('bundled');
  });

  it('runs the compiled modules when tsc wrote them after the bundle (a stale bundle is never run)', () => {
    expect(ran(fakePackage({ compiled: 3_000, bundled: 2_000 })).stdout).toBe('compiled');
  });

  it('runs the compiled modules when there is no bundle, and says what to do when nothing is built', () => {
    expect(ran(fakePackage({ compiled: 1_000 })).stdout).toBe('compiled');
    const none = ran(fakePackage({ bundled: 1_000 }));
    expect(none.status).toBe(2);
    expect(none.stderr).toBe('pairbench: not built yet; run `npm run build` in the pairbench directory\n');
  });

  it('the test command bundled this build: the CLI the tests run is the bundle users run', () => {
    const at = (p: string) => statSync(join(ROOT, 'dist', p), { throwIfNoEntry: false })?.mtimeMs ?? -Infinity;
    expect(at('bundle/main.cjs'), 'dist/bundle is missing or older than dist/cli: run node scripts/bundle-cli.mjs (npm test does)').toBeGreaterThanOrEqual(
      at('cli/index.js'),
    );
  });

  it('the bundle and the compiled modules plan the same keys', () => {
    const dir = tempDir('pairbench-bundle-keys-');
    writeFileSync(join(dir, 'in.txt'), 'x\n');
    writeFileSync(
      join(dir, 'bench.config.yaml'),
      'steps:\n  a: { kind: command, matrix: { n: 3 }, deps: [in.txt], cmd: "cat in.txt > o", outs: [o] }\n  b: { kind: command, needs: [a], cmd: "true > p", outs: [p] }\n',
    );
    const plan = (entry: string) => {
      const r = spawnSync(process.execPath, [join(ROOT, entry), 'plan', '--json', '--config', join(dir, 'bench.config.yaml')], { encoding: 'utf8', env: ENV });
      expect(r.stderr).toBe('');
      return JSON.parse(r.stdout) as unknown;
    };
    const bundled = plan('bin/pairbench.js');
    expect(bundled).toEqual(plan('dist/cli/index.js'));
    expect(JSON.stringify(bundled)).toMatch(/"key":"[0-9a-f]{64}"/);
  });
});

describe("the bundle's code cache", () => {
  const cacheFiles = (pkg: string) => {
    const dir = join(pkg, 'dist', 'bundle', '.v8-cache');
    return existsSync(dir) ? readdirSync(dir).filter((f) => f.startsWith('main.cjs.')) : [];
  };

  it('is written by the first start and used, not rewritten, by the next', () => {
    const pkg = fakePackage({ compiled: 1_000, bundled: 2_000 });
    expect(ran(pkg).stdout).toBe('bundled');
    const [cache] = cacheFiles(pkg);
    expect(cache).toMatch(/^main\.cjs\.[0-9a-f]{40}$/);
    const file = join(pkg, 'dist', 'bundle', '.v8-cache', cache!);
    utimesSync(file, 5_000, 5_000);
    expect(ran(pkg).stdout).toBe('bundled');
    // V8 accepted it: a rejected cache would have been written again.
    expect(statSync(file).mtimeMs).toBe(5_000_000);
  });

  it('never runs the code of an earlier build, even one of the same length (V8 itself compares only the length)', () => {
    const pkg = fakePackage({ compiled: 1_000, bundled: 2_000 });
    expect(ran(pkg).stdout).toBe('bundled');
    const main = join(pkg, 'dist', 'bundle', 'main.cjs');
    const before = readFileSync(main, 'utf8');
    const after = before.replace("'bundled'", "'BUNDLED'");
    expect(after.length).toBe(before.length);
    writeFileSync(main, after);
    utimesSync(main, 2_000, 2_000);
    expect(ran(pkg).stdout).toBe('BUNDLED');
    expect(cacheFiles(pkg)).toHaveLength(2);
  });

  it('a cache file that is not V8 code is refused by V8, and the start is not affected', () => {
    const pkg = fakePackage({ compiled: 1_000, bundled: 2_000 });
    expect(ran(pkg).stdout).toBe('bundled');
    const file = join(pkg, 'dist', 'bundle', '.v8-cache', cacheFiles(pkg)[0]!);
    writeFileSync(file, 'not compiled code at all');
    const again = ran(pkg);
    expect([again.status, again.stdout, again.stderr]).toEqual([0, 'bundled', '']);
    // Written again from this start's compilation.
    expect(readFileSync(file).toString('latin1')).not.toContain('not compiled code');
  });
});

describe('the libc a command step is keyed by', () => {
  it('is read from the dynamic loader Node names, and agrees with Node’s own report on this machine', () => {
    expect(libcOfInterpreter()).toBe(libcOfReport());
  });

  it('tells musl from glibc by the loader, and gives up on what is not a dynamically linked ELF file', () => {
    const dir = tempDir('pairbench-elf-');
    const elf = (name: string, interp: string) => {
      const bytes = Buffer.alloc(1024);
      Buffer.from('\x7fELF', 'latin1').copy(bytes, 0);
      Buffer.from(interp, 'latin1').copy(bytes, 0x318);
      writeFileSync(join(dir, name), bytes);
      return join(dir, name);
    };
    expect(libcOfInterpreter(elf('musl', '/lib/ld-musl-x86_64.so.1'))).toBe('musl');
    expect(libcOfInterpreter(elf('glibc', '/lib64/ld-linux-x86-64.so.2'))).toBe('glibc');
    expect(libcOfInterpreter(elf('glibc-arm', '/lib/ld-linux-aarch64.so.1'))).toBe('glibc');
    expect(libcOfInterpreter(elf('static', ''))).toBeUndefined();
    writeFileSync(join(dir, 'script'), '#!/bin/sh\n# /lib/ld-musl-x86_64.so.1\n');
    expect(libcOfInterpreter(join(dir, 'script'))).toBeUndefined();
    expect(libcOfInterpreter(join(dir, 'missing'))).toBeUndefined();
  });
});
