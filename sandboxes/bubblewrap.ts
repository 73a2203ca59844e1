import { spawnSync } from 'node:child_process';
import { stampedQuery } from '../pipeline/hooks.js';
import {
  chmodSync,
  existsSync,
  lchownSync,
  lstatSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, delimiter, dirname, join, posix } from 'node:path';
import { err, errorMessage, ok, type Result } from '../pipeline/result.js';
import type { EgressProxy } from './egress-proxy.js';
import { runProcess } from './exec-process.js';
import {
  forwarderScriptPath,
  type EgressMode,
  type ExecOptions,
  type Mount,
  type Sandbox,
  type SandboxBackend,
  type SandboxFailure,
  type SandboxReceipt,
  type SandboxSpec,
} from './sandbox.js';
import { seccompProgram, seccompSupported } from './seccomp.js';
/**
 * `bubblewrap`: every exec is a fresh `bwrap` in new pid, ipc, uts, cgroup, mount
 * and (unless egress is open) network namespaces.
 *
 * What is inside, and nothing else (never `--ro-bind / /`: that would expose the
 * store, hidden verifiers and other arms' files):
 * - the system read-only: /usr (and the /bin, /lib*, /sbin symlinks or dirs), a
 *   few /etc files, the node binary if it is outside /usr;
 * - fresh /proc (its /proc/sys read-only), /dev, /tmp, /run; HOME=/tmp/home, the
 *   sandbox's own 0700 directory (kept across its execs, as a container's is);
 * - the workspace read-write at /work, and the spec's mounts.
 *
 * Who the agent is on the host (the threat model: it is hostile):
 * - pairbench running as root: bwrap builds the sandbox as root WITHOUT a user
 *   namespace, then `setpriv` drops to an unprivileged host uid (SANDBOX_HOST_UID,
 *   no capabilities, an empty bounding set, no_new_privs) before the agent's
 *   command runs. A user namespace started by root would map the agent to host root
 *   (notes/sandboxes-measured.md: it wrote host sysctls and left setuid-root files).
 *   The workspace and writable mounts are handed to that uid.
 * - pairbench running as a user: `--unshare-user --uid 1000`, which maps to that user.
 * Either way a seccomp filter (seccomp.ts) refuses setuid/setgid bits and new user
 * namespaces, so nothing privileged is left behind, and bwrap's options travel on a
 * file descriptor (`--args`), so /proc/1/cmdline inside shows no host path.
 *
 * Egress: `none` = no network; `allowlist` = no network plus the egress proxy
 * (started on the host by create()) forwarded to 127.0.0.1:3128 inside;
 * `open` = the host network, recorded as not enforced.
 *
 * Resources are recorded in the receipt as given but NOT enforced: bubblewrap has
 * no cpu/memory limits. Use docker when limits must hold.
 */

const WORKDIR = '/work';
const HOME = '/tmp/home';
/** The uid inside when pairbench is not root (a user namespace maps it to that user). */
const USERNS_UID = 1000;

/**
 * The unprivileged host uid (and gid) the agent runs as when pairbench is root: no
 * account uses it, and it owns nothing outside the sandboxes' workspaces.
 * PAIRBENCH_SANDBOX_UID overrides it.
 */
export const SANDBOX_HOST_UID: Result<number, string> = parseUid(process.env['PAIRBENCH_SANDBOX_UID']);

function parseUid(value: string | undefined): Result<number, string> {
  const n = Number(value ?? 1_999_999_000);
  if (!Number.isInteger(n) || n <= 0 || n >= 4_294_967_295)
    return err(`PAIRBENCH_SANDBOX_UID=${value} is not an unprivileged uid: give an integer above 0 that no account uses`);
  return ok(n);
}

/** Whether the sandbox is built as root and then entered as SANDBOX_HOST_UID. */
const privileged = () => process.getuid?.() === 0;

/** Who processes are inside: the host uid when pairbench is root, else the user namespace's 1000. */
function insideUid(): number {
  return privileged() && SANDBOX_HOST_UID.ok ? SANDBOX_HOST_UID.value : USERNS_UID;
}

const PROXY_PORT = 3128;
/** Inside the sandbox: forwarder script and socket dirs. */
const RUN_DIR = '/run/pairbench';
const FORWARDER_INSIDE = `${RUN_DIR}/forwarder.mjs`;
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

/** The host tools a sandbox is made with: bwrap, and setpriv when pairbench is root. */
interface Tools {
  bwrap: string;
  setpriv: string | undefined;
}

/** Tools found per PATH value: looked up once, not at every sandbox. */
const toolsByPath = new Map<string, Result<Tools, string>>();

function findTools(pathVar: string): Result<Tools, string> {
  let found = toolsByPath.get(pathVar);
  if (!found || !found.ok) toolsByPath.set(pathVar, (found = lookUpTools(pathVar)));
  return found;
}

function lookUpTools(pathVar: string): Result<Tools, string> {
  const bwrap = findOnPath('bwrap', pathVar);
  if (!bwrap) return err(`bubblewrap (bwrap) is not on PATH; ${INSTALL_HINT}`);
  if (!privileged()) return ok({ bwrap, setpriv: undefined });
  if (!SANDBOX_HOST_UID.ok) return err(SANDBOX_HOST_UID.error);
  const setpriv = findOnPath('setpriv', pathVar);
  if (!setpriv)
    return err('setpriv is not on PATH: as root, pairbench drops the agent to an unprivileged uid with it; install util-linux (apt-get install util-linux)');
  return ok({ bwrap, setpriv });
}

/** Whether bwrap (and setpriv) are on `pathVar` and can build a sandbox here; if not, what to do about it. */
export async function checkBubblewrap(pathVar = process.env['PATH'] ?? DEFAULT_PATH): Promise<Result<void, string>> {
  const tools = findTools(pathVar);
  if (!tools.ok) return tools;
  if (!seccompSupported())
    return err(`no seccomp filter for this architecture (${process.arch}): bubblewrap sandboxes need x86_64 or aarch64; use the docker backend`);
  // The same namespaces, binds and privilege drop as a real sandbox, so a kernel or
  // container runtime that forbids them is found here and not in the middle of a run.
  const r = await runProbe(tools.value);
  if (r.exitCode === 0) return ok(undefined);
  return err(
    `bwrap is installed (${tools.value.bwrap}) but cannot create a sandbox here: ${r.stderr.trim() || `exit ${r.exitCode ?? r.signal}`}; ${namespaceFix()}`,
  );
}

/** The sysctls (under /proc/sys) that decide whether bwrap may make the namespaces a sandbox unshares. */
const NAMESPACE_SYSCTLS = [
  'kernel/unprivileged_userns_clone',
  'kernel/apparmor_restrict_unprivileged_userns',
  'user/max_user_namespaces',
  'user/max_mnt_namespaces',
  'user/max_pid_namespaces',
  'user/max_net_namespaces',
  'user/max_ipc_namespaces',
  'user/max_uts_namespaces',
  'user/max_cgroup_namespaces',
];

/** Reads a sysctl under /proc/sys (`kernel/foo`), or null where this kernel has none. */
function sysctl(path: string): string | null {
  try {
    return readFileSync(join('/proc/sys', path), 'utf8').trim();
  } catch {
    return null;
  }
}

/** What to do on this machine when bwrap cannot make its namespaces: the setting that blocks them, by name. */
export function namespaceFix(): string {
  if (sysctl('kernel/apparmor_restrict_unprivileged_userns') === '1')
    return (
      'AppArmor blocks unprivileged user namespaces here (kernel.apparmor_restrict_unprivileged_userns = 1, as on Ubuntu 24.04+ and ' +
      "GitHub's ubuntu-latest): run `sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0`, or use the docker backend"
    );
  if (sysctl('kernel/unprivileged_userns_clone') === '0')
    return 'unprivileged user namespaces are off (kernel.unprivileged_userns_clone = 0): run `sudo sysctl -w kernel.unprivileged_userns_clone=1`, or use the docker backend';
  if (sysctl('user/max_user_namespaces') === '0')
    return 'user namespaces are off (user.max_user_namespaces = 0): run `sudo sysctl -w user.max_user_namespaces=15000`, or use the docker backend';
  return 'bwrap needs unprivileged namespaces: inside a container, allow unshare and mount (e.g. docker run --privileged); or use the docker backend';
}

/**
 * Why bubblewrap cannot make a sandbox here and what to do (null when it can), synchronously:
 * `backend: auto` chooses with it while a key is computed. The probe's options go on the command
 * line and no seccomp program is given (spawnSync cannot feed extra descriptors); the
 * asynchronous check (checkBubblewrap) runs before any sandbox starts.
 */
export function bubblewrapProblemSync(pathVar = process.env['PATH'] ?? DEFAULT_PATH): { cause: string; fix: string } | null {
  const tools = findTools(pathVar);
  if (!tools.ok) {
    // findTools says what is missing, then (after '; ') what to do.
    const [cause, ...fix] = tools.error.split('; ');
    return { cause: cause!, fix: fix.join('; ') || tools.error };
  }
  if (!seccompSupported()) return { cause: `no seccomp filter for this architecture (${process.arch})`, fix: 'use the docker backend' };
  const args = [...namespaceArgs('none'), ...withParentDirs([...systemArgs(), ...scratchArgs()]), '--', ...dropArgv(tools.value), 'true'];
  // The probe's answer, for a memo of the plan (pipeline/memo/), is a function of the two binaries,
  // the kernel (its release) and its namespace settings; the uid is a host fact the memo records.
  const inputs = [
    tools.value.bwrap,
    ...(tools.value.setpriv ? [tools.value.setpriv] : []),
    ...['kernel/osrelease', ...NAMESPACE_SYSCTLS].map((p) => join('/proc/sys', p)),
  ];
  const r = stampedQuery('the bubblewrap probe', inputs, () =>
    spawnSync(tools.value.bwrap, args, {
      cwd: tmpdir(),
      env: { PATH: DEFAULT_PATH },
      encoding: 'utf8',
      stdio: ['ignore', 'ignore', 'pipe'],
      timeout: 10_000,
    }),
  );
  if (r.status === 0) return null;
  return {
    cause: `bwrap (${tools.value.bwrap}) cannot create a sandbox here: ${String(r.stderr ?? '').trim() || `exit ${r.status ?? r.signal}`}`,
    fix: namespaceFix(),
  };
}

function runProbe(tools: Tools) {
  const { argv, options } = probeInvocation(tools);
  return runProcess(argv, { cwd: tmpdir(), env: { PATH: DEFAULT_PATH }, timeoutMs: 10_000, inputFds: [options, seccompProgram()] });
}

/** The availability probe: the same namespaces, binds and drop as a real sandbox, running `true`. */
function probeInvocation(tools: Tools): { argv: string[]; options: Buffer } {
  const options = nulArgs([...namespaceArgs('none'), ...withParentDirs([...systemArgs(), ...scratchArgs()]), '--seccomp', '4']);
  return { argv: [tools.bwrap, '--args', '3', '--', ...dropArgv(tools), 'true'], options };
}

async function create(spec: SandboxSpec): Promise<Result<Sandbox, SandboxFailure>> {
  const available = await bubblewrapBackend.available();
  const tools = findTools(process.env['PATH'] ?? DEFAULT_PATH);
  if (!available.ok || !tools.ok) return err({ reason: 'unavailable', message: !available.ok ? available.error : tools.ok ? '' : tools.error });
  const invalid = checkSpec(spec);
  if (invalid) return err({ reason: 'start-failed', message: `bubblewrap: ${invalid}` });

  // A private host dir per sandbox: its HOME and the proxy's socket.
  const privateDir = await mkdtemp(join(tmpdir(), 'pairbench-bwrap-'));
  let proxy: EgressProxy | undefined;
  try {
    const identity = identityDir();
    // HOME is made here, owned by the sandbox user: no `mkdir` process in every exec (it was ~4 ms of each).
    await mkdir(join(privateDir, 'home'), { mode: 0o700 });
    if (privileged()) lchownSync(join(privateDir, 'home'), insideUid(), insideUid());
    const forwards = [...(spec.forwards ?? [])];
    if (spec.egress.mode === 'allowlist') {
      await mkdir(join(privateDir, 'egress'));
      proxy = await (await import('./egress-proxy.js')).startEgressProxy({ socket: join(privateDir, 'egress', 'proxy.sock'), allow: spec.egress.allow ?? [] });
      forwards.push({ socket: proxy.socket, port: PROXY_PORT });
    }
    const forwarder = forwards.length > 0 ? forwarderScriptPath() : undefined;
    if (forwarder && !existsSync(forwarder)) throw new Error(`the port forwarder ${forwarder} is missing (is the package complete?)`);
    if (privileged()) handOver(spec, forwards, insideUid());
    const layout: Layout = { spec, privateDir, identity, forwards, forwarder };
    return ok(openSandbox(tools.value, layout, proxy));
  } catch (e) {
    await proxy?.close();
    await rm(privateDir, { recursive: true, force: true });
    return err({ reason: 'start-failed', message: `bubblewrap: cannot prepare the sandbox: ${errorMessage(e)}` });
  }
}

/**
 * As root, the agent is an unprivileged uid: it gets the workspace and the writable
 * mounts (chown, never following a symlink), and can reach the forwarded sockets.
 * Read-only mounts only need to be readable, which the caller's files are (0644/0755).
 */
function handOver(spec: SandboxSpec, forwards: { socket: string }[], uid: number): void {
  for (const dir of [spec.workspace, ...(spec.mounts ?? []).filter((m) => !m.readOnly).map((m) => m.host)]) {
    walkNoFollow(dir, (p) => lchownSync(p, uid, uid));
  }
  for (const f of forwards) {
    chmodSync(dirname(f.socket), 0o711);
    // A socket made later is made 0666 by its server (the gateway and the proxy are).
    if (existsSync(f.socket)) chmodSync(f.socket, 0o666);
  }
}

function walkNoFollow(p: string, visit: (p: string) => void): void {
  const st = lstatSync(p);
  visit(p);
  if (st.isDirectory()) for (const name of readdirSync(p)) walkNoFollow(join(p, name), visit);
}

interface Layout {
  spec: SandboxSpec;
  privateDir: string;
  /** The process's synthetic passwd and group (identityDir). */
  identity: string;
  /** The spec's forwards plus the egress proxy's. */
  forwards: { socket: string; port: number }[];
  /** Host path of forwarder.mjs, when there is anything to forward. */
  forwarder: string | undefined;
}

function openSandbox(tools: Tools, layout: Layout, proxy: EgressProxy | undefined): Sandbox {
  const { spec } = layout;
  const system = spec.system ? declaredSystemArgs(spec.system) : systemArgs();
  // The drop tool's binds go on the fresh /run that scratchArgs makes.
  const tool = spec.system ? dropToolArgs(tools) : [];
  const options = [...namespaceArgs(spec.egress.mode), ...withParentDirs([...system, ...scratchArgs(), ...tool, ...sandboxArgs(layout)]), '--seccomp', '4'];
  const drop = spec.system ? toolDropArgv(tools) : dropArgv(tools);
  const wrapper = sandboxWrapper(layout.forwards);
  const env = sandboxEnv(spec);
  const seccomp = seccompProgram();
  let closed = false;
  let finalLog: SandboxReceipt['egress_log'] | undefined;
  let closing: Promise<void> | undefined;

  return {
    workdir: WORKDIR,
    async exec(argv: string[], o: ExecOptions = {}) {
      if (closed) throw new Error('bubblewrap sandbox: exec after close()');
      if (argv.length === 0) throw new Error('bubblewrap sandbox: exec needs a command');
      const cwd = posix.resolve(WORKDIR, o.cwd ?? WORKDIR);
      // Every process of this exec lives in the new pid namespace: when the command exits,
      // bwrap's init exits and the kernel kills the rest before this promise resolves.
      return runProcess([tools.bwrap, '--args', '3', '--', ...drop, ...wrapper, ...argv], {
        cwd: spec.workspace,
        env: { ...env, ...o.env },
        inputFds: [nulArgs([...options, '--chdir', cwd]), seccomp],
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

/**
 * As root: `setpriv` turns bwrap's child into the unprivileged sandbox uid before
 * anything of the agent runs (no capabilities, an empty bounding set, no_new_privs).
 * As a user: nothing, the user namespace already is that user.
 */
function dropArgv(tools: Tools): string[] {
  if (!tools.setpriv) return [];
  const uid = String(insideUid());
  return [
    tools.setpriv,
    `--reuid=${uid}`,
    `--regid=${uid}`,
    '--clear-groups',
    '--inh-caps=-all',
    '--ambient-caps=-all',
    '--bounding-set=-all',
    '--no-new-privs',
    '--',
  ];
}

/** Namespaces: the part that makes bwrap a sandbox. A user namespace only when pairbench is not root. */
export function namespaceArgs(mode: EgressMode): string[] {
  return [
    ...(privileged() ? [] : ['--unshare-user', '--uid', String(USERNS_UID), '--gid', String(USERNS_UID), '--cap-drop', 'ALL']),
    '--unshare-pid',
    '--unshare-ipc',
    '--unshare-uts',
    '--unshare-cgroup-try',
    ...(mode === 'open' ? [] : ['--unshare-net']),
    '--hostname',
    'pairbench',
    '--die-with-parent',
    '--new-session',
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
    ...mergedUsrLinks(),
    ...SYSTEM_ROOTS.flatMap((p) => (lstatOrUndefined(p)?.isDirectory() ? ['--ro-bind', p, p] : [])),
    ...ETC_FILES.filter((p) => existsSync(p)).flatMap((p) => ['--ro-bind', p, p]),
    ...nodeInstallArgs(),
  ]);
}

/** The top-level system paths that are links (merged /usr: /bin -> usr/bin), recreated as links: no content. */
function mergedUsrLinks(): string[] {
  return SYSTEM_ROOTS.flatMap((p) => (lstatOrUndefined(p)?.isSymbolicLink() ? ['--symlink', readlinkSync(p), p] : []));
}

/** The dynamic loader among a binary's shared objects (ld-linux-x86-64.so.2, ld-linux-aarch64.so.1). */
const isLoader = (path: string) => /\/ld-[^/]*\.so/.test(path);

/** Where the privilege-drop tool and its libraries are bound when the host paths are declared. */
const TOOL_DIR = `${RUN_DIR}/tool`;
const LOADER = 'ld.so';

let dropToolCache: string[] | null | undefined;

/**
 * The files the privilege drop runs from (setpriv, its shared libraries, the dynamic loader):
 * bound under TOOL_DIR when a step declares its host paths, so that nothing of the host's
 * system directories is there but what it declared. Their digests are in the key beside the
 * declared paths' (steps/host-paths.ts). Empty when pairbench is not root (no drop inside).
 */
export function privilegeDropFiles(): string[] {
  if (dropToolCache !== undefined) return dropToolCache ?? [];
  const tools = findTools(process.env['PATH'] ?? DEFAULT_PATH);
  if (!tools.ok || !tools.value.setpriv) return (dropToolCache = []);
  const ldd = spawnSync('ldd', [tools.value.setpriv], { encoding: 'utf8', env: { PATH: DEFAULT_PATH } });
  // "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)" and "/lib64/ld-linux-x86-64.so.2 (0x...)".
  const libs = String(ldd.stdout ?? '')
    .split('\n')
    .map((l) => /(?:=>\s*)?(\/\S+)\s+\(0x[0-9a-f]+\)/.exec(l)?.[1])
    .filter((p): p is string => p !== undefined);
  const loader = libs.find(isLoader);
  if (ldd.status !== 0 || !loader)
    throw new Error(`bubblewrap: cannot list what ${tools.value.setpriv} loads (ldd: ${String(ldd.stderr ?? '').trim() || `exit ${ldd.status}`})`);
  return (dropToolCache = [tools.value.setpriv, ...libs]);
}

/** The declared host paths, read-only at their own paths, and nothing else of the host's system (merged-/usr links are links only). */
function declaredSystemArgs(paths: readonly string[]): string[] {
  // At its parent's real location (/lib/x/libc.so.6 lands in /usr/lib/x when /lib is a link), under its own name.
  const binds = paths
    .map((p) => join(realpathSync(dirname(p)), basename(p)))
    .sort((a, b) => depth(a) - depth(b))
    .flatMap((p) => ['--ro-bind', p, p]);
  return [...mergedUsrLinks(), ...binds];
}

/** The privilege-drop tool's files, under TOOL_DIR (none when pairbench is not root). */
function dropToolArgs(tools: Tools): string[] {
  if (!tools.setpriv) return [];
  return privilegeDropFiles().flatMap((f, i) => ['--ro-bind', f, `${TOOL_DIR}/${i === 0 ? 'setpriv' : isLoader(f) ? LOADER : basename(f)}`]);
}

/** The privilege drop through the bound tool: its own loader and libraries, none of the host's. */
function toolDropArgv(tools: Tools): string[] {
  const argv = dropArgv(tools);
  return argv.length ? [`${TOOL_DIR}/${LOADER}`, '--library-path', TOOL_DIR, `${TOOL_DIR}/setpriv`, ...argv.slice(1)] : [];
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

/**
 * Fresh kernel filesystems and scratch space. /proc/sys is bound read-only over the
 * fresh /proc (bwrap covers it only when it can write there itself); /tmp is open
 * to the sandbox user; HOME is bound over /tmp/home (see sandboxArgs).
 */
function scratchArgs(): string[] {
  return ['--proc', '/proc', '--ro-bind', '/proc/sys', '/proc/sys', '--dev', '/dev', '--perms', '1777', '--tmpfs', '/tmp', '--tmpfs', '/run'];
}

/** What belongs to this sandbox: identity files, workspace, forwarded sockets, mounts. */
function sandboxArgs(layout: Layout): string[] {
  const { spec } = layout;
  const args = [
    '--ro-bind',
    join(layout.identity, 'passwd'),
    '/etc/passwd',
    '--ro-bind',
    join(layout.identity, 'group'),
    '/etc/group',
    '--bind',
    join(layout.privateDir, 'home'),
    HOME,
    '--bind',
    spec.workspace,
    WORKDIR,
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
 * When something is forwarded: `sh -c SCRIPT pairbench-sandbox ARGV...`, run as the
 * sandbox user: start the forwarder in the background and block on a fifo until it
 * prints `ready` (EOF means it died), then exec ARGV. The forwarder dies with the
 * sandbox: bwrap's pid namespace ends when ARGV exits. Otherwise ARGV runs directly.
 */
function sandboxWrapper(forwards: { socket: string; port: number }[]): string[] {
  if (forwards.length === 0) return [];
  const pairs = forwards.map((f, i) => shellQuote(`${f.port}=${RUN_DIR}/fwd${i}/${basename(f.socket)}`)).join(' ');
  const lines = [
    'pairbench_fifo=$(mktemp -u /tmp/.pairbench-ready.XXXXXX) && mkfifo -m 600 "$pairbench_fifo" || exit ' + FORWARDER_FAILED,
    `${shellQuote(realpathSync(process.execPath))} ${FORWARDER_INSIDE} ${pairs} > "$pairbench_fifo" &`,
    'read -r pairbench_ready < "$pairbench_fifo"; rm -f "$pairbench_fifo"',
    `if [ "$pairbench_ready" != ready ]; then echo 'pairbench: the port forwarder inside the sandbox did not start (see above)' >&2; exit ${FORWARDER_FAILED}; fi`,
    'unset pairbench_ready pairbench_fifo',
  ];
  lines.push('exec "$@"');
  return ['/bin/sh', '-c', lines.join('\n'), 'pairbench-sandbox'];
}

/** How many values each bwrap option used here takes. */
const ARITY: Record<string, number> = {
  '--ro-bind': 2,
  '--bind': 2,
  '--symlink': 2,
  '--proc': 1,
  '--dev': 1,
  '--tmpfs': 1,
  '--dir': 1,
  '--perms': 1,
  '--remount-ro': 1,
};
/** Options that make a directory at their destination. */
const MAKES_DIR = new Set(['--proc', '--dev', '--tmpfs', '--dir']);

/**
 * Mount options with every missing parent directory made first, mode 0755. bwrap
 * makes missing parents itself, but for a file bind it makes them 0700 and owned by
 * root, which the unprivileged sandbox user then cannot enter (/etc/ssl/openssl.cnf).
 */
export function withParentDirs(args: string[]): string[] {
  const made = new Set<string>(['/']);
  /** Directories bound from the host: what is below them comes from there. */
  const bound: string[] = [];
  const out: string[] = [];
  for (let i = 0; i < args.length;) {
    const op = args[i]!;
    const n = ARITY[op];
    if (n === undefined) throw new Error(`bubblewrap: withParentDirs does not know option ${op}`);
    const values = args.slice(i + 1, i + 1 + n);
    i += 1 + n;
    if (op !== '--perms' && op !== '--remount-ro') {
      const dest = values[n - 1]!;
      const parts = posix.dirname(dest).split('/').filter(Boolean);
      for (let k = 1; k <= parts.length; k++) {
        const p = `/${parts.slice(0, k).join('/')}`;
        if (made.has(p) || bound.some((d) => p === d || isUnder(p, d))) continue;
        out.push('--perms', '0755', '--dir', p);
        made.add(p);
      }
      if ((op === '--bind' || op === '--ro-bind') && isDirectory(values[0]!)) bound.push(dest);
      if (MAKES_DIR.has(op)) made.add(dest);
    }
    out.push(op, ...values);
  }
  return out;
}

/** NUL-separated arguments for `bwrap --args FD`. */
function nulArgs(args: string[]): Buffer {
  for (const a of args) if (a.includes('\0')) throw new Error(`bubblewrap: an argument contains a NUL byte: ${JSON.stringify(a)}`);
  return Buffer.from(args.map((a) => `${a}\0`).join(''));
}

/** Environment inside: nothing of the host's, only defaults, the proxy and the spec. */
function sandboxEnv(spec: SandboxSpec): Record<string, string> {
  const proxy = `http://127.0.0.1:${PROXY_PORT}`;
  const proxyEnv: Record<string, string> =
    spec.egress.mode === 'allowlist'
      ? {
          // curl ignores upper-case HTTP_PROXY for http:// URLs, so set both cases.
          HTTP_PROXY: proxy,
          HTTPS_PROXY: proxy,
          http_proxy: proxy,
          https_proxy: proxy,
          NO_PROXY: '127.0.0.1,localhost',
          no_proxy: '127.0.0.1,localhost',
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
  for (const p of spec.system ?? []) {
    if (!posix.isAbsolute(p) || posix.normalize(p) !== p || p === '/') return `host path ${p}: give a normalized absolute path other than /`;
    if (!existsSync(p)) return `host path ${p} does not exist on this host`;
    const reserved = ['/proc', '/dev', '/tmp', '/run', WORKDIR, '/etc/passwd', '/etc/group'].find((r) => p === r || isUnder(p, r) || isUnder(r, p));
    if (reserved) return `host path ${p} overlaps ${reserved}, which the sandbox makes itself`;
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
  if (!posix.isAbsolute(m.target) || posix.normalize(m.target) !== m.target || m.target === '/')
    return 'the target must be a normalized absolute path other than /';
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

let identity: string | undefined;

/**
 * The synthetic passwd and group every sandbox of this process binds read-only, so tools calling
 * getpwuid (node's os.userInfo, git, ssh) work: they name only the sandbox uid, fixed for the
 * process, so they are written once (not two files made and removed per sandbox: on a disk mounted
 * with discard each costs ~0.5 ms) and removed when the process exits. Made again if something
 * removed them meanwhile (a tmp cleaner). Synchronous: two sandboxes started together share one.
 */
function identityDir(): string {
  if (identity && existsSync(join(identity, 'passwd')) && existsSync(join(identity, 'group'))) return identity;
  const dir = mkdtempSync(join(tmpdir(), 'pairbench-bwrap-identity-'));
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  const uid = insideUid();
  writeFileSync(
    join(dir, 'passwd'),
    `root:x:0:0:root:/root:/bin/sh\npairbench:x:${uid}:${uid}:pairbench sandbox:${HOME}:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n`,
  );
  writeFileSync(join(dir, 'group'), `root:x:0:\npairbench:x:${uid}:\nnogroup:x:65534:\n`);
  return (identity = dir);
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
