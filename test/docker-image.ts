/**
 * Test fixture: a small Docker image built WITHOUT any registry.
 *
 * Rootfs: static busybox with every applet linked into /bin, bash (Debian's bash-static), the host's `node`
 * binary plus the shared libraries `ldd` lists for it (so Node scripts such as the
 * forwarder run inside), /etc/passwd and /etc/group with a uid 1000 user, and empty
 * /tmp, /work, /proc, /sys, /dev. The tree is staged in a temp dir, packed with GNU
 * tar in a normalised way (sorted names, mtime 0, owner 0) and `docker import`ed.
 *
 * The image is tagged `pairbench-test:<hash of the recipe>`; the recipe is this
 * file's RECIPE_VERSION plus the identity (path, size, mtime) of every host file
 * copied in, the applet list and the /etc files, so a cached image is reused until
 * one of those changes. Returns the image ID (`sha256:...`), which is what the
 * docker backend accepts; tags are only the cache.
 *
 * Needs: the docker CLI and a running engine (scripts/start-dockerd.sh),
 * busybox-static (/bin/busybox), bash-static (/bin/bash-static), GNU tar, ldd.
 */
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, rmdirSync, statSync, symlinkSync, writeFileSync, chmodSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { execa } from 'execa';

const RECIPE_VERSION = 'pairbench-test-image/2';
/** Debian's bash-static: Harbor-style scripts (`set -o pipefail`) need bash, and busybox has none. */
const BASH_STATIC = '/bin/bash-static';
export const TEST_IMAGE_REPO = 'pairbench-test';
const BUSYBOX = '/bin/busybox';
const PASSWD = 'root:x:0:0:root:/root:/bin/sh\nagent:x:1000:1000:agent:/tmp:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n';
const GROUP = 'root:x:0:\nagent:x:1000:\nnogroup:x:65534:\n';
const IMAGE_ENV_PATH = '/bin:/usr/bin';

interface HostFile {
  /** Absolute path inside the image (same as where ldd / the loader look for it). */
  target: string;
  /** Host file whose bytes go there (symlinks resolved). */
  source: string;
}

interface Recipe {
  files: HostFile[];
  applets: string[];
  tag: string;
}

let memo: Promise<string> | undefined;

/** Builds (once per recipe; cached in the engine by tag) and returns the test image's ID. */
export function ensureTestImage(): Promise<string> {
  memo ??= build().catch((e: unknown) => {
    memo = undefined;
    throw e;
  });
  return memo;
}

async function recipe(): Promise<Recipe> {
  const node = realpathSync((await execa('sh', ['-c', 'command -v node'])).stdout.trim());
  const files: HostFile[] = [
    { target: '/bin/busybox', source: realpathSync(BUSYBOX) },
    { target: '/usr/bin/node', source: node },
    ...(existsSync(BASH_STATIC) ? [{ target: '/bin/bash', source: realpathSync(BASH_STATIC) }] : []),
  ];
  for (const lib of parseLdd((await execa('ldd', [node])).stdout)) {
    files.push({ target: lib, source: realpathSync(lib) });
  }
  const applets = (await execa(BUSYBOX, ['--list'])).stdout
    .split('\n')
    .map((s) => s.trim())
    .filter((s) => s && s !== 'busybox' && !s.includes('/'))
    .sort();
  const h = createHash('sha256');
  h.update(RECIPE_VERSION + '\0' + PASSWD + '\0' + GROUP + '\0' + IMAGE_ENV_PATH + '\0' + applets.join(',') + '\0');
  for (const f of files) {
    const st = statSync(f.source);
    h.update(`${f.target}\0${f.source}\0${st.size}\0${st.mtimeMs}\0`);
  }
  return { files, applets, tag: `${TEST_IMAGE_REPO}:${h.digest('hex').slice(0, 16)}` };
}

/** Absolute library paths from `ldd` output (the loader included, vdso skipped). */
export function parseLdd(out: string): string[] {
  const libs: string[] = [];
  for (const line of out.split('\n')) {
    const arrow = /=>\s+(\/\S+)/.exec(line);
    const bare = /^\s*(\/\S+)\s+\(/.exec(line);
    const p = arrow?.[1] ?? bare?.[1];
    if (p && !libs.includes(p)) libs.push(p);
  }
  return libs;
}

async function imageId(ref: string): Promise<string | undefined> {
  const r = await execa('docker', ['image', 'inspect', '--format', '{{.Id}}', ref], { reject: false });
  return r.exitCode === 0 ? r.stdout.trim() : undefined;
}

async function build(): Promise<string> {
  const r = await recipe();
  const cached = await imageId(r.tag);
  if (cached) return cached;

  // Another test process may be building the same recipe: a lock dir, the loser waits for the tag.
  const lock = join(tmpdir(), `${r.tag.replace(/[:/]/g, '-')}.lock`);
  if (!tryLock(lock)) {
    const end = Date.now() + 180_000;
    while (Date.now() < end) {
      await new Promise((res) => setTimeout(res, 250));
      const id = await imageId(r.tag);
      if (id) return id;
      if (tryLock(lock)) return buildLocked(r, lock);
    }
    throw new Error(`timed out waiting for another process to build ${r.tag} (remove ${lock} if stale)`);
  }
  return buildLocked(r, lock);
}

function tryLock(lock: string): boolean {
  try {
    mkdirSync(lock);
    return true;
  } catch {
    try {
      // Stale after 5 minutes (a builder killed mid-way).
      if (Date.now() - statSync(lock).mtimeMs > 300_000) {
        rmdirSync(lock);
        mkdirSync(lock);
        return true;
      }
    } catch {
      // someone else took it
    }
    return false;
  }
}

async function buildLocked(r: Recipe, lock: string): Promise<string> {
  const stage = mkdtempSync(join(tmpdir(), 'pairbench-rootfs-'));
  const tarFile = `${stage}.tar`;
  try {
    const cached = await imageId(r.tag);
    if (cached) return cached;
    const root = join(stage, 'rootfs');
    for (const d of ['bin', 'usr/bin', 'etc', 'proc', 'sys', 'dev', 'root', 'work']) mkdirSync(join(root, d), { recursive: true });
    mkdirSync(join(root, 'tmp'));
    chmodSync(join(root, 'tmp'), 0o1777);
    for (const f of r.files) {
      const dest = join(root, f.target);
      mkdirSync(dirname(dest), { recursive: true });
      copyFileSync(f.source, dest);
      chmodSync(dest, statSync(f.source).mode & 0o7777);
    }
    for (const a of r.applets) if (!existsSync(join(root, 'bin', a))) symlinkSync('busybox', join(root, 'bin', a));
    symlinkSync('../usr/bin/node', join(root, 'bin', 'node'));
    writeFileSync(join(root, 'etc', 'passwd'), PASSWD);
    writeFileSync(join(root, 'etc', 'group'), GROUP);
    await execa('tar', [
      '--create',
      `--file=${tarFile}`,
      '--format=gnu',
      '--sort=name',
      '--mtime=@0',
      '--owner=0',
      '--group=0',
      '--numeric-owner',
      `--directory=${root}`,
      '.',
    ]);
    const out = await execa('docker', ['import', '--change', `ENV PATH=${IMAGE_ENV_PATH}`, '--message', RECIPE_VERSION, tarFile, r.tag]);
    const id = out.stdout.trim();
    if (!/^sha256:[0-9a-f]{64}$/.test(id)) throw new Error(`docker import printed ${JSON.stringify(out.stdout)}, not an image ID`);
    return id;
  } finally {
    rmSync(stage, { recursive: true, force: true });
    rmSync(tarFile, { force: true });
    rmSync(lock, { recursive: true, force: true });
  }
}
