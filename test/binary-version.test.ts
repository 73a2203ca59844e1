import { mkdtempSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { binaryVersion } from '../agents/binary-version.js';

// An agent CLI is asked its version once per installed binary, not on every command.
const dir = mkdtempSync(join(tmpdir(), 'pairbench-version-'));
const saved = process.env['XDG_CACHE_HOME'];
afterEach(() => {
  if (saved === undefined) delete process.env['XDG_CACHE_HOME'];
  else process.env['XDG_CACHE_HOME'] = saved;
});

describe('agent version cache', () => {
  it('asks once per binary (path, size, mtime, ctime, inode, device); a new install is asked again; the answer survives the process', () => {
    process.env['XDG_CACHE_HOME'] = join(dir, 'cache');
    const bin = join(dir, 'agent');
    writeFileSync(bin, 'v1 binary');
    let asked = 0;
    const ask = (v: string) => () => (asked++, v);
    expect(binaryVersion(bin, ask('1.0.0'))).toBe('1.0.0');
    expect(binaryVersion(bin, ask('never'))).toBe('1.0.0');
    expect(asked).toBe(1);
    // On disk for the next process, keyed by the binary's identity.
    expect(Object.values(JSON.parse(readFileSync(join(dir, 'cache', 'pairbench', 'agent-versions.json'), 'utf8')))).toEqual(['1.0.0']);
    // An upgrade changes the file: asked again.
    writeFileSync(bin, 'v2 binary, longer');
    utimesSync(bin, new Date(), new Date(Date.now() + 5000));
    expect(binaryVersion(bin, ask('2.0.0'))).toBe('2.0.0');
    expect(asked).toBe(2);
    // Rewritten in place at the same size, its mtime written back to the nanosecond: only the ctime moved. Asked again.
    const second = Math.floor(Date.now() / 1000) - 60;
    utimesSync(bin, second, second);
    expect(binaryVersion(bin, ask('2.0.0'))).toBe('2.0.0');
    expect(asked).toBe(3);
    const before = statSync(bin, { bigint: true });
    writeFileSync(bin, 'v3 binary, longer');
    utimesSync(bin, second, second);
    const after = statSync(bin, { bigint: true });
    expect([after.size, after.mtimeNs, after.ino]).toEqual([before.size, before.mtimeNs, before.ino]);
    expect(binaryVersion(bin, ask('3.0.0'))).toBe('3.0.0');
    expect(asked).toBe(4);
    // A missing binary is never cached.
    expect(binaryVersion(join(dir, 'missing'), ask('not-installed'))).toBe('not-installed');
    expect(binaryVersion(join(dir, 'missing'), ask('not-installed'))).toBe('not-installed');
    expect(asked).toBe(6);
    rmSync(dir, { recursive: true, force: true });
  });
});
