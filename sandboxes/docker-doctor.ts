/**
 * doctor's checks for the docker backend: the engine answers; the egress each step asks for is
 * one it can give (the allowlist's forwarder is installed, `open` has a bridge network); each
 * pinned image is in the engine, for the engine's architecture; and what the engine's running
 * containers already hold, for doctor's memory check.
 */
import type Docker from 'dockerode';
import { errorMessage } from '../pipeline/result.js';
import { formatBytes, missing, pass, stepList } from '../pipeline/preflight.js';
import type { PreflightCheck } from '../pipeline/step-kind.js';
import type { BackendDoctor, BackendUse, EngineMemory } from './backend-doctor.js';
import { describeEndpoint, dockerClient, dockerEndpoint } from './docker-client.js';
import { parsePinnedImage, resolvePinnedImage } from './docker-image.js';
import { DEFAULTS, dockerBackend } from './docker.js';
import { splitHint } from './hint.js';

type EngineState = { ok: false; error: string } | { ok: true; arch: string; memory: EngineMemory };

/** uname -m / Go architecture names to Go's (what image configs use). */
function normalizeArch(a: string): string {
  return ({ x86_64: 'amd64', aarch64: 'arm64', armv7l: 'arm', i686: 'i386', i386: '386' } as Record<string, string>)[a] ?? a;
}

async function engineState(client: Docker, socketPath: string | undefined): Promise<EngineState> {
  const up = await dockerBackend(socketPath ? { socketPath } : {}).available();
  if (!up.ok) return { ok: false, error: up.error };
  try {
    const info = (await client.info()) as { MemTotal?: number; Architecture?: string };
    const memory: EngineMemory = { reservedBytes: 0, heldBytes: 0, limited: 0, unlimited: 0, totalBytes: info.MemTotal ?? 0 };
    const running = await client.listContainers();
    await Promise.all(
      running.map(async (c) => {
        const container = client.getContainer(c.Id);
        const [inspect, stats] = await Promise.all([
          container.inspect().catch(() => undefined),
          container.stats({ stream: false, 'one-shot': true }).catch(() => undefined),
        ]);
        if (!inspect) return; // it stopped meanwhile
        const limit = inspect.HostConfig.Memory ?? 0;
        const m = stats?.memory_stats;
        const inactive =
          (m?.stats as Record<string, number> | undefined)?.['inactive_file'] ?? (m?.stats as Record<string, number> | undefined)?.['total_inactive_file'] ?? 0;
        const used = m?.usage ? Math.max(0, m.usage - inactive) : 0;
        if (limit > 0) {
          memory.limited++;
          // Without a usage figure, the whole limit counts (the cautious reading).
          memory.reservedBytes += stats ? Math.max(0, limit - used) : limit;
          memory.heldBytes += Math.max(limit, used);
        } else {
          memory.unlimited++;
          memory.heldBytes += used;
        }
      }),
    );
    return { ok: true, arch: normalizeArch(info.Architecture ?? ''), memory };
  } catch (e) {
    return { ok: false, error: `the Docker engine answered but could not be queried: ${errorMessage(e)}` };
  }
}

async function egressProblem(u: BackendUse, client: Docker, engine: EngineState): Promise<{ detail: string; fix: string } | undefined> {
  if (u.egress === 'allowlist' && !dockerBackend().canEnforce('allowlist')) {
    return {
      detail: 'the forwarder script (sandboxes/forwarder.mjs) the allowlist proxy needs is missing',
      fix: 'reinstall pairbench (npm ci): the package is incomplete',
    };
  }
  if (u.egress === 'open' && engine.ok) {
    try {
      await client.getNetwork('bridge').inspect();
    } catch {
      return {
        detail: 'egress open needs the engine\'s "bridge" network, which it does not have (dockerd --bridge=none)',
        fix: 'use egress none or allowlist, or start dockerd with a bridge',
      };
    }
  }
  return undefined;
}

async function imageChecks(uses: readonly BackendUse[], client: Docker, engine: EngineState): Promise<PreflightCheck[]> {
  const byImage = new Map<string, string[]>();
  const unpinned: string[] = [];
  const out: PreflightCheck[] = [];
  for (const u of uses) {
    // A task's own image: its environment step builds it (and says what fails when it cannot).
    if (u.builtImage) continue;
    if (u.image?.includes('{')) {
      // A per-task template: every task's image must be in the engine.
      const images = u.templateImages;
      const absent = [...new Set(images.filter((i) => !i.id).map((i) => i.name))];
      const name = `docker images ${u.image} (step ${u.step})`;
      out.push(
        absent.length
          ? missing(
              name,
              `${absent.length} of ${new Set(images.map((i) => i.name)).size} are not in the engine: ${absent.slice(0, 5).join(', ')}${absent.length > 5 ? ', ...' : ''}`,
              'build or load them locally (docker build / docker load / docker import); pairbench never pulls',
            )
          : pass(name, `all ${new Set(images.map((i) => i.name)).size} present, each pinned by its ID for the run`),
      );
      continue;
    }
    if (!u.image) unpinned.push(u.step);
    else byImage.set(u.image, [...(byImage.get(u.image) ?? []), u.step]);
  }
  if (unpinned.length) {
    out.push(
      missing(
        `docker image (${stepList(unpinned)})`,
        'the docker backend needs sandbox.image and none is set',
        "set sandbox.image to an image ID: docker image inspect --format '{{.Id}}' IMAGE",
      ),
    );
  }
  for (const [image, steps] of byImage) {
    const name = `docker image ${image} (${stepList(steps)})`;
    const pinned = parsePinnedImage(image);
    if (!pinned.ok) {
      out.push(missing(name, 'not pinned', pinned.error));
      continue;
    }
    if (!engine.ok) {
      out.push(
        missing(name, 'cannot be looked up: the Docker engine does not answer', 'start the Docker engine (see the sandbox docker line), then run doctor again'),
      );
      continue;
    }
    const found = await resolvePinnedImage(client, pinned.value);
    if (!found.ok) {
      out.push(
        missing(
          name,
          found.error.split(';')[0]!,
          found.error.includes('not in the engine')
            ? 'build or load the image locally (docker build / docker load / docker import); pairbench never pulls'
            : found.error,
        ),
      );
      continue;
    }
    const info = await client
      .getImage(found.value)
      .inspect()
      .catch(() => undefined);
    const arch = info?.Architecture ?? 'unknown';
    if (engine.arch && arch !== 'unknown' && arch !== engine.arch) {
      out.push(
        missing(
          name,
          `present, but built for ${arch} while the engine runs ${engine.arch}: it would run emulated, and wall time would measure the emulator, not the agent`,
          `use an image built for ${engine.arch} (e.g. docker build --platform linux/${engine.arch})`,
        ),
      );
    } else out.push(pass(name, `present in the engine (${arch}${info ? `, ${formatBytes(info.Size)}` : ''})`));
  }
  return out;
}

export const dockerDoctor: BackendDoctor = async (uses, ctx) => {
  // The engine pairbench's docker backend will talk to: DOCKER_HOST (unix://) or the default socket.
  const endpoint = dockerEndpoint(ctx.env);
  const client = dockerClient(endpoint);
  const engine = await engineState(client, endpoint.socketPath);
  const name = `sandbox docker (${stepList(uses.map((u) => u.step))})`;
  const where = describeEndpoint(endpoint, ctx.env);
  const checks: PreflightCheck[] = [engine.ok ? pass(name, `the Docker engine answers at ${where}`) : missing(name, ...splitHint(engine.error))];
  // A backend that cannot give the egress a step asks for refuses to start.
  for (const u of uses) {
    const problem = await egressProblem(u, client, engine);
    if (problem) checks.push(missing(`sandbox docker egress ${u.egress} (step ${u.step})`, problem.detail, problem.fix));
  }
  checks.push(...(await imageChecks(uses, client, engine)));
  // A docker run reserves its container's memory limit.
  const attempts = uses.filter((u) => u.attempts);
  return {
    checks,
    memory: {
      ...(attempts.length ? { perRunMb: Math.max(...attempts.map((u) => u.resources.memory_mb ?? DEFAULTS.memoryMb)) } : {}),
      engine: { name: 'the Docker engine', memory: engine.ok ? engine.memory : null },
    },
  };
};
