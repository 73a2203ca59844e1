import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { chmod, lstat, symlink, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

/**
 * The longest unix socket path bind() takes here (sun_path is 108 bytes with its NUL). Node
 * truncates a longer one silently: the socket then exists under another name.
 */
const SOCKET_PATH_MAX = 107;

/** Where a local server listens: a TCP port on 127.0.0.1 only (0 = any free port), or a unix socket. */
export type ListenOn = { port: number } | { socket: string };

export interface Bound {
  /** `http://127.0.0.1:PORT` for TCP; for a socket the nominal `http://localhost` (connect with socketPath). */
  url: string;
  socket?: string;
}

/** Listens and reports where. A socket is made mode 0666 so a sandboxed uid can connect to it. */
export async function listen(server: Server, on: ListenOn): Promise<Bound> {
  if ('socket' in on) {
    await removeStaleSocket(on.socket);
    await bindSocket(server, on.socket);
    await chmod(on.socket, 0o666);
    return { url: 'http://localhost', socket: on.socket };
  }
  // Loopback only: nothing the gateway or the fake model serves may be reachable from outside.
  await bind(server, (done) => server.listen(on.port, '127.0.0.1', done));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}` };
}

/** Stops accepting, cuts open (keep-alive or streaming) connections, and resolves once closed. */
export function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    if (!server.listening) return resolve();
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

/**
 * Listens on `path`, however deep its directory (a store under a long project path): a path too
 * long for bind() is bound through a short symlink to its directory (bind resolves it, so the
 * socket is made where it belongs), removed once the socket exists.
 */
async function bindSocket(server: Server, path: string): Promise<void> {
  if (Buffer.byteLength(path) <= SOCKET_PATH_MAX) return bind(server, (done) => server.listen(path, done));
  const link = join('/tmp', `pairbench-sock-${process.pid}-${randomBytes(6).toString('hex')}`);
  await symlink(dirname(path), link);
  try {
    await bind(server, (done) => server.listen(join(link, basename(path)), done));
  } finally {
    await unlink(link);
  }
}

function bind(server: Server, start: (done: () => void) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    start(() => {
      server.off('error', reject);
      resolve();
    });
  });
}

/** A socket file left by a killed run would make listen fail with EADDRINUSE; other file types are left alone. */
async function removeStaleSocket(path: string): Promise<void> {
  try {
    if ((await lstat(path)).isSocket()) await unlink(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
}
