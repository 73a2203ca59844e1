/**
 * The store's roots/ directory: one JSON file per root (its name, what it says it is, when it was
 * written, its keys), written by store.ts. Read here, with Node's built-ins only, for the store and
 * for the whole-plan memo's replay of a run's access log (which merges it, access-log.ts).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface Root {
  name: string;
  about: Record<string, string>;
  keys: string[];
  file: string;
}

export function rootsDir(storeDir: string): string {
  return join(storeDir, 'roots');
}

/** Every root in `dir` (none when there is no such directory); a file being replaced, or garbage, is skipped. */
export function readRoots(dir: string): Root[] {
  const out: Root[] = [];
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return out;
  }
  for (const f of names) {
    try {
      const {
        name,
        keys,
        at: _at,
        ...about
      } = JSON.parse(readFileSync(join(dir, f), 'utf8')) as { name: string; keys: string[]; at: string } & Record<string, string>;
      out.push({ name, about, keys, file: join(dir, f) });
    } catch {
      // a root being replaced, or garbage: ignored
    }
  }
  return out;
}
