/**
 * A commit's tree read from a repository's objects: its entries (`git ls-tree -r`) and their
 * blobs' bytes (`git cat-file --batch`, streamed), with no file written. materialize builds its
 * tree from these when they are the bytes `git archive | tar -x` would write (git-archive.ts).
 */
import { spawn } from 'node:child_process';

/** A blob (a file or a symlink) or a gitlink (a submodule: an empty directory in an archive) of a tree. */
export interface GitTreeEntry {
  path: string;
  /** 100644, 100755, 120000 (symlink) or 160000 (gitlink). */
  mode: string;
  oid: string;
  /** Bytes of a blob; 0 for a gitlink. */
  size: number;
}

/** A git command run to its end: its exit code and output (node:child_process: no module to load for it). */
export function runGit(repo: string, args: string[]): Promise<{ code: number | null; stdout: Buffer; stderr: string }> {
  return new Promise((resolve, reject) => {
    const git = spawn('git', ['-C', repo, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    git.stdout.on('data', (d: Buffer) => out.push(d));
    git.stderr.on('data', (d: Buffer) => err.length < 64 && err.push(d));
    git.once('error', reject);
    git.once('close', (code) => resolve({ code, stdout: Buffer.concat(out), stderr: Buffer.concat(err).toString('utf8').trim() }));
  });
}

/** Output of a git command, whole; its failure says what git said. */
async function gitOutput(repo: string, args: string[]): Promise<Buffer> {
  const r = await runGit(repo, args);
  if (r.code !== 0) throw new Error(`git ${args[0]} exited ${r.code}: ${r.stderr.split('\n').slice(-3).join('; ')}`);
  return r.stdout;
}

/**
 * Every blob and gitlink of `treeish`, recursively, with its path; undefined when a path is not
 * UTF-8 (the file system would name it otherwise than this text does).
 */
export async function listTree(repo: string, treeish: string): Promise<GitTreeEntry[] | undefined> {
  const out = await gitOutput(repo, ['ls-tree', '-r', '-z', '--long', treeish]);
  const entries: GitTreeEntry[] = [];
  for (let at = 0; at < out.length;) {
    const end = out.indexOf(0, at);
    const record = out.subarray(at, end < 0 ? out.length : end);
    at = end < 0 ? out.length : end + 1;
    // "<mode> SP <type> SP <oid> SP+ <size> TAB <path>"
    const tab = record.indexOf(9);
    const head = record.toString('latin1', 0, tab);
    const s1 = head.indexOf(' ');
    const s2 = head.indexOf(' ', s1 + 1);
    const s3 = head.indexOf(' ', s2 + 1);
    const size = head.slice(s3 + 1).trim();
    const raw = record.subarray(tab + 1);
    const path = raw.toString('utf8');
    // Bytes that are not UTF-8 decode to U+FFFD: only then is the round trip worth checking.
    if (path.includes('\uFFFD') && !Buffer.from(path, 'utf8').equals(raw)) return undefined;
    entries.push({ path, mode: head.slice(0, s1), oid: head.slice(s2 + 1, s3), size: size === '-' ? 0 : Number(size) });
  }
  return entries;
}

/**
 * Streams the bytes of each blob in `oids`, in order, to `onBlob` (one blob in memory at a time):
 * one `git cat-file --batch` for all of them.
 */
export function readBlobs(repo: string, oids: readonly string[], onBlob: (index: number, bytes: Buffer) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    const git = spawn('git', ['-C', repo, 'cat-file', '--batch', '--buffer'], { stdio: ['pipe', 'pipe', 'pipe'] });
    const err: Buffer[] = [];
    git.stderr.on('data', (d: Buffer) => err.length < 64 && err.push(d));
    git.stdin.on('error', () => {}); // git gone early: its exit says why
    git.stdin.end(oids.map((o) => `${o}\n`).join(''));
    let index = 0;
    let failure: Error | undefined;
    // The blob being read: its size, and its bytes so far (one concat when whole).
    let body: { size: number; chunks: Buffer[]; have: number } | undefined;
    let pending: Buffer = Buffer.alloc(0);
    git.stdout.on('data', (chunk: Buffer) => {
      if (failure) return;
      let buf: Buffer = pending.length ? Buffer.concat([pending, chunk]) : chunk;
      pending = Buffer.alloc(0);
      try {
        while (buf.length) {
          if (!body) {
            const nl = buf.indexOf(10);
            if (nl < 0) break;
            // "<oid> SP blob SP <size>" (or "<oid> SP missing")
            const header = buf.toString('latin1', 0, nl);
            const expected = `${oids[index]} blob `;
            if (!header.startsWith(expected)) throw new Error(`git cat-file: expected blob ${oids[index]}, got "${header}"`);
            body = { size: Number(header.slice(expected.length)), chunks: [], have: 0 };
            buf = buf.subarray(nl + 1);
          }
          // The blob's bytes, then one LF.
          const take = Math.min(buf.length, body.size + 1 - body.have);
          body.chunks.push(buf.subarray(0, take));
          body.have += take;
          buf = buf.subarray(take);
          if (body.have < body.size + 1) break;
          const whole = body.chunks.length === 1 ? body.chunks[0]! : Buffer.concat(body.chunks);
          body = undefined;
          onBlob(index++, whole.subarray(0, whole.length - 1));
        }
        pending = buf;
      } catch (e) {
        failure = e as Error;
        git.kill();
      }
    });
    git.once('error', reject);
    git.once('close', (code) => {
      if (failure) reject(failure);
      else if (code !== 0) reject(new Error(`git cat-file exited ${code}: ${Buffer.concat(err).toString('utf8').trim().split('\n').slice(-3).join('; ')}`));
      else if (index !== oids.length) reject(new Error(`git cat-file gave ${index} of ${oids.length} blobs`));
      else resolve();
    });
  });
}
