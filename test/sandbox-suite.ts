import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, posix } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { EgressMode, ExecResult, Sandbox, SandboxBackend, SandboxSpec } from '../sandboxes/sandbox.js';

/**
 * The one sandbox test suite, registered once per backend (local, bubblewrap,
 * docker). An "agent" is a shell script put into the workspace and run with
 * exec; it tries everything a cheating or careless agent might, and the suite
 * asserts that every attempt fails and no secret comes back.
 *
 * Needs inside the sandbox: /bin/sh, cat, ls, and busybox (for wget and nc).
 */
export interface SandboxSuiteOptions {
  /** Why the backend cannot run here. Every test is then skipped, with the reason in the suite's name. */
  skip?: string;
  /** Merged into every spec the suite creates (docker: `image`, `labels`); a function runs once, before the tests. */
  baseSpec?: Partial<SandboxSpec> | (() => Promise<Partial<SandboxSpec>>);
  /** Command that provides the `wget` and `nc` applets inside the sandbox; default `busybox`. */
  busybox?: string;
  /**
   * Whether the backend refuses setuid/setgid bits outright (bubblewrap's seccomp
   * filter). Where it does not (docker), the suite still requires that no such file is
   * owned by root and that the host path is private.
   */
  refusesPrivilegeBits?: boolean;
  /** Puts a file into a sandbox's workspace. Default: write it into spec.workspace on the host. */
  writeWorkspaceFile?: (spec: SandboxSpec, relativePath: string, content: string) => Promise<void>;
}

/** A port inside the sandbox for the forwarded "gateway"; unlikely to clash with anything on the host. */
const GATEWAY_PORT = 18123;

export function sandboxSuite(backend: SandboxBackend, options: SandboxSuiteOptions = {}): void {
  const isolating = backend.isolation !== 'none';
  const title = `sandbox backend "${backend.name}"` + (options.skip ? ` (SKIPPED: ${options.skip})` : '');
  const busybox = options.busybox ?? 'busybox';
  const writeWorkspaceFile = options.writeWorkspaceFile ?? hostWrite;

  describe.skipIf(options.skip !== undefined)(title, () => {
    let fx: Fixture;
    let baseSpec: Partial<SandboxSpec> = {};
    const open: Sandbox[] = [];

    beforeAll(async () => {
      baseSpec = typeof options.baseSpec === 'function' ? await options.baseSpec() : (options.baseSpec ?? {});
      fx = await makeFixture();
      process.env[fx.hostEnvName] = fx.secrets.hostEnv;
    });
    afterAll(async () => {
      delete process.env[fx.hostEnvName];
      await fx.close();
    });
    afterEach(async () => {
      for (const s of open.splice(0)) await s.close();
    });

    /** Creates a sandbox over a fresh workspace and closes it after the test. */
    async function start(egress: SandboxSpec['egress'], extra: Partial<SandboxSpec> = {}): Promise<{ sandbox: Sandbox; spec: SandboxSpec }> {
      const spec: SandboxSpec = { ...baseSpec, workspace: fx.newWorkspace(), egress, ...extra };
      const created = await backend.create(spec);
      if (!created.ok) throw new Error(`create failed: ${created.error.reason}: ${created.error.message}`);
      open.push(created.value);
      return { sandbox: created.value, spec };
    }

    /** Writes `script` into the workspace and runs it with /bin/sh inside. */
    async function runAgent(sandbox: Sandbox, spec: SandboxSpec, script: string, exec: Parameters<Sandbox['exec']>[1] = {}): Promise<ExecResult> {
      await writeWorkspaceFile(spec, 'agent.sh', script);
      return sandbox.exec(['/bin/sh', posix.join(sandbox.workdir, 'agent.sh')], { timeoutMs: 30_000, ...exec });
    }

    const basicEgress: EgressMode = backend.canEnforce('none') ? 'none' : 'open';

    describe('processes and the workspace', () => {
      it('the workspace is writable, and changes go both ways between host and sandbox', async () => {
        const { sandbox, spec } = await start({ mode: basicEgress });
        writeFileSync(join(spec.workspace, 'input.txt'), 'from the host\n');
        const r = await runAgent(sandbox, spec, 'cat input.txt > copy.txt && mkdir -p sub && echo made > sub/made.txt && pwd');
        expect(r.exitCode, r.stderr).toBe(0);
        expect(r.stdout.trim()).toBe(sandbox.workdir);
        expect(readFileSync(join(spec.workspace, 'copy.txt'), 'utf8')).toBe('from the host\n');
        expect(readFileSync(join(spec.workspace, 'sub', 'made.txt'), 'utf8')).toBe('made\n');
      });

      it('reports exit codes, output streams and stdin', async () => {
        const { sandbox } = await start({ mode: basicEgress });
        const r = await sandbox.exec(['/bin/sh', '-c', 'read line; echo "out:$line"; echo err >&2; exit 7'], { stdin: 'hello\n' });
        expect(r).toMatchObject({ exitCode: 7, signal: null, timedOut: false });
        expect([r.stdout.trim(), r.stderr.trim()]).toEqual(['out:hello', 'err']);
      });

      it('runs in the requested working directory', async () => {
        const { sandbox, spec } = await start({ mode: basicEgress });
        mkdirSync(join(spec.workspace, 'pkg'));
        const r = await sandbox.exec(['/bin/sh', '-c', 'pwd'], { cwd: posix.join(sandbox.workdir, 'pkg') });
        expect(r.stdout.trim()).toBe(posix.join(sandbox.workdir, 'pkg'));
      });

      it("passes the spec's and the exec's env, and nothing of the host's", async () => {
        const { sandbox } = await start({ mode: basicEgress }, { env: { SPEC_VAR: 'from-spec', SHARED: 'spec' } });
        const r = await sandbox.exec(['/bin/sh', '-c', `echo "$SPEC_VAR $EXEC_VAR $SHARED \${${fx.hostEnvName}-unset}"`], {
          env: { EXEC_VAR: 'from-exec', SHARED: 'exec' },
        });
        expect(r.stdout.trim()).toBe('from-spec from-exec exec unset');
        const all = await sandbox.exec(['/bin/sh', '-c', 'env']);
        expect(all.stdout).not.toContain(fx.secrets.hostEnv);
      });

      it('a timeout kills the process and everything it started', async () => {
        const { sandbox, spec } = await start({ mode: basicEgress });
        const r = await runAgent(sandbox, spec, '(sleep 2; echo late > late.txt) &\nsleep 30\n', { timeoutMs: 500 });
        expect(r.timedOut).toBe(true);
        expect(r.exitCode).not.toBe(0);
        expect(r.durationMs).toBeLessThan(30_000); // not the 30 s it would have slept
        await new Promise((resolve) => setTimeout(resolve, 3000));
        expect(existsSync(join(spec.workspace, 'late.txt'))).toBe(false);
      });

      it('close() is idempotent', async () => {
        const { sandbox } = await start({ mode: basicEgress });
        await sandbox.close();
        await sandbox.close();
      });
    });

    if (!isolating) {
      describe('no isolation, and it says so', () => {
        it('its receipt says isolation none and egress not enforced', async () => {
          const { sandbox } = await start({ mode: 'open' });
          expect(sandbox.receipt()).toMatchObject({ backend: backend.name, isolation: 'none', egress_mode: 'open', egress_enforced: false });
        });

        it.each(['none', 'allowlist'] as const)('refuses egress %s instead of pretending to enforce it', async (mode) => {
          expect(backend.canEnforce(mode)).toBe(false);
          const r = await backend.create({ ...baseSpec, workspace: fx.newWorkspace(), egress: { mode, allow: ['example.com'] } });
          expect(r.ok).toBe(false);
          if (!r.ok) expect(r.error.reason).toBe('egress-unenforceable');
        });
      });
      return;
    }

    for (const mode of ['none', 'allowlist'] as const) {
      describe(`an agent trying to cheat or escape (egress ${mode})`, () => {
        it('cannot read hidden task files, the store or another arm, reach the network directly, or break out', async () => {
          const allow = [`127.0.0.1:${fx.hostPort}`];
          const { sandbox, spec } = await start({ mode, allow });
          const r = await runAgent(sandbox, spec, escapeScript(busybox), { env: fx.attemptEnv(spec.workspace) });
          const attempts = parseAttempts(r.stdout);
          expect(Object.keys(attempts).sort(), r.stdout + r.stderr).toEqual([...ESCAPE_ATTEMPTS].sort());
          for (const [name, code] of Object.entries(attempts)) expect(code, `${name} succeeded:\n${r.stdout}${r.stderr}`).not.toBe(0);
          for (const secret of Object.values(fx.secrets)) expect(r.stdout + r.stderr).not.toContain(secret);
          // The remount attempt was followed by a write to /: it must not have landed on the host.
          expect(existsSync(`/${fx.escapeMarker}`)).toBe(false);
          expect(sandbox.receipt()).toMatchObject({ backend: backend.name, isolation: backend.isolation, egress_mode: mode, egress_enforced: true });
        });
      });
    }

    describe('an agent attacking the host (the attack is performed; the test fails if it succeeds)', () => {
      it('cannot write a host sysctl or open core_pattern for writing', async () => {
        const sysctl = '/proc/sys/kernel/printk_ratelimit_burst';
        const hostValue = readFileSync(sysctl, 'utf8').trim();
        const { sandbox, spec } = await start({ mode: basicEgress });
        // Writes only the value already there, and opens core_pattern without writing to it.
        const script = `echo ${hostValue} > ${sysctl}; echo "ATTEMPT sysctl exit=$?"; ( : >> /proc/sys/kernel/core_pattern ); echo "ATTEMPT core_pattern exit=$?"`;
        try {
          const r = await runAgent(sandbox, spec, script);
          const attempts = parseAttempts(r.stdout);
          expect(Object.keys(attempts).sort(), r.stdout + r.stderr).toEqual(['core_pattern', 'sysctl']);
          expect(attempts['sysctl'], r.stderr).not.toBe(0);
          expect(attempts['core_pattern'], r.stderr).not.toBe(0);
        } finally {
          if (readFileSync(sysctl, 'utf8').trim() !== hostValue) writeFileSync(sysctl, hostValue);
        }
        expect(readFileSync(sysctl, 'utf8').trim()).toBe(hostValue);
      });

      it('leaves no setuid or setgid file on the host, while it runs or after', async () => {
        const { sandbox, spec } = await start({ mode: basicEgress });
        const script = `cp "$(command -v ${busybox} || command -v sh)" ./suid; chmod 4755 ./suid; echo "suid exit=$?"
cp ./suid ./sgid 2>/dev/null; chmod 2755 ./sgid; echo "sgid exit=$?"
mkdir d; chmod 2775 d; echo "dir exit=$?"
touch started; sleep 3`;
        const running = runAgent(sandbox, spec, script);
        const started = join(spec.workspace, 'started');
        for (let i = 0; i < 100 && !existsSync(started); i++) await new Promise((r) => setTimeout(r, 100));
        expect(existsSync(started)).toBe(true);
        const during = privilegeBits(spec.workspace);
        const r = await running;
        const after = privilegeBits(spec.workspace);
        for (const found of [during, after]) {
          if (options.refusesPrivilegeBits) expect(found, r.stdout + r.stderr).toEqual([]);
          // Never owned by root, whatever the backend: a setuid file of the agent's uid gives nobody more than that uid.
          for (const f of found) expect(f.uid, `${f.path} is setuid/setgid root`).not.toBe(0);
        }
      });

      it("shows no host path in pid 1's command line", async () => {
        const { sandbox, spec } = await start({ mode: basicEgress });
        const r = await sandbox.exec(['/bin/sh', '-c', "tr '\\0' ' ' < /proc/1/cmdline"]);
        expect(r.exitCode, r.stderr).toBe(0);
        expect(r.stdout).not.toContain(spec.workspace);
        expect(r.stdout).not.toContain(tmpdir());
      });
    });

    describe('egress allowlist through the proxy', () => {
      it('an allowed host answers; a host not on the list gets 403 (http and CONNECT), and every attempt is logged', async () => {
        const allowed = `127.0.0.1:${fx.hostPort}`;
        const { sandbox, spec } = await start({ mode: 'allowlist', allow: [allowed] });
        // wget uses $http_proxy; NO_PROXY would otherwise send 127.0.0.1 around the proxy.
        const r = await runAgent(sandbox, spec, proxyScript(busybox, allowed), { env: { NO_PROXY: '', no_proxy: '' } });
        expect(r.stdout, r.stderr).toContain(`ALLOWED_BODY ${fx.secrets.hostServer}`);
        expect(r.stdout + r.stderr).toMatch(/BLOCKED_HTTP[\s\S]*403/);
        expect(r.stdout).toMatch(/BLOCKED_CONNECT HTTP\/1\.1 403/);
        const log = sandbox.receipt().egress_log;
        expect(log).toContainEqual(expect.objectContaining({ method: 'GET', host: '127.0.0.1', port: fx.hostPort, decision: 'allowed' }));
        expect(log).toContainEqual(expect.objectContaining({ method: 'GET', host: 'not-allowed.example', port: 80, decision: 'blocked' }));
        expect(log).toContainEqual(expect.objectContaining({ method: 'CONNECT', host: 'not-allowed.example', port: 443, decision: 'blocked' }));
        for (const e of log) expect(Number.isNaN(Date.parse(e.at))).toBe(false);
        await sandbox.close();
        expect(sandbox.receipt().egress_log).toEqual(log); // the log survives close()
      });
    });

    describe('forwards', () => {
      it('a host unix socket (the model gateway) answers at 127.0.0.1:port inside a network-less sandbox', async () => {
        const { sandbox } = await start({ mode: 'none' }, { forwards: [{ socket: fx.gatewaySocket, port: GATEWAY_PORT }] });
        const r = await sandbox.exec([busybox, 'wget', '-q', '-Y', 'off', '-O', '-', `http://127.0.0.1:${GATEWAY_PORT}/v1/messages`]);
        expect(r.stdout, r.stderr).toBe(`${fx.secrets.gateway} /v1/messages`);
      });
    });
  });
}

/** Names of the attempts escapeScript makes; the test checks each one ran and failed. */
const ESCAPE_ATTEMPTS = [
  'read-verifier',
  'read-solution',
  'read-store',
  'list-store',
  'read-store-relative',
  'read-other-arm',
  'read-verifier-via-proc1-root',
  'direct-tcp',
  'direct-http',
  'umount-proc',
  'nsenter-pid1-net',
  'nsenter-net-path',
  'remount-root-rw',
];

/**
 * The cheating agent. Paths and ports come in as env (see Fixture.attemptEnv);
 * each attempt prints `ATTEMPT <name> exit=<code>` after its own output.
 * Tools missing from the image fall back to busybox applets, so an attempt never
 * "fails" merely because its command does not exist.
 */
function escapeScript(busybox: string): string {
  return `
bb=${busybox}
tool() { if command -v "$1" >/dev/null 2>&1; then echo "$1"; else echo "$bb $1"; fi; }
attempt() { name=$1; shift; "$@" 2>&1; echo "ATTEMPT $name exit=$?"; }
attempt read-verifier cat "$HIDDEN_VERIFIER"
attempt read-solution cat "$HIDDEN_SOLUTION"
attempt read-store cat "$STORE_FILE"
attempt list-store ls -la "$STORE_DIR"
attempt read-store-relative cat "$STORE_FILE_RELATIVE"
attempt read-other-arm cat "$OTHER_ARM_FILE"
attempt read-verifier-via-proc1-root cat "/proc/1/root$HIDDEN_VERIFIER"
attempt direct-tcp sh -c 'printf "GET / HTTP/1.0\\r\\n\\r\\n" | $0 nc -w 2 127.0.0.1 "$HOST_PORT" | grep -q .' "$bb"
attempt direct-http $bb wget -q -Y off -O - "http://127.0.0.1:$HOST_PORT/"
attempt umount-proc $(tool umount) /proc
attempt nsenter-pid1-net $(tool nsenter) -t 1 -n true
attempt nsenter-net-path $(tool nsenter) --net=/proc/1/ns/net true
attempt remount-root-rw sh -c "$(tool mount) -o remount,rw / && touch /$ESCAPE_MARKER"
`;
}

/** Through the proxy: an allowed GET, a blocked GET, and a blocked CONNECT spoken by hand to $http_proxy. */
function proxyScript(busybox: string, allowed: string): string {
  return `
bb=${busybox}
echo "ALLOWED_BODY $($bb wget -q -O - "http://${allowed}/" 2>&1)"
echo "BLOCKED_HTTP $($bb wget -O - http://not-allowed.example/ 2>&1)"
hp=\${http_proxy#http://}; hp=\${hp%%/*}
printf 'CONNECT not-allowed.example:443 HTTP/1.1\\r\\nHost: not-allowed.example:443\\r\\n\\r\\n' | $bb nc -w 5 "\${hp%:*}" "\${hp##*:}" > connect.out 2>&1
echo "BLOCKED_CONNECT $(head -n 1 connect.out)"
`;
}

/** Files under root with a setuid or setgid bit, and their owner. */
function privilegeBits(root: string): { path: string; uid: number }[] {
  const out: { path: string; uid: number }[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const p = join(dir, name);
      const st = lstatSync(p);
      if (st.mode & 0o6000) out.push({ path: p, uid: st.uid });
      if (st.isDirectory()) walk(p);
    }
  };
  walk(root);
  return out;
}

function parseAttempts(stdout: string): Record<string, number> {
  const attempts: Record<string, number> = {};
  for (const m of stdout.matchAll(/^ATTEMPT (\S+) exit=(\d+)$/gm)) attempts[m[1]!] = Number(m[2]);
  return attempts;
}

interface Fixture {
  secrets: { verifier: string; solution: string; store: string; otherArm: string; hostServer: string; gateway: string; hostEnv: string };
  hostEnvName: string;
  /** Port of a plain HTTP server on the host's 127.0.0.1 (the "direct internet" stand-in). */
  hostPort: number;
  /** A unix socket whose HTTP server answers `<gateway secret> <path>`. */
  gatewaySocket: string;
  /** A file name the remount attempt tries to create at the root. */
  escapeMarker: string;
  newWorkspace(): string;
  attemptEnv(workspace: string): Record<string, string>;
  close(): Promise<void>;
}

/**
 * Host side of the suite, laid out like a real run so that relative paths from a
 * workspace lead somewhere interesting:
 *   ROOT/task/tests/verify.sh, ROOT/task/solution/solve.sh   hidden task files
 *   ROOT/.pairbench/objects/secret                         the store
 *   ROOT/arms/treatment/workspace/notes.txt                another arm
 *   ROOT/arms/control-N/workspace                          the sandbox's workspace
 */
async function makeFixture(): Promise<Fixture> {
  const token = (what: string) => `${what}-${randomBytes(8).toString('hex')}`;
  const secrets = {
    verifier: token('VERIFIER_SECRET'),
    solution: token('SOLUTION_SECRET'),
    store: token('STORE_SECRET'),
    otherArm: token('OTHER_ARM_SECRET'),
    hostServer: token('HOST_ONLY_SERVER'),
    gateway: token('GATEWAY'),
    hostEnv: token('HOST_ENV_SECRET'),
  };
  const root = mkdtempSync(join(tmpdir(), 'pairbench-suite-'));
  const write = (path: string, content: string) => {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), content);
  };
  write('task/tests/verify.sh', `#!/bin/sh\n# ${secrets.verifier}\n`);
  write('task/solution/solve.sh', `#!/bin/sh\n# ${secrets.solution}\n`);
  write('.pairbench/objects/secret', secrets.store);
  write('arms/treatment/workspace/notes.txt', secrets.otherArm);

  const hostServer = http.createServer((_req, res) => res.end(secrets.hostServer));
  await new Promise<void>((resolve) => hostServer.listen(0, '127.0.0.1', resolve));
  // The gateway's socket sits in a directory of its own: backends may bind that directory.
  mkdirSync(join(root, 'gateway'));
  const gatewaySocket = join(root, 'gateway', 'gw.sock');
  const gateway = http.createServer((req, res) => res.end(`${secrets.gateway} ${req.url}`));
  await new Promise<void>((resolve) => gateway.listen(gatewaySocket, resolve));
  // As the real gateway does: a sandbox may connect as another uid (docker's forwarder runs as 65534).
  chmodSync(gatewaySocket, 0o666);

  let workspaces = 0;
  const escapeMarker = token('pairbench-escape');
  return {
    secrets,
    hostEnvName: `PAIRBENCH_SUITE_${randomBytes(4).toString('hex').toUpperCase()}`,
    hostPort: (hostServer.address() as AddressInfo).port,
    gatewaySocket,
    escapeMarker,
    newWorkspace() {
      const ws = join(root, 'arms', `control-${++workspaces}`, 'workspace');
      mkdirSync(ws, { recursive: true });
      return ws;
    },
    attemptEnv: (workspace) => ({
      HIDDEN_VERIFIER: join(root, 'task/tests/verify.sh'),
      HIDDEN_SOLUTION: join(root, 'task/solution/solve.sh'),
      STORE_DIR: join(root, '.pairbench'),
      STORE_FILE: join(root, '.pairbench/objects/secret'),
      STORE_FILE_RELATIVE: posix.relative(workspace, join(root, '.pairbench/objects/secret')),
      OTHER_ARM_FILE: join(root, 'arms/treatment/workspace/notes.txt'),
      HOST_PORT: String((hostServer.address() as AddressInfo).port),
      ESCAPE_MARKER: escapeMarker,
    }),
    async close() {
      await new Promise((resolve) => hostServer.close(resolve));
      await new Promise((resolve) => gateway.close(resolve));
      rmSync(root, { recursive: true, force: true });
    },
  };
}

async function hostWrite(spec: SandboxSpec, relativePath: string, content: string): Promise<void> {
  mkdirSync(dirname(join(spec.workspace, relativePath)), { recursive: true });
  writeFileSync(join(spec.workspace, relativePath), content);
}
