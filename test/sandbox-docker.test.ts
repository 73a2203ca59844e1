// The docker sandbox backend against a REAL Docker engine (scripts/start-dockerd.sh
// starts one). Skipped, with the reason printed, only when the engine does not answer.
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { dockerBackend, reapLeftovers } from '../sandboxes/docker.js';
import type { Sandbox, SandboxSpec } from '../sandboxes/sandbox.js';
import { ensureTestImage } from './docker-image.js';
import { sandboxSuite } from './sandbox-suite.js';

const backend = dockerBackend();
const availability = await backend.available();
if (!availability.ok) console.warn(`[sandbox-docker] SKIPPED: ${availability.error}`);

/** Every container this file makes carries this label, so the tests can count them. */
const RUN = randomUUID();
const docker = new Docker();

async function containersOfRun(extra: Record<string, string> = {}): Promise<Docker.ContainerInfo[]> {
  const label = [`pairbench.test=${RUN}`, ...Object.entries(extra).map(([k, v]) => `${k}=${v}`)];
  return docker.listContainers({ all: true, filters: { label } });
}

it('an engine that does not answer: available() and create() say how to start one', async () => {
  const missing = dockerBackend({ socketPath: join(tmpdir(), `no-docker-${RUN}.sock`) });
  const a = await missing.available();
  expect(a.ok).toBe(false);
  if (!a.ok) expect(a.error).toMatch(/does not answer.*scripts\/start-dockerd\.sh.*dockerd --storage-driver=vfs/s);
  const c = await missing.create({ workspace: tmpdir(), image: `sha256:${'a'.repeat(64)}`, egress: { mode: 'none' } });
  expect(!c.ok && c.error.reason).toBe('unavailable');
});

// The shared suite (same tests as local and bubblewrap): escapes, hidden files, egress, forwards.
sandboxSuite(backend, {
  ...(availability.ok ? {} : { skip: availability.error }),
  baseSpec: async () => ({ image: await ensureTestImage(), labels: { 'pairbench.test': RUN } }),
});

describe.skipIf(!availability.ok)('docker sandbox backend (real engine)', () => {
  let image = '';
  let workspace = '';
  const open: Sandbox[] = [];
  let server: http.Server;
  let serverPort = 0;

  beforeAll(async () => {
    image = await ensureTestImage();
    server = http.createServer((_req, res) => res.end('host-only-server'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    serverPort = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await new Promise((r) => server.close(r));
    // Anything a failed test left behind.
    for (const c of await containersOfRun()) await docker.getContainer(c.Id).remove({ force: true });
  });
  afterEach(async () => {
    for (const s of open.splice(0)) await s.close();
    if (workspace) rmSync(workspace, { recursive: true, force: true });
    workspace = '';
  });

  function spec(over: Partial<SandboxSpec> = {}): SandboxSpec {
    workspace ||= mkdtempSync(join(tmpdir(), 'pairbench-docker-ws-'));
    return { workspace, image, egress: { mode: 'none' }, labels: { 'pairbench.test': RUN }, ...over };
  }

  async function create(over: Partial<SandboxSpec> = {}): Promise<Sandbox> {
    const r = await backend.create(spec(over));
    if (!r.ok) throw new Error(`create failed: ${r.error.reason}: ${r.error.message}`);
    open.push(r.value);
    return r.value;
  }

  it('runs a command, separates stdout and stderr, returns the exit code, feeds stdin', async () => {
    const sb = await create({ env: { GREETING: 'hi' } });
    expect(sb.workdir).toBe('/work');
    const r = await sb.exec(['sh', '-c', 'echo "$GREETING $(id -u):$(id -g) $(pwd)"; echo oops >&2; exit 3']);
    expect(r).toMatchObject({ exitCode: 3, signal: null, timedOut: false, stdout: 'hi 1000:1000 /work\n', stderr: 'oops\n' });
    const cat = await sb.exec(['cat'], { stdin: 'from stdin\n' });
    expect(cat.stdout).toBe('from stdin\n');
    expect(cat.exitCode).toBe(0);
    const cwd = await sb.exec(['pwd'], { cwd: '/tmp', env: { EXTRA: 'x' } });
    expect(cwd.stdout).toBe('/tmp\n');
  });

  it('a fresh container per sandbox, removed by close() (idempotent, also if already gone)', async () => {
    const a = await create();
    const b = await create();
    const running = await containersOfRun();
    expect(running).toHaveLength(2);
    expect(new Set(running.map((c) => c.Id)).size).toBe(2);
    for (const c of running) {
      expect(c.Labels['pairbench']).toBe('1');
      expect(c.Labels['pairbench.pid']).toBe(String(process.pid));
      expect(c.ImageID).toBe(image);
    }
    // A file made in one sandbox's /tmp is not in the other's.
    await a.exec(['sh', '-c', 'echo a > /tmp/mark']);
    expect((await b.exec(['cat', '/tmp/mark'])).exitCode).not.toBe(0);

    await a.close();
    await a.close();
    expect(await containersOfRun()).toHaveLength(1);
    // Removed behind the sandbox's back: close() still succeeds.
    const [left] = await containersOfRun();
    await docker.getContainer(left!.Id).remove({ force: true });
    await b.close();
    expect(await containersOfRun()).toHaveLength(0);
    await expect(a.exec(['true'])).rejects.toThrow(/after close/);
  });

  it('records the image ID, egress and resources in the receipt', async () => {
    const sb = await create({ resources: { cpus: 0.5, memoryMb: 256, pids: 64 } });
    expect(sb.receipt()).toEqual({
      backend: 'docker',
      isolation: 'container',
      egress_mode: 'none',
      egress_enforced: true,
      egress_log: [],
      image_id: image,
      resources: { cpus: 0.5, memory_mb: 256, pids: 64 },
    });
    const [c] = await containersOfRun();
    const info = await docker.getContainer(c!.Id).inspect();
    expect(info.HostConfig).toMatchObject({
      NetworkMode: 'none',
      CapDrop: ['ALL'],
      SecurityOpt: ['no-new-privileges'],
      ReadonlyRootfs: true,
      Memory: 256 * 1024 * 1024,
      NanoCpus: 0.5e9,
      PidsLimit: 64,
    });
    // The limits are in force: the pids cgroup refuses the 65th process.
    const fork = await sb.exec(['sh', '-c', 'for i in $(seq 80); do sleep 5 & done; wait'], { timeoutMs: 20_000 });
    expect(fork.stderr).toMatch(/can't fork|Resource temporarily unavailable|fork/i);
  });

  it('refuses a mutable tag, a short ID and an image the engine does not have', async () => {
    const tag = (await docker.getImage(image).inspect()).RepoTags?.[0] ?? 'pairbench-test:latest';
    for (const [ref, msg] of [
      [tag, /mutable tag.*Pin it/s],
      ['busybox', /mutable tag/],
      [image.slice(7, 19), /short image ID/],
      [`sha256:${'0'.repeat(64)}`, /not in the engine.*never pulls/],
      [undefined, /needs spec.image/],
    ] as const) {
      const r = await backend.create(spec({ image: ref as string }));
      expect(r.ok).toBe(false);
      if (!r.ok) {
        expect(r.error.reason).toBe('start-failed');
        expect(r.error.message).toMatch(msg);
      }
    }
    expect(await containersOfRun()).toHaveLength(0);
  });

  it('--network none: a host-only 127.0.0.1 server is unreachable inside, reachable from the host', async () => {
    const fromHost = await fetch(`http://127.0.0.1:${serverPort}/`).then((r) => r.text());
    expect(fromHost).toBe('host-only-server');
    const sb = await create();
    const wget = await sb.exec(['wget', '-q', '-T', '3', '-O', '-', `http://127.0.0.1:${serverPort}/`]);
    expect(wget.exitCode).not.toBe(0);
    expect(wget.stdout).not.toContain('host-only-server');
    const nc = await sb.exec(['sh', '-c', `echo x | nc -w 2 127.0.0.1 ${serverPort}`]);
    expect(nc.exitCode).not.toBe(0);
    // Only the loopback interface exists.
    const ifaces = await sb.exec(['sh', '-c', "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '"]);
    expect(ifaces.stdout.trim()).toBe('lo');
  });

  it('no capabilities, no new privileges, read-only root: remount and umount fail', async () => {
    const sb = await create();
    const status = await sb.exec(['cat', '/proc/self/status']);
    expect(status.stdout).toMatch(/^CapEff:\s+0+$/m);
    expect(status.stdout).toMatch(/^CapBnd:\s+0+$/m);
    expect(status.stdout).toMatch(/^NoNewPrivs:\s+1$/m);
    for (const cmd of ['mount -o remount,rw /', 'umount /proc', 'echo x > /etc/owned', 'nsenter -t 1 -m true', 'chroot / true']) {
      const r = await sb.exec(['sh', '-c', cmd]);
      expect(r.exitCode, cmd).not.toBe(0);
    }
    expect((await sb.exec(['sh', '-c', 'echo x > /tmp/ok && cat /tmp/ok'])).stdout).toBe('x\n');
    // Nothing of the host's file system is visible besides what was bound.
    const ls = await sb.exec(['ls', '/work', '/run/pairbench']);
    expect(ls.stdout).not.toMatch(/shared|main/);
  });

  it('the workspace is writable at /work and changes are visible on the host', async () => {
    const s = spec();
    writeFileSync(join(s.workspace, 'from-host.txt'), 'host\n');
    const sb = await create(s);
    const r = await sb.exec(['sh', '-c', 'cat from-host.txt && mkdir -p sub && echo agent > sub/out.txt && echo more >> from-host.txt']);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toBe('host\n');
    expect(readFileSync(join(s.workspace, 'sub', 'out.txt'), 'utf8')).toBe('agent\n');
    expect(readFileSync(join(s.workspace, 'from-host.txt'), 'utf8')).toBe('host\nmore\n');
  });

  it('read-only mounts are read-only, extra mounts appear at their targets', async () => {
    const extra = mkdtempSync(join(tmpdir(), 'pairbench-docker-ro-'));
    try {
      writeFileSync(join(extra, 'tool.txt'), 'tool\n');
      chmodSync(extra, 0o755);
      const sb = await create({ mounts: [{ host: extra, target: '/opt/agent', readOnly: true }] });
      expect((await sb.exec(['cat', '/opt/agent/tool.txt'])).stdout).toBe('tool\n');
      expect((await sb.exec(['sh', '-c', 'echo x > /opt/agent/new'])).exitCode).not.toBe(0);
      expect(existsSync(join(extra, 'new'))).toBe(false);
    } finally {
      rmSync(extra, { recursive: true, force: true });
    }
  });

  it('a timeout kills the command and everything it started; the sandbox stays usable', async () => {
    const sb = await create();
    const r = await sb.exec(['sh', '-c', 'sleep 300 & sleep 301 & echo started; wait'], { timeoutMs: 700 });
    expect(r.timedOut).toBe(true);
    expect(r.signal).toBe('SIGKILL');
    expect(r.exitCode).toBe(null);
    expect(r.stdout).toBe('started\n');
    expect(r.durationMs).toBeLessThan(60_000); // not the 300 s its children would have slept
    const ps = await sb.exec(['ps', '-o', 'user,args']);
    expect(ps.stdout).not.toMatch(/sleep 30[01]/);
    expect((await sb.exec(['echo', 'alive'])).stdout).toBe('alive\n');
  });

  it('an abort signal kills the command without counting as a timeout', async () => {
    const sb = await create();
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 300);
    const r = await sb.exec(['sleep', '300'], { signal: ac.signal });
    expect(r).toMatchObject({ timedOut: false, signal: 'SIGKILL', exitCode: null });
  });

  it('nothing of the host environment leaks in; HOME is a writable tmpfs', async () => {
    process.env['PAIRBENCH_HOST_SECRET'] = 'leak';
    try {
      const sb = await create({ env: { MINE: '1' } });
      const env = await sb.exec(['env']);
      expect(env.stdout).not.toContain('PAIRBENCH_HOST_SECRET');
      expect(env.stdout).toContain('MINE=1');
      expect((await sb.exec(['sh', '-c', 'echo ok > "$HOME/f" && cat "$HOME/f" && echo "$HOME"'])).stdout).toBe('ok\n/tmp/home\n');
    } finally {
      delete process.env['PAIRBENCH_HOST_SECRET'];
    }
  });

  it('egress open is refused when the engine has no bridge network, never silently downgraded', async () => {
    const hasBridge = (await docker.listNetworks()).some((n) => n.Name === 'bridge');
    const r = await backend.create(spec({ egress: { mode: 'open' } }));
    if (hasBridge) {
      expect(r.ok).toBe(true);
      if (r.ok) {
        open.push(r.value);
        expect(r.value.receipt()).toMatchObject({ egress_mode: 'open', egress_enforced: false });
      }
    } else {
      expect(r.ok).toBe(false);
      if (!r.ok) {
        expect(r.error.reason).toBe('unavailable');
        expect(r.error.message).toMatch(/bridge/);
      }
    }
  });

  it('reapLeftovers removes containers of dead pairbench processes on this host, not of live ones', async () => {
    const dead = spawnSync('true').pid!;
    const make = (pid: number) =>
      docker.createContainer({
        Image: image,
        Entrypoint: ['sleep'],
        Cmd: ['infinity'],
        HostConfig: { NetworkMode: 'none' },
        Labels: { pairbench: '1', 'pairbench.test': RUN, 'pairbench.reap': '1', 'pairbench.pid': String(pid), 'pairbench.host': hostname() },
      });
    const orphan = await make(dead);
    const live = await make(process.pid);
    const r = await reapLeftovers({ 'pairbench.test': RUN, 'pairbench.reap': '1' });
    // Another pairbench process on this engine may have reaped the orphan first (create() reaps too).
    expect(r.ok && r.value.every((id) => id === orphan.id)).toBe(true);
    expect((await containersOfRun({ 'pairbench.reap': '1' })).map((c) => c.Id)).toEqual([live.id]);
    const all = await reapLeftovers({ 'pairbench.test': RUN, 'pairbench.reap': '1' }, { includeLive: true });
    expect(all).toEqual({ ok: true, value: [live.id] });
  });

  const forwarder = join(import.meta.dirname, '..', 'sandboxes', 'forwarder.mjs');

  it.skipIf(!existsSync(forwarder))('forwards a host unix socket to 127.0.0.1:PORT inside (the gateway path)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pairbench-docker-gw-'));
    chmodSync(dir, 0o755);
    const sock = join(dir, 'gw.sock');
    const gw = http.createServer((req, res) => res.end(`gateway saw ${req.url}`));
    await new Promise<void>((r) => gw.listen(sock, r));
    try {
      // Not connectable by others yet: refused with a clear message.
      chmodSync(sock, 0o600);
      const refused = await backend.create(spec({ forwards: [{ socket: sock, port: 18080 }] }));
      expect(!refused.ok && refused.error.message).toMatch(/chmod 0666/);
      chmodSync(sock, 0o666);
      const sb = await create({ forwards: [{ socket: sock, port: 18080 }] });
      const r = await sb.exec(['wget', '-q', '-O', '-', 'http://127.0.0.1:18080/v1/messages']);
      expect(r.stdout).toBe('gateway saw /v1/messages');
      // Only the socket is bound, not its directory's other files.
      writeFileSync(join(dir, 'sibling.txt'), 'secret');
      expect((await sb.exec(['sh', '-c', 'ls -R /run/pairbench; cat /run/pairbench/*/sibling.txt'])).stdout).not.toContain('secret');
      // The agent cannot kill the forwarder (another uid); a timeout's kill leaves it running.
      await sb.exec(['sleep', '100'], { timeoutMs: 200 });
      expect((await sb.exec(['wget', '-q', '-O', '-', 'http://127.0.0.1:18080/again'])).stdout).toBe('gateway saw /again');
    } finally {
      await new Promise((r) => gw.close(r));
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it.skipIf(!existsSync(forwarder))('allowlist: only listed hosts pass the proxy, every attempt is logged, no direct route', async () => {
    const sb = await create({ egress: { mode: 'allowlist', allow: [`127.0.0.1:${serverPort}`] } });
    const env = await sb.exec(['env']);
    expect(env.stdout).toContain('http_proxy=http://127.0.0.1:3128');
    // Through the proxy: busybox wget honours http_proxy (no_proxy emptied so 127.0.0.1 goes through it too).
    // (No -T: busybox 1.35's wget segfaults with -T when it talks to a proxy.)
    const viaProxy = { env: { no_proxy: '', NO_PROXY: '' } };
    const allowed = await sb.exec(['wget', '-q', '-O', '-', `http://127.0.0.1:${serverPort}/`], viaProxy);
    expect(allowed.stdout, JSON.stringify(allowed)).toBe('host-only-server');
    const blocked = await sb.exec(['wget', '-q', '-O', '-', 'http://example.com/'], viaProxy);
    expect(blocked.exitCode).not.toBe(0);
    expect(blocked.stderr).toMatch(/403/);
    // Directly (ignoring the proxy): nothing.
    const direct = await sb.exec(['wget', '-q', '-T', '3', '-O', '-', `http://127.0.0.1:${serverPort}/`], { env: { http_proxy: '', HTTP_PROXY: '' } });
    expect(direct.exitCode).not.toBe(0);
    const log = sb.receipt().egress_log.map((e) => `${e.method} ${e.host}:${e.port} ${e.decision}`);
    expect(log).toEqual([`GET 127.0.0.1:${serverPort} allowed`, 'GET example.com:80 blocked']);
    expect(sb.receipt()).toMatchObject({ egress_mode: 'allowlist', egress_enforced: true });
    await sb.close();
    // The log survives close().
    expect(sb.receipt().egress_log).toHaveLength(2);
  });
});
