import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { bubblewrapBackend, checkBubblewrap, namespaceArgs, SANDBOX_HOST_UID, systemArgs, withParentDirs } from '../sandboxes/bubblewrap.js';
import type { Sandbox, SandboxSpec } from '../sandboxes/sandbox.js';
import { sandboxSuite } from './sandbox-suite.js';

// Skips (saying why) on a machine without a working bwrap. Where bubblewrap is a
// prerequisite (CI), set PAIRBENCH_REQUIRE_SANDBOXES=1 so a broken install fails instead.
const available = await bubblewrapBackend.available();
if (!available.ok && process.env['PAIRBENCH_REQUIRE_SANDBOXES']) throw new Error(`bubblewrap is required here: ${available.error}`);
const skip = available.ok ? undefined : available.error;
if (skip) console.warn(`[sandbox-bubblewrap] SKIPPED: ${skip}`);

sandboxSuite(bubblewrapBackend, skip === undefined ? { refusesPrivilegeBits: true } : { skip });

describe('bubblewrap argv (no bwrap needed)', () => {
  it('new pid/ipc/uts/cgroup namespaces always; a user namespace only when pairbench is not root (as root it would map the agent to host root)', () => {
    const args = namespaceArgs('none').join(' ');
    for (const flag of ['--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-cgroup-try', '--die-with-parent', '--new-session'])
      expect(args).toContain(flag);
    if (process.getuid?.() === 0) expect(args).not.toContain('--unshare-user');
    else expect(args).toContain('--unshare-user --uid 1000 --gid 1000 --cap-drop ALL');
  });

  it('makes the parents of a file bind 0755 (bwrap would make them 0700, unreadable by the sandbox user)', () => {
    expect(
      withParentDirs(['--tmpfs', '/run', '--ro-bind', '/etc/hosts', '/etc/ssl/x/hosts', '--ro-bind', '/usr', '/usr', '--ro-bind', '/etc/hosts', '/usr/lib/x']),
    ).toEqual([
      '--tmpfs',
      '/run',
      '--perms',
      '0755',
      '--dir',
      '/etc',
      '--perms',
      '0755',
      '--dir',
      '/etc/ssl',
      '--perms',
      '0755',
      '--dir',
      '/etc/ssl/x',
      '--ro-bind',
      '/etc/hosts',
      '/etc/ssl/x/hosts',
      '--ro-bind',
      '/usr',
      '/usr',
      '--ro-bind',
      '/etc/hosts',
      '/usr/lib/x',
    ]);
  });

  it('has no network for egress none and allowlist, and the host network only for open', () => {
    expect(namespaceArgs('none')).toContain('--unshare-net');
    expect(namespaceArgs('allowlist')).toContain('--unshare-net');
    expect(namespaceArgs('open')).not.toContain('--unshare-net');
  });

  it('binds only system paths read-only: never /, never writable, never TLS private keys', () => {
    const args = systemArgs();
    const binds = args.flatMap((a, i): [string, string][] => (a.startsWith('--') && a.includes('bind') ? [[a, args[i + 1]!]] : []));
    expect(binds.length).toBeGreaterThan(0);
    for (const [flag, source] of binds) {
      expect(flag).toBe('--ro-bind');
      expect(source).not.toBe('/');
      expect(source.startsWith('/etc/ssl/private')).toBe(false);
    }
  });

  it('says how to install bubblewrap when bwrap is not on PATH', async () => {
    const r = await checkBubblewrap('/nonexistent');
    expect(r).toEqual({ ok: false, error: expect.stringContaining('apt-get install bubblewrap') });
  });
});

describe.skipIf(skip !== undefined)('bubblewrap specifics', () => {
  let root: string;
  let hostServer: http.Server;
  let hostPort: number;
  const open: Sandbox[] = [];

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'pairbench-bwrap-test-'));
    hostServer = http.createServer((_req, res) => res.end('host loopback answered'));
    await new Promise<void>((resolve) => hostServer.listen(0, '127.0.0.1', resolve));
    hostPort = (hostServer.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await new Promise((resolve) => hostServer.close(resolve));
    rmSync(root, { recursive: true, force: true });
  });
  afterEach(async () => {
    for (const s of open.splice(0)) await s.close();
  });

  let n = 0;
  function workspace(): string {
    const ws = join(root, `ws-${++n}`);
    mkdirSync(ws);
    return ws;
  }

  async function start(spec: Partial<SandboxSpec> = {}): Promise<Sandbox> {
    const r = await bubblewrapBackend.create({ workspace: workspace(), egress: { mode: 'none' }, ...spec });
    if (!r.ok) throw new Error(`${r.error.reason}: ${r.error.message}`);
    open.push(r.value);
    return r.value;
  }

  async function sh(sandbox: Sandbox, script: string) {
    return sandbox.exec(['/bin/sh', '-c', script]);
  }

  it('shows only the system, scratch space and the workspace at the root; the repository is not there', async () => {
    const s = await start();
    const r = await sh(s, `ls -A /; test -e ${JSON.stringify(join(process.cwd(), 'package.json'))} && echo REPO_VISIBLE`);
    expect(r.stdout.split('\n').filter(Boolean).sort()).toEqual(['bin', 'dev', 'etc', 'lib', 'lib64', 'proc', 'run', 'sbin', 'tmp', 'usr', 'work']);
  });

  it('no nested user namespace: unshare -Ur and a bwrap inside both fail, and threads and processes still work', async () => {
    const s = await start();
    const r = await sh(
      s,
      [
        'unshare -Ur id -u 2>/dev/null && echo NESTED-UNSHARE',
        'unshare --user --map-root-user --fork grep CapEff /proc/self/status 2>/dev/null && echo NESTED-FORK',
        'bwrap --unshare-user --uid 0 --ro-bind / / id -u 2>/dev/null && echo NESTED-BWRAP',
        // What still works: processes, and threads (node's pool; glibc falls back from clone3 to clone).
        `${JSON.stringify(process.execPath)} -e "require('node:crypto').pbkdf2('a','b',1000,32,'sha256',(e)=>console.log(e?'threads-broken':'threads-ok'))"`,
        'sh -c "echo child-ok"',
      ].join('; '),
    );
    expect(r.stdout).not.toMatch(/NESTED/);
    expect(r.stdout).toContain('threads-ok');
    expect(r.stdout).toContain('child-ok');
  });

  it('runs as an unprivileged named user with a writable HOME and no capabilities', async () => {
    const s = await start();
    const r = await sh(
      s,
      'id -un; id -u; echo "$HOME"; touch "$HOME/x" && echo home-writable; grep CapEff /proc/self/status; touch /usr/x 2>/dev/null || echo usr-read-only',
    );
    const uid = process.getuid?.() === 0 && SANDBOX_HOST_UID.ok ? SANDBOX_HOST_UID.value : 1000;
    expect(r.stdout.split('\n')).toEqual(['pairbench', String(uid), '/tmp/home', 'home-writable', 'CapEff:\t0000000000000000', 'usr-read-only']);
  });

  it("HOME is the sandbox's own 0700 directory: kept across its execs, empty in a new sandbox", async () => {
    const s = await start();
    const uid = process.getuid?.() === 0 && SANDBOX_HOST_UID.ok ? SANDBOX_HOST_UID.value : 1000;
    expect((await sh(s, 'stat -c "%a %u" "$HOME"; echo kept > "$HOME/.note"')).stdout).toBe(`700 ${uid}`);
    expect((await sh(s, 'cat "$HOME/.note"')).stdout).toBe('kept');
    const fresh = await start();
    expect((await sh(fresh, 'ls -A "$HOME"')).stdout).toBe('');
  });

  it('hands the workspace to the sandbox user without making anything world-writable', async () => {
    const ws = workspace();
    writeFileSync(join(ws, 'a.txt'), 'x');
    const r = await bubblewrapBackend.create({ workspace: ws, egress: { mode: 'none' } });
    if (!r.ok) throw new Error(r.error.message);
    open.push(r.value);
    const uid = process.getuid?.() === 0 && SANDBOX_HOST_UID.ok ? SANDBOX_HOST_UID.value : process.getuid?.();
    for (const p of [ws, join(ws, 'a.txt')]) {
      const st = statSync(p);
      expect(st.uid).toBe(uid);
      expect(st.mode & 0o002, `${p} is world-writable`).toBe(0);
    }
  });

  it('mounts extra paths read-only or read-write at their targets', async () => {
    const agent = join(root, 'agent-install');
    const data = join(root, 'data');
    mkdirSync(agent);
    mkdirSync(data);
    writeFileSync(join(agent, 'cli.js'), 'agent code');
    const s = await start({
      mounts: [
        { host: agent, target: '/opt/agent', readOnly: true },
        { host: data, target: '/run/data', readOnly: false },
      ],
    });
    const r = await sh(
      s,
      'cat /opt/agent/cli.js; echo; touch /opt/agent/x 2>/dev/null || echo agent-read-only; echo out > /run/data/result && echo data-written',
    );
    expect(r.stdout.split('\n')).toEqual(['agent code', 'agent-read-only', 'data-written']);
    expect(readFileSync(join(data, 'result'), 'utf8')).toBe('out\n');
    expect(existsSync(join(agent, 'x'))).toBe(false);
  });

  it.each([
    [{ host: '/tmp', target: '/usr/local/agent', readOnly: true }, 'inside the read-only system bind /usr'],
    [{ host: '/nonexistent-pairbench', target: '/opt/x', readOnly: true }, 'the host path does not exist'],
    [{ host: '/tmp', target: '/work', readOnly: true }, '/work is the workspace'],
    [{ host: '/tmp', target: 'relative', readOnly: true }, 'normalized absolute path'],
  ])('refuses an impossible mount with a message naming it: %j', async (mount, message) => {
    const r = await bubblewrapBackend.create({ workspace: workspace(), egress: { mode: 'none' }, mounts: [mount] });
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.error.reason).toBe('start-failed');
      expect(r.error.message).toContain(`mount ${mount.host} -> ${mount.target}`);
      expect(r.error.message).toContain(message);
    }
  });

  it('refuses to forward a socket whose directory holds other files (they would be visible inside)', async () => {
    const dir = join(root, 'shared-dir');
    mkdirSync(dir);
    writeFileSync(join(dir, 'secret.json'), '{}');
    const r = await bubblewrapBackend.create({ workspace: workspace(), egress: { mode: 'none' }, forwards: [{ socket: join(dir, 'gw.sock'), port: 9000 }] });
    expect(r).toMatchObject({ ok: false, error: { reason: 'start-failed', message: expect.stringContaining('keep the socket in a directory of its own') } });
  });

  it('refuses a forward on the egress proxy port when egress is allowlist', async () => {
    const dir = join(root, 'sock-dir');
    mkdirSync(dir, { recursive: true });
    const r = await bubblewrapBackend.create({
      workspace: workspace(),
      egress: { mode: 'allowlist', allow: [] },
      forwards: [{ socket: join(dir, 'x.sock'), port: 3128 }],
    });
    expect(r).toMatchObject({ ok: false, error: { reason: 'start-failed', message: expect.stringContaining('3128') } });
  });

  it('egress open shares the host network and says it is not enforced', async () => {
    const s = await start({ egress: { mode: 'open' } });
    const r = await s.exec(['busybox', 'wget', '-q', '-Y', 'off', '-O', '-', `http://127.0.0.1:${hostPort}/`]);
    expect(r.stdout).toBe('host loopback answered');
    expect(s.receipt()).toMatchObject({ egress_mode: 'open', egress_enforced: false, egress_log: [] });
  });

  it('fails the exec with a clear message when the forwarder cannot start', async () => {
    // With egress open the forwarder listens on the host's loopback, where hostPort is taken.
    const dir = join(root, 'fwd-fail');
    mkdirSync(dir);
    const s = await start({ egress: { mode: 'open' }, forwards: [{ socket: join(dir, 'gw.sock'), port: hostPort }] });
    const r = await s.exec(['/bin/sh', '-c', 'echo agent ran']);
    expect(r.exitCode).toBe(125);
    expect(r.stdout).not.toContain('agent ran');
    expect(r.stderr).toContain(`cannot listen on 127.0.0.1:${hostPort}`);
    expect(r.stderr).toContain('the port forwarder inside the sandbox did not start');
  });

  it('records resources as given (bubblewrap does not enforce them)', async () => {
    const s = await start({ resources: { cpus: 2, memoryMb: 512, pids: 64 } });
    expect(s.receipt()).toEqual({
      backend: 'bubblewrap',
      isolation: 'namespaces',
      egress_mode: 'none',
      egress_enforced: true,
      egress_log: [],
      image_id: null,
      resources: { cpus: 2, memory_mb: 512, pids: 64 },
    });
  });

  it('close() stops the egress proxy; exec afterwards is a programming error', async () => {
    const s = await start({ egress: { mode: 'allowlist', allow: [] } });
    const before = await s.exec(['busybox', 'wget', '-q', '-O', '-', 'http://blocked.example/']);
    expect(before.stderr).toContain('403');
    await s.close();
    expect(s.receipt().egress_log).toMatchObject([{ host: 'blocked.example', decision: 'blocked' }]);
    await expect(s.exec(['true'])).rejects.toThrow(/after close/);
  });

  it('every sandbox of a process shares one passwd and group, which none can change: one attempt cannot rename or add users in the next', async () => {
    const a = await start();
    const attack = await sh(
      a,
      'echo "pwned:x:0:0::/:/bin/sh" >> /etc/passwd && echo WROTE-PASSWD; echo "pwned:x:0:" > /etc/group && echo WROTE-GROUP; ' +
        'mv /etc/passwd /tmp/p 2>/dev/null && echo MOVED; id -un; id -gn',
    );
    expect(attack.stdout).not.toMatch(/WROTE|MOVED/);
    expect(attack.stdout.trim().split('\n')).toEqual(['pairbench', 'pairbench']);
    const b = await start();
    const seen = await sh(b, 'cat /etc/passwd /etc/group; id -un');
    expect(seen.stdout).not.toContain('pwned');
    expect(seen.stdout).toContain(`pairbench:x:${process.getuid?.() === 0 && SANDBOX_HOST_UID.ok ? SANDBOX_HOST_UID.value : 1000}:`);
  });

  it('the shared identity files go when the process exits, and are made again if removed meanwhile', async () => {
    const scratch = mkdtempSync(join(root, 'tmpdir-'));
    const script = `
      const { bubblewrapBackend } = await import(${JSON.stringify(join(process.cwd(), 'dist', 'sandboxes', 'bubblewrap.js'))});
      const { readdirSync, rmSync, mkdirSync } = await import('node:fs');
      const ids = () => readdirSync(process.env.TMPDIR).filter((n) => n.startsWith('pairbench-bwrap-identity-'));
      const names = [];
      for (let i = 0; i < 3; i++) {
        const ws = process.env.TMPDIR + '/ws' + i;
        mkdirSync(ws);
        const s = await bubblewrapBackend.create({ workspace: ws, egress: { mode: 'none' } });
        if (!s.ok) throw new Error(s.error.message);
        const r = await s.value.exec(['id', '-un']);
        names.push(r.stdout.trim());
        await s.value.close();
        rmSync(ws, { recursive: true });
        // A tmp cleaner removes them between two sandboxes: the next one makes them again.
        if (i === 1) for (const d of ids()) rmSync(process.env.TMPDIR + '/' + d, { recursive: true });
      }
      console.log(JSON.stringify({ names, during: ids().length }));
    `;
    const { execFileSync } = await import('node:child_process');
    const out = JSON.parse(
      execFileSync(process.execPath, ['--input-type=module', '-e', script], { env: { ...process.env, TMPDIR: scratch }, encoding: 'utf8' }),
    );
    expect(out).toEqual({ names: ['pairbench', 'pairbench', 'pairbench'], during: 1 });
    expect(readdirSync(scratch)).toEqual([]);
  });
});
