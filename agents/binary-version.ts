/**
 * An agent CLI's version, asked once per binary: `claude --version` costs ~115 ms, on
 * every command that plans a run step. Cached in memory, and on disk by the binary's
 * path and stat as the plan memo keys a file (size, mtime, ctime, inode, device): a new install
 * changes them, and so does a rewrite in place that restores the size and mtime (the ctime moves).
 */
import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync, type BigIntStats } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';

const memory = new Map<string, string>();

function cacheFile(): string {
  const base = process.env['XDG_CACHE_HOME'] || (homedir() && homedir() !== '/' ? join(homedir(), '.cache') : tmpdir());
  return join(base, 'pairbench', 'agent-versions.json');
}

export function binaryVersion(bin: string, ask: () => string): string {
  let st: BigIntStats;
  try {
    st = statSync(bin, { bigint: true });
  } catch {
    return ask(); // not installed: the adapter says so, nothing to cache
  }
  const id = [bin, st.size, st.mtimeNs, st.ctimeNs, st.ino, st.dev].join('\u0000');
  const known = memory.get(id);
  if (known) return known;
  const file = cacheFile();
  let table: Record<string, string> = {};
  try {
    table = JSON.parse(readFileSync(file, 'utf8')) as Record<string, string>;
  } catch {
    // first use, or unreadable: asked again below
  }
  if (typeof table[id] === 'string' && table[id]) {
    memory.set(id, table[id]);
    return table[id];
  }
  const version = ask();
  memory.set(id, version);
  if (version !== 'not-installed') {
    try {
      mkdirSync(join(file, '..'), { recursive: true });
      const tmp = `${file}.${process.pid}.tmp`;
      writeFileSync(tmp, JSON.stringify({ ...table, [id]: version }) + '\n');
      renameSync(tmp, file);
    } catch {
      // a cache that cannot be written only costs the next command the same question
    }
  }
  return version;
}
