import { chmodSync, copyFileSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, rmSync, symlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { sha256 } from '../pipeline/digest.js';

/**
 * Relative path -> state of every file under root: regular files by content digest
 * and executable bit, symlinks by their target (a new link or `chmod +x` is a change).
 */
export function snapshot(root: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (rel: string) => {
    for (const name of readdirSync(join(root, rel)).sort()) {
      const p = rel ? `${rel}/${name}` : name;
      const st = lstatSync(join(root, p));
      if (st.isDirectory()) walk(p);
      else if (st.isSymbolicLink()) out.set(p, `link:${readlinkSync(join(root, p))}`);
      else if (st.isFile()) out.set(p, `${sha256(readFileSync(join(root, p)))}${st.mode & 0o111 ? ':x' : ''}`);
    }
  };
  walk('');
  return out;
}

/** What an attempt changed: written files and links (their new state is kept in `changed/`) and deleted paths. */
export interface WorkspaceChanges {
  schema_version: 1;
  written: Record<string, string>;
  deleted: string[];
}

export function diffSnapshots(before: Map<string, string>, after: Map<string, string>): WorkspaceChanges {
  const written: Record<string, string> = {};
  const deleted: string[] = [];
  for (const [p, d] of after) if (before.get(p) !== d) written[p] = d;
  for (const p of before.keys()) if (!after.has(p)) deleted.push(p);
  return { schema_version: 1, written, deleted: deleted.sort() };
}

/** Refuses a path whose parent directories include a symlink: writing through it could land outside the tree. */
function assertNoSymlinkParent(root: string, rel: string): void {
  const parts = rel.split('/').slice(0, -1);
  let p = root;
  for (const part of parts) {
    p = join(p, part);
    let st;
    try {
      st = lstatSync(p);
    } catch {
      return; // does not exist yet: it will be created as a directory
    }
    if (st.isSymbolicLink()) throw new Error(`refusing to write ${rel}: ${rel.split('/').slice(0, parts.indexOf(part) + 1).join('/')} is a symlink`);
  }
}

/** Copies the written files and links into `dest` at their relative paths (modes kept, links as links). */
export function copyWritten(changes: WorkspaceChanges, from: string, dest: string): void {
  mkdirSync(dest, { recursive: true });
  for (const p of Object.keys(changes.written)) {
    assertNoSymlinkParent(dest, p);
    const target = join(dest, p);
    mkdirSync(dirname(target), { recursive: true });
    rmSync(target, { force: true, recursive: true });
    const st = lstatSync(join(from, p));
    if (st.isSymbolicLink()) symlinkSync(readlinkSync(join(from, p)), target);
    else {
      copyFileSync(join(from, p), target);
      chmodSync(target, st.mode & 0o777);
    }
  }
}

/** Applies changes (written files from `changedDir`, deletions) onto a tree; never writes through a symlink. */
export function applyChanges(changes: WorkspaceChanges, changedDir: string, tree: string): void {
  for (const p of changes.deleted) {
    assertNoSymlinkParent(tree, p);
    rmSync(join(tree, p), { force: true });
  }
  copyWritten(changes, changedDir, tree);
}

/** Sandboxed agents run as uid 1000: let them write a workspace root owns. */
export function openForSandbox(root: string): void {
  const walk = (p: string) => {
    const st = lstatSync(p);
    if (st.isSymbolicLink()) return;
    chmodSync(p, st.isDirectory() ? 0o777 : st.mode & 0o111 ? 0o777 : 0o666);
    if (st.isDirectory()) for (const n of readdirSync(p)) walk(join(p, n));
  };
  walk(root);
}
