import type { Sha256 } from '../digest.js';

/** A blob a reader asked for is not in the store, or is there with other bytes. */
export class CorruptBlobError extends Error {
  /** The blob is not here at all (a record replayed from a remote cache holds none until they are read), rather than here with other bytes. */
  readonly missing: boolean;
  constructor(
    readonly digest: Sha256,
    detail: string,
  ) {
    super(`stored blob ${digest.slice(0, 12)} is corrupt (${detail})`);
    this.missing = detail === 'missing';
  }
}
