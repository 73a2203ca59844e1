/** `--read-store DIR[:DIR...]`: other stores a command reads and never writes (pipeline/caching/read-only-stores.ts). */
import { existsSync } from 'node:fs';
import { delimiter, join, resolve } from 'node:path';
import { err, ok, type Result } from '../pipeline/result.js';
import { Store } from '../pipeline/store/store.js';
import type { OptionDoc } from './command.js';

export const READ_STORE_OPTION: OptionDoc = [
  'read-store',
  'DIR[:DIR...]',
  `other stores read on a local miss (before the remote cache), never
written: a record there is verified and copied here with its blobs (a
pull request's job reads the base branch's store that actions/cache
restored, and re-runs only what its change touches)`,
];

/** --read-store's stores (a path list, as PATH is written): each must be a store, and not the run's own. */
export function readStoresOf(value: string | undefined, own: string): Result<Store[], string> {
  if (!value) return ok([]);
  const dirs = value
    .split(delimiter)
    .filter(Boolean)
    .map((d) => resolve(d));
  const notStores = dirs.filter((d) => !existsSync(join(d, 'cas')));
  if (notStores.length)
    return err(
      `--read-store: ${notStores.join(', ')} ${notStores.length === 1 ? 'is not a store' : 'are not stores'} (no cas/ in it): give the directory of a pairbench store, e.g. a restored .pairbench`,
    );
  if (dirs.includes(resolve(own))) return err(`--read-store: ${own} is this run's own store`);
  return ok(dirs.map((d) => new Store(d)));
}
