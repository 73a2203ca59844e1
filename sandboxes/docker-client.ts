/**
 * The one way pairbench reaches the Docker engine: every client is made here (the docker
 * backend, doctor, the environment step, the image IDs a key holds), from the same reading of
 * DOCKER_HOST, so they cannot talk to different engines.
 */
import Docker from 'dockerode';
import { stampedAnswer } from '../pipeline/memo/declare.js';
import { dockerImagesAnswer, DOCKER_IMAGES_STAMP, type DockerImagesQuestion } from './docker-image-stamp.js';

/** Where the engine is: a unix socket (DOCKER_HOST=unix://PATH), or dockerode's default (DOCKER_HOST over tcp, else /var/run/docker.sock). */
export interface DockerEndpoint {
  socketPath?: string;
}

/** Where dockerode finds the engine when DOCKER_HOST is unset. */
const DEFAULT_SOCKET = '/var/run/docker.sock';

/** The endpoint an environment names. */
export function dockerEndpoint(env: Readonly<Record<string, string | undefined>>): DockerEndpoint {
  const host = env['DOCKER_HOST'];
  return host?.startsWith('unix://') ? { socketPath: host.slice('unix://'.length) } : {};
}

/** A client of the engine at `endpoint`. */
export function dockerClient(endpoint: DockerEndpoint = {}): Docker {
  return new Docker(endpoint.socketPath ? { socketPath: endpoint.socketPath } : undefined);
}

/** Where an endpoint is, in words (for a message). */
export function describeEndpoint(endpoint: DockerEndpoint, env: Readonly<Record<string, string | undefined>> = process.env): string {
  return endpoint.socketPath ?? env['DOCKER_HOST'] ?? DEFAULT_SOCKET;
}

/**
 * Image IDs by name from the engine `env` names, declared to a memo of the plan (pipeline/memo/)
 * as a stamp it asks the engine again at replay: an image that moved is a miss. On an engine
 * reached otherwise than by a unix socket, the query stays a doubt and no memo is saved.
 */
export function stampedImageIds(env: Readonly<Record<string, string | undefined>>, names: readonly string[]): Promise<Map<string, string>> {
  const endpoint = dockerEndpoint(env);
  const query = () => imageIds(dockerClient(endpoint), names);
  const socket = endpoint.socketPath ?? (env['DOCKER_HOST'] ? undefined : DEFAULT_SOCKET);
  if (!socket) return query();
  const question: DockerImagesQuestion = { socket, names: [...names] };
  return stampedAnswer({ kind: DOCKER_IMAGES_STAMP, question }, query, (ids) => dockerImagesAnswer(names, ids));
}

/** How long an image lookup waits for an engine that does not answer. */
const INSPECT_TIMEOUT_MS = 30_000;

/** Image IDs by name, as the engine has them now (names it lacks, or an engine that does not answer: absent). */
export async function imageIds(docker: Docker, names: readonly string[]): Promise<Map<string, string>> {
  const found = await Promise.all(
    names.map(async (name) => {
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), INSPECT_TIMEOUT_MS)));
      try {
        const id = await Promise.race([
          docker
            .getImage(name)
            .inspect()
            .then((info) => info.Id),
          late,
        ]);
        return id === undefined ? undefined : ([name, id] as const);
      } catch {
        return undefined;
      } finally {
        clearTimeout(timer);
      }
    }),
  );
  return new Map(found.filter((f) => f !== undefined));
}
