/**
 * The entry of dist/bundle/memo.cjs, which bin/pairbench.js loads before the rest of pairbench
 * for a command a memo may answer (pipeline/memo/): replay the memo, or record this run for the
 * next. The stamps' askers and the effects' performers are registered here, one line per owner:
 * the memo knows no daemon and no store.
 */
import type { EffectPerformers } from '../pipeline/memo/effects.js';
import { descriptorStreams, replayMemo } from '../pipeline/memo/replay.js';
import type { StampAskers } from '../pipeline/memo/stamps.js';
import { ACCESS_EFFECT, replayAccess } from '../pipeline/store/access-log.js';
import { askDockerImages, DOCKER_IMAGES_STAMP } from '../sandboxes/docker-image-stamp.js';

export { MEMOIZED_COMMANDS, memoEnabled } from '../pipeline/memo/memo-file.js';
export { startRecording } from '../pipeline/memo/record.js';

export const STAMP_ASKERS: StampAskers = {
  [DOCKER_IMAGES_STAMP]: askDockerImages,
};

export const EFFECT_PERFORMERS: EffectPerformers = {
  [ACCESS_EFFECT]: replayAccess,
};

/** This process's command answered from its memo, printed on its stdout and stderr; undefined on a miss. */
export function replay(argv: readonly string[], env: NodeJS.ProcessEnv, cwd: string): Promise<number | undefined> {
  return replayMemo(argv, env, cwd, descriptorStreams(), { askers: STAMP_ASKERS, performers: EFFECT_PERFORMERS });
}
