import { chmodSync, copyFileSync, lstatSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { sha256 } from '../pipeline/digest.js';

/** Relative path -> SHA-256 of every regular file under root (symlinks by their target text). */
export function snapshot(root: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (rel: string) => {
    for (const name of readdirSync(join(root, rel)).sort()) {
      const p = rel ? `${rel}/${name}` : name;
      const st = lstatSync(join(root, p));
      if (st.isDirectory()) walk(p);
      else if (st.isFile()) out.set(p, sha256(readFileSync(join(root, p))));
    }
  };
  walk('');
  return out;
}

/** What an attempt changed: written files (their new bytes are kept in `changed/`) and deleted paths. */
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

/** Copies the written files into `dest` at their relative paths. */
export function copyWritten(changes: WorkspaceChanges, from: string, dest: string): void {
  mkdirSync(dest, { recursive: true });
  for (const p of Object.keys(changes.written)) {
    mkdirSync(dirname(join(dest, p)), { recursive: true });
    copyFileSync(join(from, p), join(dest, p));
  }
}

/** Applies changes (written files from `changedDir`, deletions) onto a tree. */
export function applyChanges(changes: WorkspaceChanges, changedDir: string, tree: string): void {
  for (const p of changes.deleted) rmSync(join(tree, p), { force: true });
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
