import { printJson } from './json-output.js';
import { existsSync, readFileSync, statfsSync } from 'node:fs';
import { freemem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Docker from 'dockerode';
import { loadExeca } from '../sandboxes/lazy-execa.js';
import { agentAdapters } from '../agents/index.js';
import type { BenchConfig, StepConfig } from '../pipeline/config/load.js';
import type { Graph } from '../pipeline/dag.js';
import type { Store } from '../pipeline/store/store.js';
import type { EngineContext } from '../pipeline/engine.js';
import type { ResolvedInput } from '../pipeline/inputs.js';
import { packageRoot } from '../pipeline/package-root.js';
import { errorMessage } from '../pipeline/result.js';
import { checkBubblewrap, findOnPath } from '../sandboxes/bubblewrap.js';
import { parsePinnedImage, resolvePinnedImage } from '../sandboxes/docker-image.js';
import { dockerBackend } from '../sandboxes/docker.js';
import type { BackendName } from '../sandboxes/index.js';
import { loadStepTask } from '../steps/agent-step-config.js';
import { sandboxOf } from '../steps/run.js';
import { EXIT } from './help.js';
import { anySpecOf, specOf } from '../steps/step-spec.js';

/**
 * `pairbench doctor`: the preflight. Checks every prerequisite of the configured
 * steps -- sandbox backends and pinned images, free disk for the store, free memory
 * after what is already committed, agent CLIs at their pinned versions, the model
 * credentials each arm needs (by name only), task repositories and commits, git and
 * tar -- and names every missing one with its fix, never stopping at the first.
 */

/** What a command gets from the CLI: the loaded config (as cli/main.ts's `load()` returns it). */
export interface LoadedConfig {
  config: BenchConfig;
  graph: Graph;
  ctx: EngineContext;
  inputs: Map<string, ResolvedInput[]>;
}

export interface CommandIO {
  stdout: { write(s: string): unknown };
  stderr: { write(s: string): unknown };
  env: Record<string, string | undefined>;
}

export interface DoctorCheck {
  name: string;
  ok: boolean;
  /** What was found (never a credential's value). */
  detail: string;
  /** What to do about it; null when the check passes. */
  fix: string | null;
}

export interface DoctorFloors {
  /** Free space the store's file system must have. */
  diskBytes: number;
  /** Free memory per concurrent agent run (a docker run needs at least its container's memory limit). */
  memoryPerRunBytes: number;
}

const GiB = 1024 ** 3;
export const DEFAULT_FLOORS: DoctorFloors = { diskBytes: 2 * GiB, memoryPerRunBytes: 1 * GiB };
/** Step kinds that start sandboxes. */
const SANDBOXED_KINDS = new Set(['run', 'verify', 'certify']);
/** Agent CLIs installed as npm packages, and the environment variable holding their provider's key. */
const AGENT_PACKAGES: Record<string, { pkg: string; credential: string }> = {
  'claude-code': { pkg: '@anthropic-ai/claude-code', credential: 'ANTHROPIC_API_KEY' },
  codex: { pkg: '@openai/codex', credential: 'OPENAI_API_KEY' },
};
/** The docker backend's container memory limit when a step sets none (sandboxes/docker.ts). */
const DOCKER_DEFAULT_MEMORY_MB = 1024;

const pass = (name: string, detail: string): DoctorCheck => ({ name, ok: true, detail, fix: null });
const missing = (name: string, detail: string, fix: string): DoctorCheck => ({ name, ok: false, detail, fix });

export function formatBytes(n: number): string {
  return n >= GiB ? `${(n / GiB).toFixed(1)} GiB` : `${Math.round(n / 1024 ** 2)} MiB`;
}

/** Runs every check; the order of the result is stable (it does not depend on timing). */
export async function doctorChecks(loaded: LoadedConfig, env: CommandIO['env'], floors: DoctorFloors = DEFAULT_FLOORS): Promise<DoctorCheck[]> {
  const { config, graph } = loaded;
  const pathVar = env['PATH'] ?? '';
  const docker = dockerClient(env);
  const uses = sandboxUses(config.steps);
  const usesDocker = uses.some((u) => u.settings.backend === 'docker');
  const engine = usesDocker ? await engineState(docker) : undefined;

  const groups = await Promise.all([
    Promise.resolve(toolChecks(pathVar)),
    Promise.resolve([diskCheck(config.storeDir, floors)]),
    memoryCheck(config, graph, uses, engine, floors).then((c) => [c]),
    sandboxChecks(uses, env, pathVar, docker, engine, graph),
    Promise.resolve(agentChecks(config.steps)),
    Promise.resolve(credentialChecks(config.steps, env)),
    repositoryChecks(config, loaded.ctx.store, pathVar),
  ]);
  return groups.flat();
}

/** The command: one line per check, or `{ok, checks}` with --json; exit 0 only when every check passes. */
export async function runDoctor(
  loaded: LoadedConfig,
  io: CommandIO,
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
      lines.push(`${c.ok ? 'ok     ' : 'MISSING'}  ${c.name}: ${c.detail}`);
      if (c.fix) lines.push(`         fix: ${c.fix}`);
    }
    const bad = checks.filter((c) => !c.ok).length;
    lines.push(
      bad
        ? `doctor: ${bad} of ${checks.length} prerequisites missing; no attempt was started${options.canary !== false && !checks.some((c) => c.name.startsWith('agent canary')) ? ' (the agent canary runs once the rest passes)' : ''}`
        : `doctor: all ${checks.length} prerequisites ok`,
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
  const runNodes = graph.nodes.filter((n) => n.kind.name === 'run').length;
  const runLimit = Math.min(config.concurrency.global, config.concurrency.kinds['run'] ?? config.concurrency.global);
  const concurrent = Math.max(1, Math.min(runLimit, runNodes || 1));
  // A docker run reserves its container's memory limit; never count less than the floor.
  const perRunMb = Math.max(
    floors.memoryPerRunBytes / 1024 ** 2,
    ...uses.filter((u) => u.kind === 'run' && u.settings.backend === 'docker').map((u) => u.settings.resources.memory_mb ?? DOCKER_DEFAULT_MEMORY_MB),
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
  kind: string;
  /** As the step resolves them (`backend: auto` already resolved to the backend that will run). */
  settings: Omit<ReturnType<typeof sandboxOf>, 'backend'> & { backend: BackendName };
  /** The backend as written (undefined: not written). */
  configured: string | undefined;
}

function sandboxUses(steps: readonly StepConfig[]): SandboxUse[] {
  return steps
    .filter((s) => SANDBOXED_KINDS.has(s.kind))
    .map((s) => {
      const spec = anySpecOf(s);
      const settings = sandboxOf('sandbox' in spec ? spec : {});
      return {
        step: s.name,
        kind: s.kind,
        settings: { ...settings, backend: settings.backend as BackendName },
        configured: 'sandbox' in spec ? spec.sandbox?.backend : undefined,
      };
    });
}

/** The engine pairbench's docker backend will talk to: DOCKER_HOST (unix://) or the default socket. */
function dockerClient(env: CommandIO['env']): { client: Docker; socketPath?: string } {
  const host = env['DOCKER_HOST'];
  if (host?.startsWith('unix://')) {
    const socketPath = host.slice('unix://'.length);
    return { client: new Docker({ socketPath }), socketPath };
  }
  return { client: new Docker() };
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

async function engineState(docker: ReturnType<typeof dockerClient>): Promise<EngineState> {
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

const stepList = (names: string[]) => `step${names.length === 1 ? '' : 's'} ${names.join(', ')}`;

async function sandboxChecks(
  uses: SandboxUse[],
  env: CommandIO['env'],
  pathVar: string,
  docker: ReturnType<typeof dockerClient>,
  engine: EngineState | undefined,
  graph: Graph,
): Promise<DoctorCheck[]> {
  const byBackend = new Map<BackendName, SandboxUse[]>();
  for (const u of uses) byBackend.set(u.settings.backend, [...(byBackend.get(u.settings.backend) ?? []), u]);
  const out: DoctorCheck[] = [];
  for (const [backend, list] of byBackend) {
    const name = `sandbox ${backend} (${stepList(list.map((u) => u.step))})`;
    if (backend === 'local') {
      const auto = list.filter((u) => u.configured === 'auto').map((u) => u.step);
      out.push(
        pass(
          name,
          `no isolation: runs as this user on this machine (recorded as such)${auto.length ? `; ${stepList(auto)} chose it by backend auto because bwrap cannot make a sandbox here` : ''}`,
        ),
      );
    } else if (backend === 'bubblewrap') {
      const r = await checkBubblewrap(pathVar || undefined);
      out.push(r.ok ? pass(name, `bwrap at ${findOnPath('bwrap', pathVar)} builds a sandbox here`) : missing(name, ...splitHint(r.error)));
    } else {
      const where = docker.socketPath ?? env['DOCKER_HOST'] ?? '/var/run/docker.sock';
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
  docker: ReturnType<typeof dockerClient>,
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

async function imageChecks(uses: SandboxUse[], docker: ReturnType<typeof dockerClient>, engine: EngineState | undefined, graph: Graph): Promise<DoctorCheck[]> {
  const dockerUses = uses.filter((u) => u.settings.backend === 'docker');
  const byImage = new Map<string, string[]>();
  const unpinned: string[] = [];
  const out: DoctorCheck[] = [];
  for (const u of dockerUses) {
    const nodes = graph.nodes.filter((n) => n.step.name === u.step);
    // A task's own image: its environment step builds it (and says what fails when it cannot).
    if (nodes.some((n) => n.upstream.some((x) => x.kind.name === 'environment'))) continue;
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

function pinnedVersion(pkg: string): string | null {
  try {
    const json = JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as {
      dependencies?: Record<string, string>;
      devDependencies?: Record<string, string>;
    };
    return json.devDependencies?.[pkg] ?? json.dependencies?.[pkg] ?? null;
  } catch {
    return null;
  }
}

function agentChecks(steps: readonly StepConfig[]): DoctorCheck[] {
  const byAdapter = new Map<string, string[]>();
  for (const s of steps.filter((s) => s.kind === 'run')) {
    const a = specOf(s, 'run').agent.adapter;
    if (a && AGENT_PACKAGES[a]) byAdapter.set(a, [...(byAdapter.get(a) ?? []), s.name]);
  }
  const out: DoctorCheck[] = [];
  for (const [name, stepNames] of byAdapter) {
    const pkg = AGENT_PACKAGES[name]!.pkg;
    const label = `agent ${name} (${stepList(stepNames)})`;
    const version = agentAdapters.get(name)!.version();
    const pinned = pinnedVersion(pkg);
    const install = `run npm ci in ${packageRoot()} (installs ${pkg}${pinned ? `@${pinned}` : ''})`;
    if (version === 'not-installed') out.push(missing(label, `the ${name} CLI is not installed (or does not run: --version failed)`, install));
    else if (pinned && version !== pinned)
      out.push(missing(label, `installed ${version}, but package.json pins ${pkg}@${pinned}; the version is part of every attempt's key`, install));
    else out.push(pass(label, `${pkg} ${version} installed${pinned ? ' (the pinned version)' : ''}`));
  }
  return out;
}

const LOCAL_HOSTS = new Set(['127.0.0.1', 'localhost', '::1', '[::1]']);

/** Whether an upstream URL is this machine (a local model or a fake): then no provider key is needed. */
export function isLocalUpstream(url: string): boolean {
  try {
    const host = new URL(url).hostname.toLowerCase();
    return LOCAL_HOSTS.has(host) || host.endsWith('.localhost') || /^127\./.test(host);
  } catch {
    return false;
  }
}

function credentialChecks(steps: readonly StepConfig[], env: CommandIO['env']): DoctorCheck[] {
  const needs = new Map<string, { upstreams: Set<string>; steps: string[]; adapter: string }>();
  for (const s of steps.filter((s) => s.kind === 'run')) {
    const spec = specOf(s, 'run');
    const adapter = spec.agent.adapter;
    const upstream = spec.model?.upstream;
    if (!upstream || spec.model?.fake_script || isLocalUpstream(upstream)) continue;
    const variable = AGENT_PACKAGES[adapter]?.credential;
    if (!variable) continue;
    const n = needs.get(variable) ?? { upstreams: new Set<string>(), steps: [], adapter };
    n.upstreams.add(upstream);
    n.steps.push(s.name);
    needs.set(variable, n);
  }
  return [...needs].map(([variable, n]) => {
    const name = `credential ${variable} (${stepList(n.steps)})`;
    const where = [...n.upstreams].join(', ');
    // Only whether it is there: its value is never read into a message.
    return (env[variable] ?? '').trim() !== ''
      ? pass(name, `set in the environment (for ${n.adapter} -> ${where})`)
      : missing(
          name,
          `not set: ${n.adapter} talks to ${where}, which needs a provider key`,
          `export ${variable}=<key> before running pairbench (a key for ${where}; an interactive CLI login cannot be lent to the gateway)`,
        );
  });
}

// ---------------------------------------------------------------------------
// Task repositories

/** scheme://... or scp-like user@host:path: a remote; anything else is a local path. */
const URL_LIKE = /^(?:[a-z][a-z0-9+.-]*:\/\/|[^/@\s]+@[^/:\s]+:)/i;

async function repositoryChecks(config: BenchConfig, store: Store, pathVar: string): Promise<DoctorCheck[]> {
  const wanted = new Map<string, { source: string; commit: string; tasks: string[]; origin: string }>();
  const problems: DoctorCheck[] = [];
  for (const step of config.steps.filter((s) => s.kind === 'materialize')) {
    for (const id of step.matrix.find((d) => d.name === 'task')?.values ?? []) {
      const t = loadStepTask(step, id);
      if (!t.ok) {
        problems.push(
          missing(`task ${id} (step ${step.name})`, t.error.map((d) => d.message).join('; '), 'fix the task definition (pairbench plan shows where)'),
        );
        continue;
      }
      const key = `${t.value.repo.source}\n${t.value.repo.commit}`;
      const w = wanted.get(key) ?? { source: t.value.repo.source, commit: t.value.repo.commit, tasks: [], origin: t.value.origin };
      if (!w.tasks.includes(id)) w.tasks.push(id);
      wanted.set(key, w);
    }
  }
  const git = findOnPath('git', pathVar);
  const checks = await Promise.all(
    [...wanted.values()].map(async (w) => {
      const name = `task repository ${w.source} @ ${w.commit.slice(0, 12)} (task${w.tasks.length === 1 ? '' : 's'} ${w.tasks.join(', ')})`;
      if (!git) return missing(name, 'cannot be checked: git is not on PATH', 'install git');
      const r = await commitReachable(git, store, w.source, w.commit, pathVar);
      return r.ok ? pass(name, r.detail) : missing(name, r.detail, r.fix.replace('{origin}', w.origin));
    }),
  );
  return [...problems, ...checks];
}

async function hasCommit(git: string, gitDir: string, commit: string, pathVar: string): Promise<boolean> {
  const r = await (
    await loadExeca()
  )(git, ['-C', gitDir, 'cat-file', '-e', `${commit}^{commit}`], {
    reject: false,
    timeout: 20_000,
    // Never walk up into an enclosing repository: the path itself must be the repository.
    env: { PATH: pathVar, GIT_CEILING_DIRECTORIES: dirname(gitDir), GIT_TERMINAL_PROMPT: '0', GIT_CONFIG_NOSYSTEM: '1', HOME: '/nonexistent' },
    extendEnv: false,
  });
  return r.exitCode === 0;
}

/** Whether materialize will find the commit: in the store's mirror (what it reads first), else at the source. */
async function commitReachable(
  git: string,
  store: Store,
  source: string,
  commit: string,
  pathVar: string,
): Promise<{ ok: true; detail: string } | { ok: false; detail: string; fix: string }> {
  // The mirror materialize reads (the store says where it keeps it).
  const mirror = store.mirrorPath(source);
  if (existsSync(mirror) && (await hasCommit(git, mirror, commit, pathVar))) return { ok: true, detail: "commit present in the store's mirror" };
  const local = source.startsWith('file://') ? fileURLToPath(source) : URL_LIKE.test(source) ? null : source;
  if (local === null) {
    const r = await (
      await loadExeca()
    )(git, ['ls-remote', source], { reject: false, timeout: 30_000, env: { PATH: pathVar, GIT_TERMINAL_PROMPT: '0', HOME: '/nonexistent' }, extendEnv: false });
    if (r.exitCode !== 0)
      return {
        ok: false,
        detail: `the remote does not answer: ${String(r.stderr).trim().split('\n')[0] ?? `git exit ${r.exitCode}`}`,
        fix: 'check the URL and network access (or vendor the repository and use repo.path)',
      };
    return String(r.stdout).includes(commit)
      ? { ok: true, detail: 'the remote answers; the commit is a ref tip' }
      : { ok: true, detail: 'the remote answers; the commit is not a ref tip, so it is confirmed only when materialize fetches it' };
  }
  if (!existsSync(local)) return { ok: false, detail: `${local} does not exist`, fix: 'restore the repository there, or correct repo.path in {origin}' };
  if (await hasCommit(git, local, commit, pathVar)) return { ok: true, detail: 'commit present' };
  return {
    ok: false,
    detail: `commit ${commit} is not in ${local}`,
    fix: `fetch it into that repository (git -C ${local} fetch origin ${commit}) or correct repo.commit in {origin}`,
  };
}
