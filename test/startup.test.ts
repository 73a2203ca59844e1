import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
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

describe('bin/pairbench.js picks the bundle only while it is fresh', () => {
  // A copy of the real bin/ beside a dist/ whose two entries say which of them ran.
  function fakePackage(entries: { compiled?: number; bundled?: number }): string {
    const pkg = tempDir('pairbench-bin-');
    mkdirSync(join(pkg, 'bin'));
    copyFileSync(join(ROOT, 'bin', 'pairbench.js'), join(pkg, 'bin', 'pairbench.js'));
    writeFileSync(join(pkg, 'package.json'), '{ "type": "module" }\n');
    for (const [name, dir, at] of [
      ['compiled', 'cli', entries.compiled],
      ['bundled', 'bundle', entries.bundled],
    ] as const) {
      if (at === undefined) continue;
      mkdirSync(join(pkg, 'dist', dir), { recursive: true });
      const file = join(pkg, 'dist', dir, 'index.js');
      writeFileSync(file, `process.stdout.write(${JSON.stringify(name)});\n`);
      utimesSync(file, at, at);
    }
    return pkg;
  }
  const ran = (pkg: string) => spawnSync(process.execPath, [join(pkg, 'bin', 'pairbench.js')], { encoding: 'utf8', env: ENV });

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
    expect(at('bundle/index.js'), 'dist/bundle is missing or older than dist/cli: run node scripts/bundle-cli.mjs (npm test does)').toBeGreaterThanOrEqual(
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
    const bundled = plan('dist/bundle/index.js');
    expect(bundled).toEqual(plan('dist/cli/index.js'));
    expect(JSON.stringify(bundled)).toMatch(/"key":"[0-9a-f]{64}"/);
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
