// What an attempt wrote is stored straight from its workspace (no copy into out/changed first):
// the tree must be the very tree the copy gave, for any workspace, and reading it must stay as
// hostile-proof as the copy was (no link followed, nothing stored but the bytes the snapshot listed).
import { chmodSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Cas } from '../pipeline/store/cas.js';
import { copyWritten, diffSnapshots, snapshot, storeWritten } from '../steps/workspace.js';

let dir: string;
let cas: Cas;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'pairbench-store-written-'));
  mkdirSync(join(dir, 'cas'));
  mkdirSync(join(dir, 'tmp'));
  cas = new Cas(join(dir, 'cas'), join(dir, 'tmp'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** A small deterministic generator (mulberry32): each case is the same on every run. */
function rng(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function write(root: string, rel: string, text: string, executable: boolean): void {
  mkdirSync(dirname(join(root, rel)), { recursive: true });
  writeFileSync(join(root, rel), text);
  chmodSync(join(root, rel), executable ? 0o755 : 0o644);
}

/** A workspace before and after an "attempt": files written, rewritten, made executable, linked and deleted, at any depth. */
async function attempt(seed: number, ws: string) {
  const r = rng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const names = ['a', 'b', 'src', 'lib', 'x.txt', 'é', 'Z', 'a.b', 'a-b', '10', '9'];
  const path = () => Array.from({ length: 1 + Math.floor(r() * 3) }, () => pick(names)).join('/');
  const files = new Set<string>();
  // A path is free when no file lies below or above it, and it is not a directory left by a deletion.
  const ok = (p: string) => ![...files].some((f) => f.startsWith(`${p}/`) || p.startsWith(`${f}/`)) && !existsSync(join(ws, p));
  for (let i = 0; i < 12; i++) {
    const p = path();
    if (!ok(p)) continue;
    files.add(p);
    write(ws, p, `before ${p} ${i}\n`, r() < 0.2);
  }
  const before = await snapshot(ws);
  for (let i = 0; i < 14; i++) {
    const p = path();
    const roll = r();
    if (files.has(p) && roll < 0.2) {
      unlinkSync(join(ws, p));
      files.delete(p);
    } else if (files.has(p) && roll < 0.4) chmodSync(join(ws, p), 0o755);
    else if (files.has(p) ? !lstatSync(join(ws, p)).isSymbolicLink() : ok(p)) {
      if (!files.has(p) && roll < 0.55) {
        mkdirSync(dirname(join(ws, p)), { recursive: true });
        symlinkSync(roll < 0.5 ? '/etc' : `../${pick(names)}`, join(ws, p));
      } else write(ws, p, `after ${p} ${i} ${'y'.repeat(Math.floor(r() * 3000))}\n`, r() < 0.3);
      files.add(p);
    }
  }
  return diffSnapshots(before, await snapshot(ws));
}

describe('storing what an attempt wrote', () => {
  it('gives the tree a copy into changed/ gave, for 40 generated workspaces (nested, executable, links, deletions)', async () => {
    const seen = { link: 0, executable: 0, deleted: 0, nested: 0 };
    for (let seed = 1; seed <= 40; seed++) {
      const ws = join(dir, `ws${seed}`);
      mkdirSync(ws);
      const changes = await attempt(seed, ws);
      const states = Object.entries(changes.written);
      seen.link += states.filter(([, s]) => s.startsWith('link:')).length;
      seen.executable += states.filter(([, s]) => s.endsWith(':x')).length;
      seen.deleted += changes.deleted.length;
      seen.nested += states.filter(([p]) => p.includes('/')).length;
      const copied = join(dir, `changed${seed}`);
      copyWritten(changes, ws, copied);
      const expected = cas.putPath(copied);
      const stored = storeWritten(changes, ws, cas);
      expect(stored, `seed ${seed}`).toEqual(expected);
      // And it reads back as the workspace's files.
      const back = join(dir, `back${seed}`);
      cas.materialize(stored, back);
      for (const [p, state] of Object.entries(changes.written))
        if (!state.startsWith('link:')) expect(readFileSync(join(back, p), 'utf8'), `seed ${seed}: ${p}`).toBe(readFileSync(join(ws, p), 'utf8'));
    }
    // The cases are not vacuous: every kind of change came up.
    for (const [kind, n] of Object.entries(seen)) expect(n, kind).toBeGreaterThan(5);
  });

  it('refuses a file whose bytes are no longer the ones the snapshot listed (rewritten after it was taken)', async () => {
    const ws = join(dir, 'ws');
    mkdirSync(ws);
    const before = await snapshot(ws);
    write(ws, 'answer.txt', 'what the snapshot saw\n', false);
    const changes = diffSnapshots(before, await snapshot(ws));
    writeFileSync(join(ws, 'answer.txt'), 'something else\n');
    expect(() => storeWritten(changes, ws, cas)).toThrow(/changed while the workspace was read/);
  });

  it('never reads through a link: a written path whose directory became a link to a host directory is refused, and no host byte is stored', async () => {
    const ws = join(dir, 'ws');
    const host = join(dir, 'host');
    mkdirSync(ws);
    write(host, 'secret', 'HOST SECRET\n', false);
    const before = await snapshot(ws);
    write(ws, 'd/secret', 'the agent wrote this\n', false);
    const changes = diffSnapshots(before, await snapshot(ws));
    rmSync(join(ws, 'd'), { recursive: true });
    symlinkSync(host, join(ws, 'd'));
    expect(() => storeWritten(changes, ws, cas)).toThrow(/d is a symlink/);
    // A file swapped for a link to a host file is refused too.
    rmSync(join(ws, 'd'));
    mkdirSync(join(ws, 'd'));
    symlinkSync(join(host, 'secret'), join(ws, 'd', 'secret'));
    expect(() => storeWritten({ ...changes, written: { 'd/secret': changes.written['d/secret']! } }, ws, cas)).toThrow();
    const { sha256 } = await import('../pipeline/digest.js');
    expect(cas.has(sha256(Buffer.from('HOST SECRET\n')))).toBe(false);
  });
});
