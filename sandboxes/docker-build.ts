/**
 * Builds a task's image from its Dockerfile with the local engine (never pulling), and
 * copies a directory out of an image. Used by the `environment` step: Harbor tasks run
 * in the image their environment/Dockerfile describes, at its WORKDIR.
 */
import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { Readable } from 'node:stream';
import type Docker from 'dockerode';
import { err, errorMessage, ok, type Result } from '../pipeline/result.js';
import { isImageId, type ImageId } from './docker-image.js';
export { baseImages } from './dockerfile.js';

export interface BuildOptions {
  /** Host directory holding the build context (the Dockerfile at its root, or `dockerfile`). */
  context: string;
  dockerfile?: string;
  /** `none`: RUN steps get no network (the offline default); `default`: the engine's default network. */
  network: 'none' | 'default';
  timeoutMs: number;
  labels?: Record<string, string>;
  signal?: AbortSignal;
}

export interface BuiltImage {
  imageId: ImageId;
  /** The image's WORKDIR ("/" when it sets none). */
  workdir: string;
  /** The build's output, as the engine streamed it. */
  log: string;
}

/** dockerode types the engine's responses as NodeJS.ReadableStream; they are HTTP responses, which are Readables (checked, not assumed). */
function readable(s: NodeJS.ReadableStream): Readable {
  if (s instanceof Readable) return s;
  throw new TypeError('the Docker engine answered with something that is not a stream');
}

export async function buildImage(docker: Docker, o: BuildOptions): Promise<Result<BuiltImage, { message: string; log: string }>> {
  const tar = spawn('tar', ['-C', o.context, '-cf', '-', '.'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  let stream: Readable;
  try {
    stream = readable(
      await docker.buildImage(tar.stdout, {
        dockerfile: o.dockerfile ?? 'Dockerfile',
        networkmode: o.network,
        pull: false,
        rm: true,
        forcerm: true,
        labels: o.labels ?? {},
      }),
    );
  } catch (e) {
    tar.kill();
    return err({ message: `the engine refused the build: ${errorMessage(e)}`, log });
  }
  const timer = setTimeout(() => stream.destroy(new Error(`the build ran over its ${Math.round(o.timeoutMs / 1000)} s timeout`)), o.timeoutMs);
  const onAbort = () => stream.destroy(new Error('interrupted'));
  o.signal?.addEventListener('abort', onAbort);
  let imageId: string | undefined;
  let failure: string | undefined;
  try {
    await new Promise<void>((resolve, reject) => {
      docker.modem.followProgress(
        stream,
        (e: Error | null) => (e ? reject(e) : resolve()),
        (event: { stream?: string; error?: string; errorDetail?: { message?: string }; aux?: { ID?: string } }) => {
          if (event.stream) log += event.stream;
          if (event.aux?.ID) imageId = event.aux.ID;
          if (event.error) {
            failure ??= event.errorDetail?.message ?? event.error;
            log += `${event.error}\n`;
          }
        },
      );
    });
  } catch (e) {
    failure ??= errorMessage(e);
  } finally {
    clearTimeout(timer);
    o.signal?.removeEventListener('abort', onAbort);
  }
  if (failure) return err({ message: failure, log });
  if (!imageId || !isImageId(imageId)) return err({ message: `the build did not report an image ID (got ${JSON.stringify(imageId)})`, log });
  const info = await docker.getImage(imageId).inspect();
  return ok({ imageId, workdir: info.Config?.WorkingDir || '/', log });
}

/** Copies the contents of `path` in `image` to the host directory `dest` (created), as files the harness owns. */
export async function copyFromImage(docker: Docker, image: string, path: string, dest: string): Promise<Result<void, string>> {
  let container: Docker.Container | undefined;
  try {
    container = await docker.createContainer({ Image: image, Cmd: ['true'], NetworkDisabled: true, Labels: { 'pairbench.role': 'copy-out' } });
    const archive = readable(await container.getArchive({ path: path === '/' ? '/.' : `${path.replace(/\/+$/, '')}/.` }));
    mkdirSync(dest, { recursive: true });
    // The archive holds the directory itself as "./": its contents land in dest; owners and modes as the harness's own.
    const untar = spawn('tar', ['-x', '-C', dest, '-f', '-', '--no-same-owner', '--no-same-permissions', '--strip-components=1'], {
      stdio: ['pipe', 'ignore', 'pipe'],
    });
    let stderr = '';
    untar.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    archive.pipe(untar.stdin);
    const code = await new Promise<number | null>((resolve) => untar.on('close', resolve));
    return code === 0 ? ok(undefined) : err(`extracting ${path} from ${image.slice(0, 19)} failed: ${stderr.trim()}`);
  } catch (e) {
    return err(`copying ${path} out of ${image.slice(0, 19)} failed: ${errorMessage(e)}`);
  } finally {
    await container?.remove({ force: true }).catch(() => undefined);
  }
}
