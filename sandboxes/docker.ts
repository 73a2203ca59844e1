import {
  type Stats,
  chmodSync,
  existsSync,
  lchownSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
} from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { basename, dirname, isAbsolute, join, resolve } from 'node:path';
import { Writable } from 'node:stream';
import type { Duplex } from 'node:stream';
import type Docker from 'dockerode';
import { describeEndpoint, dockerClient } from './docker-client.js';
import { packageVersion } from '../pipeline/package-root.js';
import { err, errorMessage, ok, type Result } from '../pipeline/result.js';
import { parsePinnedImage, resolvePinnedImage, type ImageId } from './docker-image.js';
export type { ImageId } from './docker-image.js';
import type { EgressProxy } from './egress-proxy.js';
import {
  forwarderScriptPath,
  type EgressEvent,
  type EgressMode,
  type ExecOptions,
  type ExecResult,
  type Sandbox,
  type SandboxBackend,
  type SandboxFailure,
  type SandboxReceipt,
  type SandboxSpec,
} from './sandbox.js';

/**
 * `docker`: one fresh container per sandbox, through dockerode.
 *
 * The container runs an idle keepalive (`sleep infinity` under docker-init, as
 * uid 65534) and every command is a `docker exec` as uid:gid 1000:1000 in /work.
 * Hardening: all capabilities dropped, no-new-privileges, read-only root file
 * system with a tmpfs /tmp, memory / CPU / pids limits, and only the workspace
 * (read-write at /work) and the spec's mounts bound in. The image must be pinned
 * (image ID or repository digest); its ID goes into the receipt.
 *
 * Egress:
 * - `none`: `NetworkMode: none` (only a loopback interface inside).
 * - `allowlist`: also `none`; the host-side allowlist proxy listens on a unix socket
 *   whose directory is bound in, and a forwarder inside (node, run as uid 65534 so
 *   the agent cannot kill it) serves it at 127.0.0.1:3128; http(s)_proxy point there.
 *   Enforcement does not depend on the agent honouring the proxy variables: there
 *   is no other route out.
 * - `open`: the engine's `bridge` network (or `openNetwork`), recorded as not
 *   enforced. If the engine has no such network (dockerd --bridge=none) create()
 *   fails with `unavailable` rather than silently falling back to the host's
 *   network; `openNetwork: 'host'` is an explicit opt-in to share it.
 *
 * `spec.forwards` (the model gateway's unix socket) reach 127.0.0.1:PORT inside the
 * same way as the proxy; the socket file alone is bound (read-only), not its
 * directory, so nothing next to it becomes visible. A forwarded socket must be
 * connectable by uid 65534 (mode 0666, directory searchable by others); create()
 * checks that.
 *
 * Workspace ownership: the agent runs as uid 1000, so create() makes the host
 * workspace writable for it: when pairbench runs as root it chowns the workspace
 * to 1000:1000 (left so afterwards: the host reads it as root); as uid 1000 nothing
 * changes; as any other user it adds a+rwX (files the agent creates are then owned
 * by uid 1000 on the host).
 */

export interface DockerBackendOptions {
  /** The engine's socket (default: dockerode's default, i.e. DOCKER_HOST or /var/run/docker.sock). */
  socketPath?: string;
  /** Network for egress `open` (default `bridge`). `host` shares the host's network namespace: opt in knowingly. */
  openNetwork?: string;
  /** The forwarder script on the host (default: pairbench's sandboxes/forwarder.mjs). */
  forwarderScript?: string;
  /** node inside the image, for the forwarder (default `node` on the image's PATH). */
  nodeInImage?: string;
}

/** Where processes inside see things. */
export const DOCKER_WORKDIR = '/work';
const AGENT_USER = '1000:1000';
const AGENT_UID = 1000;
const AGENT_GID = 1000;
const AGENT_HOME = '/tmp/home';
/** Keepalive and forwarder: a uid the agent's processes cannot signal. */
const HELPER_USER = '65534:65534';
const RUN_DIR = '/run/pairbench';
const PROXY_PORT = 3128;
/** A container's resources when the step sets none (doctor counts the memory limit per run). */
export const DEFAULTS = { cpus: 1, memoryMb: 1024, pids: 512 } as const;
const FORWARDER_READY_MS = 15_000;
const KILL_GRACE_MS = 5_000;
const MAX_OUTPUT = 64 * 1024 * 1024;

export const LABEL = {
  tool: 'pairbench',
  pid: 'pairbench.pid',
  pidStart: 'pairbench.pid_start',
  host: 'pairbench.host',
  version: 'pairbench.version',
  node: 'pairbench.node',
} as const;

const HOW_TO_START =
  'start it with scripts/start-dockerd.sh, or: dockerd --storage-driver=vfs --iptables=false --ip-masq=false --bridge=none > /tmp/dockerd.log 2>&1 & ' +
  '(Debian package docker.io; needs root)';

export function dockerBackend(options: DockerBackendOptions = {}): SandboxBackend {
  const endpoint = options.socketPath ? { socketPath: options.socketPath } : {};
  const docker = dockerClient(endpoint);
  const where = describeEndpoint(endpoint);
  const forwarderScript = options.forwarderScript ?? forwarderScriptPath();

  const ping = async (): Promise<Result<void, string>> => {
    try {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([docker.ping(), new Promise((_, reject) => (timer = setTimeout(() => reject(new Error('no answer within 5 s')), 5_000)))]).finally(
        () => clearTimeout(timer),
      );
      return ok(undefined);
    } catch (e) {
      return err(`the Docker engine does not answer at ${where}: ${errorMessage(e)}. ${HOW_TO_START}`);
    }
  };

  return {
    name: 'docker',
    isolation: 'container',
    available: ping,
    canEnforce(mode: EgressMode) {
      // `open` has nothing to enforce; create() still needs a network for it (see above).
      return mode !== 'allowlist' || existsSync(forwarderScript);
    },
    async create(spec: SandboxSpec): Promise<Result<Sandbox, SandboxFailure>> {
      const up = await ping();
      if (!up.ok) return err({ reason: 'unavailable', message: up.error });
      // Containers of pairbench processes that died (kill -9) on this host; best effort.
      await reapLeftovers({}, { docker });
      return createSandbox(docker, spec, { ...options, forwarderScript });
    },
  };
}

interface ResolvedOptions extends DockerBackendOptions {
  forwarderScript: string;
}

// eslint-disable-next-line max-lines-per-function -- 204 lines, to be split into named phases (issue 63)
async function createSandbox(docker: Docker, spec: SandboxSpec, options: ResolvedOptions): Promise<Result<Sandbox, SandboxFailure>> {
  const startFailed = (message: string) => err({ reason: 'start-failed' as const, message });

  // The image: pinned, present, and its ID recorded.
  if (!spec.image) return startFailed('the docker backend needs spec.image: an image ID (sha256:...) or name@sha256:<digest>');
  const pinned = parsePinnedImage(spec.image);
  if (!pinned.ok) return startFailed(pinned.error);
  const image = await resolvePinnedImage(docker, pinned.value);
  if (!image.ok) return startFailed(image.error);

  const resources = {
    cpus: spec.resources?.cpus ?? DEFAULTS.cpus,
    memoryMb: spec.resources?.memoryMb ?? DEFAULTS.memoryMb,
    pids: spec.resources?.pids ?? DEFAULTS.pids,
  };
  if (!(resources.cpus > 0) || !(resources.memoryMb >= 6) || !(Number.isInteger(resources.pids) && resources.pids >= 16)) {
    return startFailed(`resources out of range: cpus > 0, memoryMb >= 6, pids an integer >= 16 (got ${JSON.stringify(spec.resources)})`);
  }

  // The network.
  const egress = spec.egress.mode;
  let networkMode = 'none';
  if (egress === 'open') {
    networkMode = options.openNetwork ?? 'bridge';
    if (networkMode !== 'host' && networkMode !== 'none') {
      try {
        await docker.getNetwork(networkMode).inspect();
      } catch (e) {
        return err({
          reason: 'unavailable',
          message:
            `egress "open" needs the engine's "${networkMode}" network, which it does not have (${errorMessage(e)}); ` +
            `dockerd started with --bridge=none has none. Use egress none or allowlist, start dockerd with a bridge, ` +
            `or pass openNetwork: 'host' to share the host's network (not isolated).`,
        });
      }
    }
  }

  const workspace = resolve(spec.workspace);
  if (!isDir(workspace)) return startFailed(`workspace ${workspace} is not a directory`);
  for (const m of spec.mounts ?? []) {
    if (!isAbsolute(m.target)) return startFailed(`mount target ${m.target} is not absolute`);
    if (!existsSync(m.host)) return startFailed(`mount source ${m.host} does not exist`);
  }

  const forwards = [...(spec.forwards ?? [])];
  const ports = new Set<number>();
  for (const f of forwards) {
    if (!Number.isInteger(f.port) || f.port < 1 || f.port > 65535) return startFailed(`forward port ${f.port} is not a TCP port`);
    if (ports.has(f.port) || (egress === 'allowlist' && f.port === PROXY_PORT)) {
      return startFailed(`forward port ${f.port} is used twice${f.port === PROXY_PORT ? ` (${PROXY_PORT} is the egress proxy)` : ''}`);
    }
    ports.add(f.port);
    const reachable = connectableByOthers(f.socket);
    if (!reachable.ok) return startFailed(reachable.error);
  }
  const needForwarder = egress === 'allowlist' || forwards.length > 0;
  if (needForwarder && !existsSync(options.forwarderScript)) {
    return err({ reason: egress === 'allowlist' ? 'egress-unenforceable' : 'start-failed', message: `forwarder script ${options.forwarderScript} is missing` });
  }

  // The agent (uid 1000) writes the workspace and the writable mounts; nothing else. A verifier that
  // runs as root (Harbor's default) has no capabilities: it gets them as its own, as it would in Harbor.
  const owner = spec.user === 'root' ? 0 : AGENT_UID;
  for (const dir of [workspace, ...(spec.mounts ?? []).filter((m) => !m.readOnly).map((m) => m.host)]) {
    const prepared = prepareWorkspace(dir, owner);
    if (!prepared.ok) return startFailed(prepared.error);
  }

  // From here on everything made is undone by `cleanup` if a later step fails.
  const scratch = mkdtempSync(join(tmpdir(), 'pairbench-docker-'));
  chmodSync(scratch, 0o755);
  const workdir = spec.workdir ?? DOCKER_WORKDIR;
  const execUser = spec.user === 'root' ? '0:0' : (spec.user ?? AGENT_USER);
  let proxy: EgressProxy | undefined;
  let container: Docker.Container | undefined;
  let forwarder: Duplex | undefined;
  const cleanup = async () => {
    forwarder?.destroy();
    if (container) await removeContainer(container).catch(() => undefined);
    await proxy?.close().catch(() => undefined);
    rmSync(scratch, { recursive: true, force: true });
  };

  try {
    const mounts: Docker.MountSettings[] = [
      { Type: 'bind', Source: workspace, Target: workdir, ReadOnly: false },
      ...(spec.mounts ?? []).map((m) => ({ Type: 'bind' as const, Source: resolve(m.host), Target: m.target, ReadOnly: m.readOnly })),
      // A root verifier's HOME is /root, writable, holding what the image put there (Harbor's is):
      // an anonymous volume starts as a copy of the image's /root, and goes with the container.
      ...(spec.user === 'root' ? [{ Type: 'volume' as const, Source: '', Target: '/root', ReadOnly: false }] : []),
    ];
    const pairs: string[] = [];
    const env: Record<string, string> = {};
    if (egress === 'allowlist') {
      const dir = join(scratch, 'egress');
      mkdirPublic(dir);
      proxy = await (await import('./egress-proxy.js')).startEgressProxy({ socket: join(dir, 'proxy.sock'), allow: spec.egress.allow ?? [] });
      mounts.push({ Type: 'bind', Source: dir, Target: `${RUN_DIR}/egress`, ReadOnly: true });
      pairs.push(`${PROXY_PORT}=${RUN_DIR}/egress/proxy.sock`);
      const url = `http://127.0.0.1:${PROXY_PORT}`;
      Object.assign(env, {
        http_proxy: url,
        https_proxy: url,
        HTTP_PROXY: url,
        HTTPS_PROXY: url,
        no_proxy: '127.0.0.1,localhost',
        NO_PROXY: '127.0.0.1,localhost',
      });
    }
    forwards.forEach((f, i) => {
      // The socket file itself, not its directory: siblings of a gateway socket (in /tmp, say) stay invisible.
      const target = `${RUN_DIR}/fwd${i}/${basename(f.socket)}`;
      mounts.push({ Type: 'bind', Source: resolve(f.socket), Target: target, ReadOnly: true });
      pairs.push(`${f.port}=${target}`);
    });
    if (needForwarder) {
      mounts.push({ Type: 'bind', Source: realpathSync(options.forwarderScript), Target: `${RUN_DIR}/forwarder.mjs`, ReadOnly: true });
    }
    // The root file system is read-only: HOME is a tmpfs of the agent's own (as in the bubblewrap backend).
    env['HOME'] = AGENT_HOME;
    Object.assign(env, spec.env);

    const me = ownerIdentity();
    container = await docker.createContainer({
      Image: image.value,
      Entrypoint: ['sleep'],
      Cmd: ['infinity'],
      User: HELPER_USER,
      WorkingDir: workdir,
      Env: envList(env),
      ...(networkMode === 'host' ? {} : { Hostname: 'sandbox' }),
      Labels: {
        ...spec.labels,
        ...(spec.node ? { [LABEL.node]: spec.node } : {}),
        [LABEL.tool]: '1',
        [LABEL.pid]: String(process.pid),
        [LABEL.pidStart]: me.start,
        [LABEL.host]: me.host,
        [LABEL.version]: packageVersion(),
      },
      NetworkDisabled: networkMode === 'none',
      HostConfig: {
        NetworkMode: networkMode,
        Init: true,
        CapDrop: ['ALL'],
        SecurityOpt: ['no-new-privileges'],
        ReadonlyRootfs: true,
        Tmpfs: {
          '/tmp': `rw,exec,nosuid,nodev,size=${Math.round(resources.memoryMb)}m,mode=1777`,
          [AGENT_HOME]: `rw,exec,nosuid,nodev,size=${Math.round(resources.memoryMb)}m,mode=0700,uid=${AGENT_UID},gid=${AGENT_GID}`,
        },
        Memory: Math.round(resources.memoryMb * 1024 * 1024),
        MemorySwap: Math.round(resources.memoryMb * 1024 * 1024),
        NanoCpus: Math.round(resources.cpus * 1e9),
        PidsLimit: resources.pids,
        IpcMode: 'private',
        Mounts: mounts,
        AutoRemove: false,
      },
    });
    await container.start();

    if (needForwarder) {
      const started = await startForwarder(container, options.nodeInImage ?? 'node', pairs);
      if (!started.ok) {
        await cleanup();
        return err({ reason: egress === 'allowlist' ? 'egress-unenforceable' : 'start-failed', message: started.error });
      }
      forwarder = started.value;
    }
  } catch (e) {
    await cleanup();
    return startFailed(`starting the container failed: ${errorMessage(e)}`);
  }

  const c = container;
  const receiptBase = {
    backend: 'docker',
    isolation: 'container' as const,
    egress_mode: egress,
    egress_enforced: egress !== 'open',
    image_id: image.value as ImageId,
    resources: { cpus: resources.cpus, memory_mb: resources.memoryMb, pids: resources.pids },
  };
  let finalLog: EgressEvent[] | undefined;
  let closing: Promise<void> | undefined;
  let closed = false;

  const close = (): Promise<void> =>
    (closing ??= (async () => {
      closed = true;
      forwarder?.destroy();
      let failure: unknown;
      try {
        await removeContainer(c);
      } catch (e) {
        failure = e;
      }
      if (proxy) {
        finalLog = proxy.events();
        await proxy.close().catch(() => undefined);
      }
      rmSync(scratch, { recursive: true, force: true });
      if (failure) {
        closing = undefined; // let a retry try again
        throw new Error(`removing container ${c.id.slice(0, 12)} failed: ${errorMessage(failure)}; it is labelled pairbench=1, reapLeftovers() removes it`, {
          cause: failure,
        });
      }
    })());

  const sandbox: Sandbox & { readonly containerId: string } = {
    workdir,
    containerId: c.id,
    exec: (argv, o = {}) => {
      if (closed) return Promise.reject(new Error('docker sandbox: exec after close()'));
      return execIn(c, argv, { ...o, cwd: o.cwd ?? workdir }, execUser);
    },
    receipt: (): SandboxReceipt => ({ ...receiptBase, resources: { ...receiptBase.resources }, egress_log: finalLog ?? proxy?.events() ?? [] }),
    changedOutsideWorkspace: () => filesInScratch(c, execUser),
    close,
  };
  return ok(sandbox);
}

/**
 * The files processes left outside the workspace. The root file system is read-only, so
 * that is what they wrote to the tmpfs /tmp (HOME included), seen as the user who ran them.
 */
async function filesInScratch(container: Docker.Container, user: string): Promise<string[]> {
  const r = await execIn(container, ['find', '/tmp', '-mindepth', '1', '(', '-type', 'f', '-o', '-type', 'l', ')'], { timeoutMs: 10_000 }, user);
  return r.exitCode === 0 ? r.stdout.split('\n').filter(Boolean).sort() : [];
}

// ---------------------------------------------------------------- exec

async function execIn(container: Docker.Container, argv: string[], o: ExecOptions, user: string = AGENT_USER): Promise<ExecResult> {
  if (argv.length === 0) throw new Error('docker sandbox: exec needs a command');
  const withStdin = o.stdin !== undefined;
  const exec = await container.exec({
    Cmd: argv,
    User: user,
    WorkingDir: o.cwd ?? DOCKER_WORKDIR,
    Env: envList(o.env ?? {}),
    AttachStdin: withStdin,
    AttachStdout: true,
    AttachStderr: true,
    Tty: false,
  });
  // The process's time: from its start to the end of its output, on a monotonic clock
  // (not the exec's creation, nor the polls for its exit code below).
  const started = performance.now();
  const stream = await exec.start({ hijack: true, stdin: withStdin });
  const stdout = new Collector();
  const stderr = new Collector();
  container.modem.demuxStream(stream, stdout, stderr);
  const ended = new Promise<void>((res) => {
    stream.once('end', res);
    stream.once('close', res);
    stream.once('error', res);
  });
  if (withStdin) stream.end(o.stdin);

  let timedOut = false;
  let killed: Promise<void> | undefined;
  // After the kill, the output stream gets a grace period to end, then is cut.
  const kill = () => (killed ??= killAgentProcesses(container).then(() => void setTimeout(() => stream.destroy(), KILL_GRACE_MS).unref()));
  const timer = o.timeoutMs ? setTimeout(() => ((timedOut = true), void kill()), o.timeoutMs) : undefined;
  const onAbort = () => void kill();
  if (o.signal?.aborted) onAbort();
  else o.signal?.addEventListener('abort', onAbort);
  let durationMs: number;
  try {
    await ended;
    durationMs = Math.round(performance.now() - started);
  } finally {
    clearTimeout(timer);
    o.signal?.removeEventListener('abort', onAbort);
  }
  if (killed) await killed;
  stream.destroy();

  // The stream ends when the process's output closes; the exit code follows a moment later.
  let info = await exec.inspect();
  for (let i = 0; info.Running && i < 100; i++) {
    await new Promise((r) => setTimeout(r, 20));
    info = await exec.inspect();
  }
  let exitCode: number | null = info.Running ? null : info.ExitCode;
  let signal: string | null = null;
  if (killed && (exitCode === null || exitCode === 128 + 9)) {
    exitCode = null;
    signal = 'SIGKILL';
  }
  return { exitCode, signal, timedOut, stdout: stdout.text(), stderr: stderr.text(), durationMs };
}

/**
 * Kills every process of the agent's uid in the container (kill(-1) as that uid:
 * the command, its children and anything it left behind; not the keepalive or the
 * forwarder, which run as another uid). If that cannot run, kills the container.
 */
async function killAgentProcesses(container: Docker.Container): Promise<void> {
  try {
    const r = await runQuiet(container, ['sh', '-c', 'kill -9 -1'], AGENT_USER);
    if (r === 0) return;
  } catch {
    // fall through
  }
  await container.kill({ signal: 'SIGKILL' }).catch(() => undefined);
}

/** Runs a short helper command, discarding output, and returns its exit code. */
async function runQuiet(container: Docker.Container, argv: string[], user: string): Promise<number | null> {
  const exec = await container.exec({ Cmd: argv, User: user, AttachStdout: true, AttachStderr: true });
  const stream = await exec.start({ hijack: true, stdin: false });
  stream.resume();
  await Promise.race([
    new Promise<void>((res) => (stream.once('end', res), stream.once('close', res), stream.once('error', res))),
    new Promise<void>((res) => setTimeout(res, KILL_GRACE_MS).unref()),
  ]);
  stream.destroy();
  const info = await exec.inspect();
  return info.Running ? null : info.ExitCode;
}

/** Starts the forwarder (as the helper uid) and waits for its `ready` line; the stream stays open for the sandbox's life. */
async function startForwarder(container: Docker.Container, node: string, pairs: string[]): Promise<Result<Duplex, string>> {
  const exec = await container.exec({
    Cmd: [node, `${RUN_DIR}/forwarder.mjs`, ...pairs],
    User: HELPER_USER,
    WorkingDir: '/',
    Env: [],
    AttachStdout: true,
    AttachStderr: true,
  });
  const stream = await exec.start({ hijack: true, stdin: false });
  const out = new Collector();
  const errs = new Collector();
  container.modem.demuxStream(stream, out, errs);
  const outcome = await new Promise<'ready' | 'ended' | 'timeout'>((res) => {
    const timer = setTimeout(() => res('timeout'), FORWARDER_READY_MS);
    out.onData = () => {
      if (!/^ready$/m.test(out.text())) return;
      clearTimeout(timer);
      res('ready');
    };
    stream.once('end', () => (clearTimeout(timer), res('ended')));
    stream.once('error', () => (clearTimeout(timer), res('ended')));
  });
  if (outcome === 'ready') {
    stream.on('error', () => undefined);
    return ok(stream);
  }
  stream.destroy();
  const detail = [out.text().trim(), errs.text().trim()].filter(Boolean).join('\n') || '(no output)';
  return err(
    outcome === 'timeout'
      ? `the forwarder inside the container did not print "ready" within ${FORWARDER_READY_MS / 1000} s: ${detail}`
      : `the forwarder inside the container exited before it was ready (does the image have ${node}?): ${detail}`,
  );
}

class Collector extends Writable {
  private chunks: Buffer[] = [];
  private size = 0;
  private dropped = 0;
  onData: (() => void) | undefined;
  override _write(chunk: Buffer, _enc: BufferEncoding, done: () => void): void {
    if (this.size + chunk.length <= MAX_OUTPUT) {
      this.chunks.push(chunk);
      this.size += chunk.length;
    } else this.dropped += chunk.length;
    this.onData?.();
    done();
  }
  text(): string {
    const s = Buffer.concat(this.chunks).toString('utf8');
    return this.dropped ? `${s}\n[pairbench: ${this.dropped} more bytes dropped]\n` : s;
  }
}

// ---------------------------------------------------------------- containers

/** Removes a container with force; an already removed one (or one being removed) is not an error. */
async function removeContainer(container: Docker.Container): Promise<void> {
  try {
    await container.remove({ force: true, v: true });
  } catch (e) {
    if (isGone(e)) return;
    throw e;
  }
}

function isGone(e: unknown): boolean {
  const status = (e as { statusCode?: number }).statusCode;
  return status === 404 || (status === 409 && /already in progress/i.test(errorMessage(e)));
}

export interface ReapOptions {
  socketPath?: string;
  /** An engine client to use instead of connecting to socketPath. */
  docker?: Docker;
  /**
   * Also remove containers whose owner process is alive, or unknown (another host,
   * no pid label). Default false: only containers of pairbench processes on this host
   * that are gone (killed) are removed.
   */
  includeLive?: boolean;
}

/**
 * Removes containers labelled pairbench=1 (and every label in labelFilter) left by a
 * killed run. Returns the removed container IDs. Never relies on exit handlers: call
 * it at start (create() does).
 */
export async function reapLeftovers(labelFilter: Record<string, string> = {}, options: ReapOptions = {}): Promise<Result<string[], string>> {
  const docker = options.docker ?? dockerClient(options.socketPath ? { socketPath: options.socketPath } : {});
  const label = [`${LABEL.tool}=1`, ...Object.entries(labelFilter).map(([k, v]) => `${k}=${v}`)];
  let list: Docker.ContainerInfo[];
  try {
    list = await docker.listContainers({ all: true, filters: { label } });
  } catch (e) {
    return err(`listing pairbench containers failed: ${errorMessage(e)}`);
  }
  const removed: string[] = [];
  const failures: string[] = [];
  for (const info of list) {
    if (!options.includeLive && ownerMayBeAlive(info.Labels ?? {})) continue;
    try {
      await removeContainer(docker.getContainer(info.Id));
      removed.push(info.Id);
    } catch (e) {
      failures.push(`${info.Id.slice(0, 12)}: ${errorMessage(e)}`);
    }
  }
  return failures.length ? err(`could not remove ${failures.join('; ')}`) : ok(removed);
}

/** True unless the container's labels show a pairbench process on this host that no longer exists. */
function ownerMayBeAlive(labels: Record<string, string>): boolean {
  if (labels[LABEL.host] !== hostname()) return true;
  const pid = Number(labels[LABEL.pid]);
  if (!Number.isInteger(pid) || pid <= 0) return true;
  try {
    process.kill(pid, 0);
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
  // Alive, but possibly a reused pid: compare start times when both are known.
  const recorded = labels[LABEL.pidStart];
  const now = processStart(pid);
  return !(recorded && now && recorded !== now);
}

function ownerIdentity(): { host: string; start: string } {
  return { host: hostname(), start: processStart(process.pid) ?? '' };
}

/** A process's start time in clock ticks since boot (field 22 of /proc/PID/stat), if readable. */
function processStart(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may contain spaces and parentheses: split after the last ')'.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

// ---------------------------------------------------------------- host side

function envList(env: Record<string, string>): string[] {
  return Object.entries(env).map(([k, v]) => {
    if (!k || k.includes('=') || k.includes('\0')) throw new Error(`invalid environment variable name ${JSON.stringify(k)}`);
    return `${k}=${v}`;
  });
}

function isDir(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}

/** A new directory the forwarder (uid 65534) can traverse to reach the socket in it. */
function mkdirPublic(dir: string): void {
  mkdirSync(dir);
  chmodSync(dir, 0o755);
}

/** A unix socket that uid 65534 inside can connect to: socket writable by others, directory searchable. */
function connectableByOthers(socket: string): Result<void, string> {
  let st;
  try {
    st = statSync(socket);
  } catch (e) {
    return err(`forwarded socket ${socket}: ${errorMessage(e)}`);
  }
  if (!st.isSocket()) return err(`forwarded path ${socket} is not a unix socket`);
  if ((st.mode & 0o002) === 0)
    return err(`forwarded socket ${socket} is not connectable from inside the container: chmod 0666 it (the forwarder runs as uid 65534)`);
  const dirMode = statSync(dirname(resolve(socket))).mode;
  if ((dirMode & 0o001) === 0) return err(`the directory of forwarded socket ${socket} is not searchable by others: chmod o+x ${dirname(resolve(socket))}`);
  return ok(undefined);
}

/**
 * Makes the workspace writable by the agent's uid 1000 (see the file comment).
 * Symlinks are not followed.
 */
function prepareWorkspace(dir: string, owner: number = AGENT_UID): Result<'chown' | 'chmod' | 'none', string> {
  const uid = process.getuid?.();
  try {
    // As root, every file is given to the owner, even when that is root: an attempt's files
    // (uid 1000) must be writable by a capability-less root verifier, as Harbor's root can.
    if (uid === 0) {
      walk(dir, (p) => lchownSync(p, owner, owner));
      return ok('chown');
    }
    if (uid === owner) return ok('none');
    walk(dir, (p, st) => {
      if (!st.isSymbolicLink()) chmodSync(p, st.mode | (st.isDirectory() || st.mode & 0o111 ? 0o777 : 0o666));
    });
    return ok('chmod');
  } catch (e) {
    return err(`making workspace ${dir} writable for uid ${owner} failed: ${errorMessage(e)}`);
  }
}

function walk(p: string, visit: (p: string, st: Stats) => void): void {
  const st = lstatSync(p);
  visit(p, st);
  if (st.isDirectory()) for (const name of readdirSync(p)) walk(join(p, name), visit);
}
