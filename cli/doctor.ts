import { printJson } from './json-output.js';
import { existsSync, readFileSync, statfsSync } from 'node:fs';
import { freemem } from 'node:os';
import { dirname } from 'node:path';
import type Docker from 'dockerode';
import { describeEndpoint, dockerClient, dockerEndpoint } from '../sandboxes/docker-client.js';
import type { BenchConfig, StepConfig } from '../pipeline/config/load.js';
import type { Graph } from '../pipeline/dag.js';
import { errorMessage } from '../pipeline/result.js';
import { checkBubblewrap, findOnPath } from '../sandboxes/bubblewrap.js';
import { parsePinnedImage, resolvePinnedImage } from '../sandboxes/docker-image.js';
import { dockerBackend } from '../sandboxes/docker.js';
import type { BackendName } from '../sandboxes/index.js';
import { isolationFallback, sandboxOf, runStep } from '../steps/run.js';
import { EXIT } from './command.js';
import type { CliIO, LoadedConfig } from './command-context.js';
import type { PreflightCheck, PreflightContext, StepKind } from '../pipeline/step-kind.js';
import { builtinStepKinds } from '../steps/index.js';
import { missing, pass, stepList } from '../steps/preflight.js';
import { anySpecOf } from '../steps/step-spec.js';
import { environmentStep } from '../steps/environment.js';

/**
 * `pairbench doctor`: the preflight. Checks every prerequisite of the configured
 * steps and names every missing one with its fix, never stopping at the first: what the
 * machine must have for any cohort (git and tar, free disk for the store, free memory
 * after what is already committed, each sandbox backend and pinned image the sandboxed
 * kinds use), then each step kind's own preflight (StepKind.preflight: the run kind's
 * agent CLIs at their pinned versions and the credentials each arm needs, by name only;
 * materialize's task repositories and commits).
 */

/** A prerequisite and whether it is met (a kind's preflight gives the same shape). */
export type DoctorCheck = PreflightCheck;

export interface DoctorFloors {
  /** Free space the store's file system must have. */
  diskBytes: number;
  /** Free memory per concurrent agent run (a docker run needs at least its container's memory limit). */
  memoryPerRunBytes: number;
}

const GiB = 1024 ** 3;
export const DEFAULT_FLOORS: DoctorFloors = { diskBytes: 2 * GiB, memoryPerRunBytes: 1 * GiB };
/** The docker backend's container memory limit when a step sets none (sandboxes/docker.ts). */
const DOCKER_DEFAULT_MEMORY_MB = 1024;

export function formatBytes(n: number): string {
  return n >= GiB ? `${(n / GiB).toFixed(1)} GiB` : `${Math.round(n / 1024 ** 2)} MiB`;
}

/** Runs every check; the order of the result is stable (it does not depend on timing). */
export async function doctorChecks(loaded: LoadedConfig, env: CliIO['env'], floors: DoctorFloors = DEFAULT_FLOORS): Promise<DoctorCheck[]> {
  const { config, graph } = loaded;
  const pathVar = env['PATH'] ?? '';
  const docker = engineOf(env);
  const uses = sandboxUses(config.steps);
  const usesDocker = uses.some((u) => u.settings.backend === 'docker');
  const engine = usesDocker ? await engineState(docker) : undefined;

  const groups = await Promise.all([
    Promise.resolve(toolChecks(pathVar)),
    Promise.resolve([diskCheck(config.storeDir, floors)]),
    memoryCheck(config, graph, uses, engine, floors).then((c) => [c]),
    sandboxChecks(uses, env, pathVar, docker, engine, graph),
    ...kindPreflights(config.steps, { env, store: loaded.ctx.store }),
  ]);
  return groups.flat();
}

/** Each step kind's own preflight, over the steps of that kind (in the order the kinds are registered). */
function kindPreflights(steps: readonly StepConfig[], ctx: PreflightContext): Promise<DoctorCheck[]>[] {
  return [...builtinStepKinds.values()].flatMap((kind) => {
    const ofKind = steps.filter((s) => s.kind === kind.name);
    return kind.preflight && ofKind.length ? [kind.preflight(ofKind, ctx)] : [];
  });
}

/** The command: one line per check, or `{ok, checks}` with --json; exit 0 only when every check passes. */
export async function runDoctor(
  loaded: LoadedConfig,
  io: CliIO,
  json: boolean,
  floors: DoctorFloors = DEFAULT_FLOORS,
  options: { canary?: boolean } = {},
): Promise<number> {
  const checks = await doctorChecks(loaded, io.env, floors);
  // The canary starts real agents: only once everything they need is there.
  if (options.canary !== false && checks.every((c) => c.ok)) {
    const { canaryChecks } = await import('./canary.js');
    checks.push(...(await canaryChecks(loaded, io)));
  }
  const allOk = checks.every((c) => c.ok);
  if (json) {
    printJson(io.stdout, { ok: allOk, checks });
  } else {
    const lines: string[] = [];
    for (const c of checks) {
      lines.push(`${!c.ok ? 'MISSING' : c.fix ? 'WARNING' : 'ok     '}  ${c.name}: ${c.detail}`);
      if (c.fix) lines.push(`         fix: ${c.fix}`);
    }
    const bad = checks.filter((c) => !c.ok).length;
    lines.push(
      bad
        ? `doctor: ${bad} of ${checks.length} prerequisites missing; no attempt was started${options.canary !== false && !checks.some((c) => c.name.startsWith('agent canary')) ? ' (the agent canary runs once the rest passes)' : ''}`
        : `doctor: all ${checks.length} prerequisites ok${checks.some((c) => c.fix) ? ` (${checks.filter((c) => c.fix).length} warning: see WARNING above)` : ''}`,
    );
    io.stdout.write(lines.join('\n') + '\n');
  }
  return allOk ? EXIT.ok : EXIT.nodeFailed;
}

// ---------------------------------------------------------------------------
// Tools, disk, memory

function toolChecks(pathVar: string): DoctorCheck[] {
  return (['git', 'tar'] as const).map((tool) => {
    const at = findOnPath(tool, pathVar);
    return at
      ? pass(`${tool} on PATH`, at)
      : missing(
          `${tool} on PATH`,
          `${tool} is not on PATH (materialize reads task repositories with git archive | tar)`,
          `install ${tool} (Debian/Ubuntu: apt-get install ${tool})`,
        );
  });
}

/** statfs of the store's file system (of its nearest existing ancestor if the store is not created yet). */
function diskCheck(storeDir: string, floors: DoctorFloors): DoctorCheck {
  const name = 'free disk for the store';
  let dir = storeDir;
  while (!existsSync(dir) && dirname(dir) !== dir) dir = dirname(dir);
  let free: number;
  try {
    const s = statfsSync(dir);
    free = Number(s.bavail) * Number(s.bsize);
  } catch (e) {
    return missing(
      name,
      `cannot read the file system of ${dir}: ${errorMessage(e)}`,
      'check that the store directory (--store or store.path) is on a readable file system',
    );
  }
  const detail = `${formatBytes(free)} free on the file system of ${storeDir}; need ${formatBytes(floors.diskBytes)}`;
  return free >= floors.diskBytes
    ? pass(name, detail)
    : missing(name, detail, `free space there (pairbench gc --max-size SIZE removes old store entries) or point --store at a larger file system`);
}

/** MemAvailable from /proc/meminfo (what can be allocated without swapping), in bytes. */
function readMeminfo(): { available: number; total: number | null; source: string } {
  try {
    const text = readFileSync('/proc/meminfo', 'utf8');
    const field = (k: string) => {
      const m = new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(text);
      return m ? Number(m[1]) * 1024 : null;
    };
    const available = field('MemAvailable');
    if (available !== null) return { available, total: field('MemTotal'), source: 'MemAvailable' };
  } catch {
    // not Linux
  }
  return { available: freemem(), total: null, source: 'os.freemem()' };
}

async function memoryCheck(config: BenchConfig, graph: Graph, uses: SandboxUse[], engine: EngineState | undefined, floors: DoctorFloors): Promise<DoctorCheck> {
  const runNodes = graph.nodes.filter((n) => n.kind === runStep).length;
  const runLimit = Math.min(config.concurrency.global, config.concurrency.kinds[runStep.name] ?? config.concurrency.global);
  const concurrent = Math.max(1, Math.min(runLimit, runNodes || 1));
  // A docker run reserves its container's memory limit; never count less than the floor.
  const perRunMb = Math.max(
    floors.memoryPerRunBytes / 1024 ** 2,
    ...uses.filter((u) => u.kind === runStep && u.settings.backend === 'docker').map((u) => u.settings.resources.memory_mb ?? DOCKER_DEFAULT_MEMORY_MB),
  );
  const need = concurrent * perRunMb * 1024 ** 2;
  const name = `free memory for ${concurrent} concurrent agent run${concurrent === 1 ? '' : 's'}`;

  const host = readMeminfo();
  let free = host.available;
  const parts = [`${host.source} ${formatBytes(host.available)}`];
  if (engine?.ok) {
    const c = engine.committed;
    if (c.reservedBytes > 0) {
      free -= c.reservedBytes;
      parts.push(
        `minus ${formatBytes(c.reservedBytes)} that ${c.limited} running container${c.limited === 1 ? '' : 's'} may still claim up to ${c.limited === 1 ? 'its' : 'their'} memory limit${c.limited === 1 ? '' : 's'}`,
      );
    }
    if (c.unlimited > 0)
      parts.push(
        `${c.unlimited} running container${c.unlimited === 1 ? ' has' : 's have'} no memory limit (not counted beyond what ${c.unlimited === 1 ? 'it uses' : 'they use'})`,
      );
    // An engine in a VM (Docker Desktop, colima) has its own memory: what its containers do not hold.
    if (engine.memTotal > 0 && host.total !== null && Math.abs(engine.memTotal - host.total) > host.total * 0.05) {
      const engineFree = engine.memTotal - c.heldBytes;
      parts.push(
        `the Docker engine runs in a VM with ${formatBytes(engine.memTotal)}, of which its running containers hold or may claim ${formatBytes(c.heldBytes)}`,
      );
      free = Math.min(free, engineFree);
    }
  } else if (engine && !engine.ok) {
    parts.push('running containers not counted: the Docker engine does not answer');
  }
  const detail = `${formatBytes(Math.max(0, free))} free after what is committed (${parts.join('; ')}); need ${formatBytes(need)} (${concurrent} x ${formatBytes(perRunMb * 1024 ** 2)})`;
  return free >= need
    ? pass(name, detail)
    : missing(
        name,
        detail,
        `stop what holds the memory (docker stats shows containers), lower concurrency.kinds.run (or concurrency.global / --jobs), or run on a larger machine`,
      );
}

// ---------------------------------------------------------------------------
// Sandboxes

interface SandboxUse {
  step: string;
  kind: StepKind;
  /** As the step resolves them (`backend: auto` already resolved to the backend that will run). */
  settings: Omit<ReturnType<typeof sandboxOf>, 'backend'> & { backend: BackendName };
  /** The backend as written (undefined: not written). */
  configured: string | undefined;
}

function sandboxUses(steps: readonly StepConfig[]): SandboxUse[] {
  return steps.flatMap((s) => {
    const kind = builtinStepKinds.get(s.kind);
    if (!kind?.sandboxed) return [];
    const spec = anySpecOf(s);
    const settings = sandboxOf('sandbox' in spec ? spec : {});
    return [
      {
        step: s.name,
        kind,
        settings: { ...settings, backend: settings.backend as BackendName },
        configured: 'sandbox' in spec ? spec.sandbox?.backend : undefined,
      },
    ];
  });
}

/** The engine pairbench's docker backend will talk to: DOCKER_HOST (unix://) or the default socket. */
function engineOf(env: CliIO['env']): { client: Docker; socketPath?: string } {
  const endpoint = dockerEndpoint(env);
  return { client: dockerClient(endpoint), ...endpoint };
}

type EngineState = { ok: false; error: string } | { ok: true; memTotal: number; arch: string; committed: Committed };

interface Committed {
  /** Limit minus current use, summed over running containers that have a limit. */
  reservedBytes: number;
  /** Per container max(limit, use), summed: what the engine's memory already holds or promised. */
  heldBytes: number;
  limited: number;
  unlimited: number;
}

async function engineState(docker: ReturnType<typeof engineOf>): Promise<EngineState> {
  const up = await dockerBackend(docker.socketPath ? { socketPath: docker.socketPath } : {}).available();
  if (!up.ok) return { ok: false, error: up.error };
  try {
    const info = (await docker.client.info()) as { MemTotal?: number; Architecture?: string };
    const committed: Committed = { reservedBytes: 0, heldBytes: 0, limited: 0, unlimited: 0 };
    const running = await docker.client.listContainers();
    await Promise.all(
      running.map(async (c) => {
        const container = docker.client.getContainer(c.Id);
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
          committed.limited++;
          // Without a usage figure, the whole limit counts (the cautious reading).
          committed.reservedBytes += stats ? Math.max(0, limit - used) : limit;
          committed.heldBytes += Math.max(limit, used);
        } else {
          committed.unlimited++;
          committed.heldBytes += used;
        }
      }),
    );
    return { ok: true, memTotal: info.MemTotal ?? 0, arch: normalizeArch(info.Architecture ?? ''), committed };
  } catch (e) {
    return { ok: false, error: `the Docker engine answered but could not be queried: ${errorMessage(e)}` };
  }
}

/** uname -m / Go architecture names to Go's (what image configs use). */
function normalizeArch(a: string): string {
  return ({ x86_64: 'amd64', aarch64: 'arm64', armv7l: 'arm', i686: 'i386', i386: '386' } as Record<string, string>)[a] ?? a;
}

async function sandboxChecks(
  uses: SandboxUse[],
  env: CliIO['env'],
  pathVar: string,
  docker: ReturnType<typeof engineOf>,
  engine: EngineState | undefined,
  graph: Graph,
): Promise<DoctorCheck[]> {
  const byBackend = new Map<BackendName, SandboxUse[]>();
  for (const u of uses) byBackend.set(u.settings.backend, [...(byBackend.get(u.settings.backend) ?? []), u]);
  const out: DoctorCheck[] = [];
  for (const [backend, list] of byBackend) {
    const name = `sandbox ${backend} (${stepList(list.map((u) => u.step))})`;
    if (backend === 'local') {
      const auto = list.filter((u) => u.configured === undefined || u.configured === 'auto').map((u) => u.step);
      const fallback = auto.length ? isolationFallback() : null;
      const detail = `no isolation: runs as this user on this machine (recorded as such; a verdict from it is UNISOLATED)`;
      // Passes (a run works), but says why it is not isolated and what isolates it here.
      out.push(
        fallback ? { ...pass(name, `${detail}; ${stepList(auto)} chose it by backend auto: ${fallback.cause}`), fix: fallback.fix } : pass(name, detail),
      );
    } else if (backend === 'bubblewrap') {
      const r = await checkBubblewrap(pathVar || undefined);
      out.push(r.ok ? pass(name, `bwrap at ${findOnPath('bwrap', pathVar)} builds a sandbox here`) : missing(name, ...splitHint(r.error)));
    } else {
      const where = describeEndpoint(docker, env);
      out.push(
        engine?.ok
          ? pass(name, `the Docker engine answers at ${where}`)
          : missing(
              name,
              ...(engine && !engine.ok
                ? splitHint(engine.error)
                : ([`the Docker engine does not answer at ${where}`, 'start the Docker engine'] as [string, string])),
            ),
      );
    }
    // A backend that cannot give the egress a step asks for refuses to start.
    for (const u of list) {
      const problem = await egressProblem(u, docker, engine);
      if (problem) out.push(missing(`sandbox ${backend} egress ${u.settings.egress} (step ${u.step})`, problem.detail, problem.fix));
    }
  }
  out.push(...(await imageChecks(uses, docker, engine, graph)));
  return out;
}

/** The backend's message is "what is wrong; what to do": split it into detail and fix. */
function splitHint(message: string): [string, string] {
  const m = /^(.*?)(?:; | \. |\. )((?:install|It needs|start|use) .*)$/s.exec(message);
  return m ? [m[1]!, m[2]!] : [message, 'see the message above'];
}

async function egressProblem(
  u: SandboxUse,
  docker: ReturnType<typeof engineOf>,
  engine: EngineState | undefined,
): Promise<{ detail: string; fix: string } | undefined> {
  const { backend, egress } = u.settings;
  if (backend === 'local' && egress !== 'open') {
    return {
      detail: `the local backend cannot enforce egress "${egress}" and refuses to start`,
      fix: `use sandbox.backend bubblewrap or docker, or egress: open (recorded as not enforced)`,
    };
  }
  if (backend === 'docker' && egress === 'allowlist' && !dockerBackend().canEnforce('allowlist')) {
    return {
      detail: 'the forwarder script (sandboxes/forwarder.mjs) the allowlist proxy needs is missing',
      fix: 'reinstall pairbench (npm ci): the package is incomplete',
    };
  }
  if (backend === 'docker' && egress === 'open' && engine?.ok) {
    try {
      await docker.client.getNetwork('bridge').inspect();
    } catch {
      return {
        detail: 'egress open needs the engine\'s "bridge" network, which it does not have (dockerd --bridge=none)',
        fix: 'use egress none or allowlist, or start dockerd with a bridge',
      };
    }
  }
  return undefined;
}

async function imageChecks(uses: SandboxUse[], docker: ReturnType<typeof engineOf>, engine: EngineState | undefined, graph: Graph): Promise<DoctorCheck[]> {
  const dockerUses = uses.filter((u) => u.settings.backend === 'docker');
  const byImage = new Map<string, string[]>();
  const unpinned: string[] = [];
  const out: DoctorCheck[] = [];
  for (const u of dockerUses) {
    const nodes = graph.nodes.filter((n) => n.step.name === u.step);
    // A task's own image: its environment step builds it (and says what fails when it cannot).
    if (nodes.some((n) => n.upstream.some((x) => x.kind === environmentStep))) continue;
    if (u.settings.image?.includes('{')) {
      // A per-task template: every task's image must be in the engine.
      const images = nodes
        .map((n) => (n.annotation as { image?: { name: string; id: string | null } } | undefined)?.image)
        .filter((x): x is { name: string; id: string | null } => Boolean(x));
      const absent = [...new Set(images.filter((i) => !i.id).map((i) => i.name))];
      const name = `docker images ${u.settings.image} (step ${u.step})`;
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
    if (!u.settings.image) unpinned.push(u.step);
    else byImage.set(u.settings.image, [...(byImage.get(u.settings.image) ?? []), u.step]);
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
    if (!engine?.ok) {
      out.push(
        missing(name, 'cannot be looked up: the Docker engine does not answer', 'start the Docker engine (see the sandbox docker line), then run doctor again'),
      );
      continue;
    }
    const found = await resolvePinnedImage(docker.client, pinned.value);
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
    const info = await docker.client
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

// ---------------------------------------------------------------------------
// Agents and credentials
