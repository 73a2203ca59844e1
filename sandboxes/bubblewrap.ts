import { spawnSync } from 'node:child_process';
import { existsSync, lstatSync, readdirSync, readlinkSync, realpathSync, statSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, delimiter, dirname, join, posix } from 'node:path';
import { fileURLToPath } from 'node:url';
import { err, errorMessage, ok, type Result } from '../pipeline/result.js';
import { startEgressProxy, type EgressProxy } from './egress-proxy.js';
import { runProcess } from './exec-process.js';
import type { EgressMode, ExecOptions, Mount, Sandbox, SandboxBackend, SandboxFailure, SandboxReceipt, SandboxSpec } from './sandbox.js';

/**
 * `bubblewrap`: every exec is a fresh `bwrap` in new user, pid, ipc, uts, cgroup
 * and (unless egress is open) network namespaces.
 *
 * What is inside, and nothing else (never `--ro-bind / /`: that would expose the
 * store, hidden verifiers and other arms' files):
 * - the system read-only: /usr (and the /bin, /lib*, /sbin symlinks or dirs), a
 *   few /etc files, the node binary if it is outside /usr;
 * - fresh /proc, /dev, /tmp, /run; HOME=/tmp/home;
 * - the workspace read-write at /work, and the spec's mounts.
 *
 * We run as root, so `--unshare-user --uid 1000 --cap-drop ALL` is what makes this a
 * sandbox: without it the process keeps CAP_SYS_ADMIN and can unmount /proc, enter
 * other namespaces and remount / read-write (notes/sandboxes-measured.md). Note
 * that uid 1000 inside maps to root outside, so file modes do not protect what is
 * bound in: only what is mounted is visible, which is why the binds are minimal.
 *
 * Egress: `none` = no network; `allowlist` = no network plus the egress proxy
 * (started on the host by create()) forwarded to 127.0.0.1:3128 inside;
 * `open` = the host network, recorded as not enforced.
 *
 * Resources are recorded in the receipt as given but NOT enforced: bubblewrap has
 * no cpu/memory limits, and RLIMIT_NPROC does not apply to processes whose real
 * uid is root outside (measured), so `ulimit -u` would be a no-op. Use docker
 * when limits must hold.
 */

const WORKDIR = '/work';
const HOME = '/tmp/home';
const SANDBOX_UID = 1000;
const PROXY_PORT = 3128;
/** Inside the sandbox: forwarder script, socket dirs and the readiness fifo. */
const RUN_DIR = '/run/pairbench';
const FORWARDER_INSIDE = `${RUN_DIR}/forwarder.mjs`;
const READY_FIFO = `${RUN_DIR}/ready`;
/** Exit code of the wrapper when the forwarder does not come up (distinct from 126/127 of exec). */
const FORWARDER_FAILED = 125;
const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

const INSTALL_HINT = 'install it with `apt-get install bubblewrap` (Debian/Ubuntu), or use the docker backend';

export const bubblewrapBackend: SandboxBackend = {
  name: 'bubblewrap',
  isolation: 'namespaces',
  available: () => (availability ??= checkBubblewrap()),
  canEnforce: (mode: EgressMode) => mode === 'none' || mode === 'allowlist',
  create,
};

let availability: Promise<Result<void, string>> | undefined;

/** Whether bwrap is on `pathVar` and can build a sandbox here; if not, what to do about it. */
export async function checkBubblewrap(pathVar = process.env['PATH'] ?? DEFAULT_PATH): Promise<Result<void, string>> {
  const bwrap = findOnPath('bwrap', pathVar);
  if (!bwrap) return err(`bubblewrap (bwrap) is not on PATH; ${INSTALL_HINT}`);
  // The same namespaces and binds as a real sandbox, so a kernel or container
  // runtime that forbids them is found here and not in the middle of a run.
  const r = await runProcess(probeArgv(bwrap), { cwd: tmpdir(), env: { PATH: DEFAULT_PATH }, timeoutMs: 10_000 });
  if (r.exitCode === 0) return ok(undefined);
  return err(
    `bwrap is installed (${bwrap}) but cannot create a sandbox here: ${r.stderr.trim() || `exit ${r.exitCode ?? r.signal}`}. ` +
      'It needs user namespaces: check that `sysctl user.max_user_namespaces` is above 0 and, on Ubuntu 24.04+, ' +
      '`kernel.apparmor_restrict_unprivileged_userns`; inside a container, allow unshare/mount (e.g. --privileged). ' +
      'Or use the docker backend.',
  );
}

async function create(spec: SandboxSpec): Promise<Result<Sandbox, SandboxFailure>> {
  const available = await bubblewrapBackend.available();
  const bwrap = findOnPath('bwrap');
  if (!available.ok || !bwrap) return err({ reason: 'unavailable', message: available.ok ? `bwrap is no longer on PATH; ${INSTALL_HINT}` : available.error });
  const invalid = checkSpec(spec);
  if (invalid) return err({ reason: 'start-failed', message: `bubblewrap: ${invalid}` });

  // A private host dir per sandbox: synthetic passwd/group and the proxy's socket.
  const privateDir = await mkdtemp(join(tmpdir(), 'pairbench-bwrap-'));
  let proxy: EgressProxy | undefined;
  try {
    await writeIdentityFiles(privateDir);
    const forwards = [...(spec.forwards ?? [])];
    if (spec.egress.mode === 'allowlist') {
      await mkdir(join(privateDir, 'egress'));
      proxy = await startEgressProxy({ socket: join(privateDir, 'egress', 'proxy.sock'), allow: spec.egress.allow ?? [] });
      forwards.push({ socket: proxy.socket, port: PROXY_PORT });
    }
    const forwarder = forwards.length > 0 ? forwarderScript() : undefined;
    if (forwards.length > 0 && !forwarder) throw new Error('forwarder.mjs is missing next to bubblewrap.ts (is the package complete?)');
    const layout: Layout = { spec, privateDir, forwards, forwarder };
    return ok(openSandbox(bwrap, layout, proxy));
  } catch (e) {
    await proxy?.close();
    await rm(privateDir, { recursive: true, force: true });
    return err({ reason: 'start-failed', message: `bubblewrap: cannot prepare the sandbox: ${errorMessage(e)}` });
  }
}

interface Layout {
  spec: SandboxSpec;
  privateDir: string;
  /** The spec's forwards plus the egress proxy's. */
  forwards: { socket: string; port: number }[];
  /** Host path of forwarder.mjs, when there is anything to forward. */
  forwarder: string | undefined;
}

function openSandbox(bwrap: string, layout: Layout, proxy: EgressProxy | undefined): Sandbox {
  const { spec } = layout;
  const prefix = [bwrap, ...namespaceArgs(spec.egress.mode), ...systemArgs(), ...scratchArgs(), ...sandboxArgs(layout)];
  const wrapper = layout.forwards.length > 0 ? forwardingWrapper(layout.forwards) : [];
  const env = sandboxEnv(spec);
  let closed = false;
  let finalLog: SandboxReceipt['egress_log'] | undefined;
  let closing: Promise<void> | undefined;

  return {
    workdir: WORKDIR,
    async exec(argv: string[], o: ExecOptions = {}) {
      if (closed) throw new Error('bubblewrap sandbox: exec after close()');
      if (argv.length === 0) throw new Error('bubblewrap sandbox: exec needs a command');
      const cwd = posix.resolve(WORKDIR, o.cwd ?? WORKDIR);
      return runProcess([...prefix, '--chdir', cwd, '--', ...wrapper, ...argv], {
        cwd: spec.workspace,
        env: { ...env, ...o.env },
        ...(o.timeoutMs ? { timeoutMs: o.timeoutMs } : {}),
        ...(o.signal ? { signal: o.signal } : {}),
        ...(o.stdin !== undefined ? { stdin: o.stdin } : {}),
      });
    },
    receipt: () => ({
      backend: 'bubblewrap',
      isolation: 'namespaces',
      egress_mode: spec.egress.mode,
      egress_enforced: spec.egress.mode !== 'open',
      egress_log: finalLog ?? proxy?.events() ?? [],
      image_id: null,
      resources: {
        cpus: spec.resources?.cpus ?? null,
        memory_mb: spec.resources?.memoryMb ?? null,
        pids: spec.resources?.pids ?? null,
      },
    }),
    close: () =>
      (closing ??= (async () => {
        closed = true;
        finalLog = proxy?.events() ?? [];
        await proxy?.close();
        await rm(layout.privateDir, { recursive: true, force: true });
      })()),
  };
}

/** Namespaces and privileges: the part that makes bwrap a sandbox when we are root. */
/** The availability probe: the same namespaces and binds as a real sandbox, running `true`. */
function probeArgv(bwrap: string): string[] {
  return [bwrap, ...namespaceArgs('none'), ...systemArgs(), ...scratchArgs(), '--', 'true'];
}

/** The same probe, synchronously (for choosing `backend: auto` while a key is computed). */
export function bubblewrapWorksSync(pathVar = process.env['PATH'] ?? DEFAULT_PATH): boolean {
  const bwrap = findOnPath('bwrap', pathVar);
  if (!bwrap) return false;
  const [file, ...args] = probeArgv(bwrap);
  return spawnSync(file!, args, { cwd: tmpdir(), env: { PATH: DEFAULT_PATH }, stdio: 'ignore', timeout: 10_000 }).status === 0;
}

export function namespaceArgs(mode: EgressMode): string[] {
  return [
    '--unshare-user', '--uid', String(SANDBOX_UID), '--gid', String(SANDBOX_UID),
    '--cap-drop', 'ALL',
    '--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-cgroup-try',
    ...(mode === 'open' ? [] : ['--unshare-net']),
    '--hostname', 'pairbench',
    '--die-with-parent', '--new-session',
  ];
}

/** Top-level system paths: bound read-only when directories, recreated when symlinks (merged /usr). */
const SYSTEM_ROOTS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];
/**
 * /etc pieces a process needs without DNS: name service config, TLS roots, the
 * linker cache. Not /etc/ssl/private: uid 1000 inside is root outside, so its
 * 0700 mode would not keep it unreadable. passwd/group are synthesized instead.
 */
const ETC_FILES = [
  '/etc/hosts',
  '/etc/nsswitch.conf',
  '/etc/ld.so.cache',
  '/etc/ssl/certs',
  '/etc/ssl/openssl.cnf',
  '/etc/ca-certificates',
  '/etc/ca-certificates.conf',
  '/etc/alternatives',
  '/etc/localtime',
  '/etc/services',
  '/etc/protocols',
];

let systemArgsCache: string[] | undefined;

/** Read-only system binds, computed once from what exists on this host. */
export function systemArgs(): string[] {
  return (systemArgsCache ??= [
    ...SYSTEM_ROOTS.flatMap((p) => {
      const st = lstatOrUndefined(p);
      if (st?.isSymbolicLink()) return ['--symlink', readlinkSync(p), p];
      return st?.isDirectory() ? ['--ro-bind', p, p] : [];
    }),
    ...ETC_FILES.filter((p) => existsSync(p)).flatMap((p) => ['--ro-bind', p, p]),
    ...nodeInstallArgs(),
  ]);
}

/** Paths the system binds cover (a mount point cannot be created under them). */
function readOnlyRoots(): string[] {
  const node = nodeOutsideSystem();
  return [...SYSTEM_ROOTS, ...ETC_FILES, '/etc/passwd', '/etc/group', ...(node ? [node] : [])];
}

/**
 * node lives in /usr on Debian. A node elsewhere (tarball, nvm) is bound as the
 * single binary, not its install prefix: that prefix can be /root or a home dir.
 * The agent's own install comes in through spec.mounts.
 */
function nodeInstallArgs(): string[] {
  const node = nodeOutsideSystem();
  return node ? ['--ro-bind', node, node] : [];
}

function nodeOutsideSystem(): string | undefined {
  const node = realpathSync(process.execPath);
  return SYSTEM_ROOTS.some((r) => isUnder(node, r)) ? undefined : node;
}

/** Fresh kernel filesystems and scratch space; HOME exists and is writable by the sandbox user. */
function scratchArgs(): string[] {
  return ['--proc', '/proc', '--dev', '/dev', '--tmpfs', '/tmp', '--tmpfs', '/run', '--dir', HOME];
}

/** What belongs to this sandbox: identity files, workspace, forwarded sockets, mounts. */
function sandboxArgs(layout: Layout): string[] {
  const { spec } = layout;
  const args = [
    '--ro-bind', join(layout.privateDir, 'passwd'), '/etc/passwd',
    '--ro-bind', join(layout.privateDir, 'group'), '/etc/group',
    '--bind', spec.workspace, WORKDIR,
  ];
  if (spec.egress.mode === 'open' && existsSync('/etc/resolv.conf')) args.push('--ro-bind', '/etc/resolv.conf', '/etc/resolv.conf');
  if (layout.forwarder) args.push('--ro-bind', layout.forwarder, FORWARDER_INSIDE);
  // A socket's directory rather than the socket: a server that re-creates its
  // socket after we start would leave a bind of the file pointing at a dead inode.
  layout.forwards.forEach((f, i) => args.push('--ro-bind', dirname(f.socket), `${RUN_DIR}/fwd${i}`));
  // Parents before children, so a mount inside another mount lands on top of it.
  const mounts = [...(spec.mounts ?? [])].sort((a, b) => depth(a.target) - depth(b.target));
  for (const m of mounts) args.push(m.readOnly ? '--ro-bind' : '--bind', m.host, m.target);
  // Last: mount points above are created on the root tmpfs, which then becomes read-only.
  args.push('--remount-ro', '/');
  return args;
}

/**
 * `sh -c SCRIPT pairbench-forwarding ARGV...`: start the forwarder in the background,
 * block on a fifo until it prints `ready` (EOF means it died), then exec ARGV.
 * The forwarder dies with the sandbox: bwrap's pid namespace ends when ARGV exits.
 */
function forwardingWrapper(forwards: { socket: string; port: number }[]): string[] {
  const pairs = forwards.map((f, i) => shellQuote(`${f.port}=${RUN_DIR}/fwd${i}/${basename(f.socket)}`)).join(' ');
  const script = [
    `mkfifo ${READY_FIFO} || exit ${FORWARDER_FAILED}`,
    `${shellQuote(realpathSync(process.execPath))} ${FORWARDER_INSIDE} ${pairs} > ${READY_FIFO} &`,
    `read -r pairbench_ready < ${READY_FIFO}`,
    `if [ "$pairbench_ready" != ready ]; then echo 'pairbench: the port forwarder inside the sandbox did not start (see above)' >&2; exit ${FORWARDER_FAILED}; fi`,
    'unset pairbench_ready',
    'exec "$@"',
  ].join('\n');
  return ['/bin/sh', '-c', script, 'pairbench-forwarding'];
}

/** Environment inside: nothing of the host's, only defaults, the proxy and the spec. */
function sandboxEnv(spec: SandboxSpec): Record<string, string> {
  const proxy = `http://127.0.0.1:${PROXY_PORT}`;
  const proxyEnv: Record<string, string> =
    spec.egress.mode === 'allowlist'
      ? {
          // curl ignores upper-case HTTP_PROXY for http:// URLs, so set both cases.
          HTTP_PROXY: proxy, HTTPS_PROXY: proxy, http_proxy: proxy, https_proxy: proxy,
          NO_PROXY: '127.0.0.1,localhost', no_proxy: '127.0.0.1,localhost',
        }
      : {};
  return { PATH: DEFAULT_PATH, HOME, ...proxyEnv, ...spec.env };
}

/** Why the spec cannot be built, or undefined. Messages name the offending field. */
function checkSpec(spec: SandboxSpec): string | undefined {
  if (!isDirectory(spec.workspace)) return `workspace ${spec.workspace} is not a directory on the host`;
  for (const m of spec.mounts ?? []) {
    const problem = checkMount(m);
    if (problem) return `mount ${m.host} -> ${m.target}: ${problem}`;
  }
  const ports = (spec.forwards ?? []).map((f) => f.port);
  if (spec.egress.mode === 'allowlist') ports.push(PROXY_PORT);
  const duplicate = ports.find((p, i) => ports.indexOf(p) !== i);
  if (duplicate !== undefined) return `port ${duplicate} is forwarded twice (${PROXY_PORT} is the egress proxy's when egress is allowlist)`;
  for (const f of spec.forwards ?? []) {
    const problem = checkForward(f);
    if (problem) return `forward ${f.socket} -> 127.0.0.1:${f.port}: ${problem}`;
  }
  return undefined;
}

function checkMount(m: Mount): string | undefined {
  if (!existsSync(m.host)) return 'the host path does not exist';
  if (!posix.isAbsolute(m.target) || posix.normalize(m.target) !== m.target || m.target === '/') return 'the target must be a normalized absolute path other than /';
  // Under /work is fine (a subdirectory of the workspace); /work itself is the workspace.
  if (m.target === WORKDIR) return `${WORKDIR} is the workspace`;
  const reserved = ['/proc', '/dev', RUN_DIR, HOME].find((r) => m.target === r || isUnder(m.target, r));
  if (reserved) return `the target is inside ${reserved}, which the sandbox manages itself`;
  const root = readOnlyRoots().find((r) => m.target === r || isUnder(m.target, r));
  if (root) return `the target is inside the read-only system bind ${root}; mount it elsewhere (e.g. under /opt or /run)`;
  return undefined;
}

function checkForward(f: { socket: string; port: number }): string | undefined {
  if (!Number.isInteger(f.port) || f.port < 1 || f.port > 65535) return 'the port must be an integer in 1..65535';
  const dir = dirname(f.socket);
  if (!isDirectory(dir)) return `the socket's directory ${dir} does not exist`;
  // The whole directory becomes visible inside: refuse one that holds anything but sockets.
  const other = readdirSync(dir).find((name) => !statOrUndefined(join(dir, name))?.isSocket());
  if (other) return `the socket's directory is bound into the sandbox and also holds "${other}"; keep the socket in a directory of its own`;
  return undefined;
}

/** uid 1000 has a name and a HOME, so tools calling getpwuid (node's os.userInfo, git, ssh) work. */
async function writeIdentityFiles(dir: string): Promise<void> {
  await writeFile(join(dir, 'passwd'), `root:x:0:0:root:/root:/bin/sh\npairbench:x:${SANDBOX_UID}:${SANDBOX_UID}:pairbench sandbox:${HOME}:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n`);
  await writeFile(join(dir, 'group'), `root:x:0:\npairbench:x:${SANDBOX_UID}:\nnogroup:x:65534:\n`);
}

/** forwarder.mjs beside this module (source tree), or in the source tree when running from dist/. */
function forwarderScript(): string | undefined {
  const candidates = ['./forwarder.mjs', '../../sandboxes/forwarder.mjs'].map((rel) => fileURLToPath(new URL(rel, import.meta.url)));
  return candidates.find((p) => existsSync(p));
}

export function findOnPath(name: string, pathVar = process.env['PATH'] ?? DEFAULT_PATH): string | undefined {
  for (const dir of pathVar.split(delimiter)) {
    const candidate = join(dir, name);
    if (dir && statOrUndefined(candidate)?.isFile()) return candidate;
  }
  return undefined;
}

/** POSIX single quoting: safe for any string. */
function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

function isUnder(path: string, dir: string): boolean {
  return path.startsWith(dir.endsWith('/') ? dir : `${dir}/`);
}

function depth(path: string): number {
  return path.split('/').length;
}

function isDirectory(path: string): boolean {
  return statOrUndefined(path)?.isDirectory() ?? false;
}

function statOrUndefined(path: string) {
  try {
    return statSync(path);
  } catch {
    return undefined;
  }
}

function lstatOrUndefined(path: string) {
  try {
    return lstatSync(path);
  } catch {
    return undefined;
  }
}
