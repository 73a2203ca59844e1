import { cacheKeyOf } from '../pipeline/digest.js';
import { outputsDigest, type ActionRecord } from '../pipeline/store/action-cache.js';

/** A valid action record with no outputs: its key is its pre-image's, as the store verifies. */
export function bareRecord(preimage: string, node: string): ActionRecord {
  return {
    schema: 1,
    key: cacheKeyOf(preimage),
    preimage,
    node,
    step: node.split('/')[0]!,
    kind: 'command',
    outputs: {},
    outputs_digest: outputsDigest({}),
    stamps: {},
    log: null,
    started_at: '2026-12-01T00:00:00.000Z',
    duration_ms: 1,
    pairbench_version: '0.0.0-test',
  };
}
