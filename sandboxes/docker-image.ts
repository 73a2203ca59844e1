import type Docker from 'dockerode';
import { err, errorMessage, ok, type Result } from '../pipeline/result.js';

/** A Docker image ID as the engine reports it: `sha256:` + 64 lower-case hex. */
export type ImageId = string & { readonly __brand: 'ImageId' };

/**
 * An image reference the docker backend accepts: immutable only.
 * - `id`: an image ID (`sha256:<64 hex>`), what `docker image inspect --format {{.Id}}` prints;
 * - `digest`: a repository digest (`name@sha256:<64 hex>`), what a registry pins.
 */
export type PinnedImageRef = { kind: 'id'; ref: string } | { kind: 'digest'; ref: string; repo: string; digest: string };

const ID = /^sha256:[0-9a-f]{64}$/;
const DIGEST = /^(.+)@(sha256:[0-9a-f]{64})$/;

export function isImageId(s: string): s is ImageId {
  return ID.test(s);
}

/**
 * Accepts an image ID or a repository digest; refuses anything mutable (a tag, a bare
 * name that means `:latest`, a short ID), saying how to pin it.
 */
export function parsePinnedImage(ref: string): Result<PinnedImageRef, string> {
  const r = ref.trim();
  if (ID.test(r)) return ok({ kind: 'id', ref: r });
  const d = DIGEST.exec(r);
  if (d) return ok({ kind: 'digest', ref: r, repo: d[1]!, digest: d[2]! });
  if (/^(sha256:)?[0-9a-f]{12,63}$/.test(r)) {
    return err(`image "${ref}" is a short image ID; give the full one: docker image inspect --format '{{.Id}}' ${r}`);
  }
  return err(
    `image "${ref}" is a mutable tag, not an image ID or digest: a tag can point at different bytes tomorrow, so it cannot be part of a run key. ` +
      `Pin it: docker image inspect --format '{{.Id}}' ${r}  (gives sha256:...), or use name@sha256:<digest>`,
  );
}

/**
 * Resolves a pinned reference in the engine to the image ID that will run.
 * For a repository digest, checks that the local image really carries that digest.
 * No pulling: images are built or loaded locally.
 */
export async function resolvePinnedImage(docker: Docker, ref: PinnedImageRef): Promise<Result<ImageId, string>> {
  let info: Docker.ImageInspectInfo;
  try {
    info = await docker.getImage(ref.ref).inspect();
  } catch (e) {
    const status = (e as { statusCode?: number }).statusCode;
    if (status === 404) {
      return err(`image ${ref.ref} is not in the engine; build or load it locally (docker build / docker load / docker import) — pairbench never pulls`);
    }
    return err(`inspecting image ${ref.ref} failed: ${errorMessage(e)}`);
  }
  if (!isImageId(info.Id)) return err(`the engine reported image ID ${JSON.stringify(info.Id)} for ${ref.ref}, not sha256:<64 hex>`);
  if (ref.kind === 'id' && info.Id !== ref.ref) return err(`image ${ref.ref} resolved to a different ID ${info.Id}`);
  if (ref.kind === 'digest' && !(info.RepoDigests ?? []).includes(ref.ref)) {
    return err(`image ${ref.ref}: the local image ${info.Id} does not carry that repository digest (has: ${(info.RepoDigests ?? []).join(', ') || 'none'})`);
  }
  return ok(info.Id);
}
