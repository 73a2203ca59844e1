/**
 * The one way pairbench reaches the Docker engine: every client is made here (the docker
 * backend, doctor, the environment step, the image IDs a key holds), from the same reading of
 * DOCKER_HOST, so they cannot talk to different engines.
 */
import type Docker from 'dockerode';
import { createRequire, Module } from 'node:module';
import { stampedAnswer } from '../pipeline/hooks.js';
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
  const DockerClient = dockerode();
  return new DockerClient(endpoint.socketPath ? { socketPath: endpoint.socketPath } : undefined);
}

const requireHere = createRequire(import.meta.url);
let loadedDockerode: typeof Docker | undefined;

/**
 * dockerode, loaded on first use without what it loads and pairbench does not use at once: gRPC
 * (@grpc/grpc-js, @grpc/proto-loader: BuildKit sessions) and ssh2 (an ssh:// DOCKER_HOST) were
 * about 90 of the 135 ms of CPU its require took, paid by every run with a docker node. Each
 * is stood in for by a module that loads the real one when it is first used: both still work.
 */
function dockerode(): typeof Docker {
  if (loadedDockerode) return loadedDockerode;
  const main = requireHere.resolve('dockerode');
  const fromDockerode = createRequire(main);
  // Where dockerode's session.js and docker-modem's ssh.js find them.
  standInFor(fromDockerode.resolve('@grpc/grpc-js'), (load) => lazyNamespace(load));
  standInFor(fromDockerode.resolve('@grpc/proto-loader'), (load) => lazyNamespace(load));
  const modem = fromDockerode.resolve('docker-modem');
  standInFor(createRequire(modem).resolve('ssh2'), (load) => ({
    // ssh.js takes `Client` when it loads and constructs it only for an ssh:// engine.
    Client: function Client(...args: unknown[]) {
      const Real = (load() as { Client: new (...a: unknown[]) => object }).Client;
      return new Real(...args);
    },
  }));
  return (loadedDockerode = fromDockerode(main) as typeof Docker);
}

/** Puts `make(load)` in the module cache at `path` (unless the module is loaded already); `load` swaps in the real one. */
function standInFor(path: string, make: (load: () => unknown) => unknown): void {
  const cache = requireHere.cache;
  if (cache[path]) return;
  let real: unknown;
  const load = () => {
    if (real === undefined) {
      delete cache[path];
      real = requireHere(path);
    }
    return real;
  };
  const m = new Module(path);
  m.filename = path;
  m.loaded = true;
  m.exports = make(load);
  cache[path] = m;
}

/** A module's exports, read from the real module on first touch. */
function lazyNamespace(load: () => unknown): object {
  const real = () => load() as object;
  return new Proxy(
    {},
    {
      get: (_, p) => Reflect.get(real(), p),
      has: (_, p) => Reflect.has(real(), p),
      ownKeys: () => Reflect.ownKeys(real()),
      getOwnPropertyDescriptor: (_, p) => {
        const d = Reflect.getOwnPropertyDescriptor(real(), p);
        return d && { ...d, configurable: true };
      },
    },
  );
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
