/**
 * An agent CLI's version, asked once per binary: `claude --version` costs ~115 ms, on
 * every command that plans a run step. Cached in memory, and on disk by the binary's
 * path, size, mtime and inode (a new install changes them), in the user's cache dir.
 */
import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';

const memory = new Map<string, string>();

function cacheFile(): string {
  const base = process.env['XDG_CACHE_HOME'] || (homedir() && homedir() !== '/' ? join(homedir(), '.cache') : tmpdir());
  return join(base, 'pairbench', 'agent-versions.json');
}

export function binaryVersion(bin: string, ask: () => string): string {
  let st: ReturnType<typeof statSync>;
  try {
    st = statSync(bin);
  } catch {
    return ask(); // not installed: the adapter says so, nothing to cache
  }
  const id = `${bin}\u0000${st.size}\u0000${st.mtimeMs}\u0000${st.ino}`;
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
