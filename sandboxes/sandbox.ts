import { join } from 'node:path';
import { packageRoot } from '../pipeline/package-root.js';
import type { Result } from '../pipeline/result.js';

/** The port forwarder both backends run inside a sandbox: the package's sandboxes/forwarder.mjs, wherever this code was compiled or bundled to. */
export const forwarderScriptPath = (): string => join(packageRoot(), 'sandboxes', 'forwarder.mjs');

/** How the sandbox may reach the network. */
export type EgressMode = 'none' | 'allowlist' | 'open';

export interface EgressPolicy {
  mode: EgressMode;
  /** Host names (or host:port) allowed through the proxy when mode is `allowlist`. */
  allow?: string[];
}

/** One connection attempt seen by the egress proxy. */
export interface EgressEvent {
  at: string;
  method: string; // CONNECT, GET, ...
  host: string;
  port: number;
  decision: 'allowed' | 'blocked';
}

export interface Mount {
  host: string;
  /** Absolute path inside the sandbox. */
  target: string;
  readOnly: boolean;
}

/** What an attempt's sandbox is made of. Everything here is frozen into the run key by the caller. */
export interface SandboxSpec {
  /** Host directory that becomes the writable workspace (inside: `workdir` of the sandbox). */
  workspace: string;
  /** Extra mounts (the agent's own install, a verifier's files at verify time). Nothing else of the host is visible. */
  mounts?: Mount[];
  /**
   * bubblewrap: the host paths bound read-only instead of the system directories (the verifier's
   * declared, digested environment); nothing else of the host is there. Other backends ignore it.
   */
  system?: readonly string[];
  /** Docker: image ID (sha256:...) to run; other backends ignore it. */
  image?: string;
  /** Docker: where the workspace is mounted and processes start (an image's WORKDIR, e.g. /app); default /work. */
  workdir?: string;
  /**
   * Docker: the user processes run as ("root" for a Harbor verifier, as Harbor runs it; the
   * container keeps no capabilities and no-new-privileges). Default: the unprivileged agent user.
   */
  user?: string;
  resources?: { cpus?: number; memoryMb?: number; pids?: number };
  egress: EgressPolicy;
  /** Host unix sockets made reachable inside as 127.0.0.1:port (the model gateway). */
  forwards?: { socket: string; port: number }[];
  /** Environment of every process started in the sandbox (nothing of the host leaks in). */
  env?: Record<string, string>;
  /** The node this sandbox runs for: a backend that labels what it makes names it (docker: pairbench.node). */
  node?: string;
  /** Labels for the attempt (docker labels containers with them). */
  labels?: Record<string, string>;
}

export interface ExecOptions {
  /** Working directory inside the sandbox (default: the workspace). */
  cwd?: string;
  env?: Record<string, string>;
  timeoutMs?: number;
  signal?: AbortSignal;
  /** Bytes to write to stdin (closed afterwards; default: no stdin). */
  stdin?: string;
}

export interface ExecResult {
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  stdout: string;
  stderr: string;
  durationMs: number;
}

/** What the attempt's receipt records of its sandbox. */
export interface SandboxReceipt {
  backend: string;
  /** none (local process), namespaces (bubblewrap), container (docker). */
  isolation: 'none' | 'namespaces' | 'container';
  egress_mode: EgressMode;
  egress_enforced: boolean;
  egress_log: EgressEvent[];
  image_id: string | null;
  resources: { cpus: number | null; memory_mb: number | null; pids: number | null };
}

export interface Sandbox {
  /** The workspace path as processes inside see it. */
  readonly workdir: string;
  exec(argv: string[], options?: ExecOptions): Promise<ExecResult>;
  receipt(): SandboxReceipt;
  /** Files the processes left outside the workspace and the mounts; absent where the backend cannot tell. */
  changedOutsideWorkspace?(): Promise<string[]>;
  /** Removes everything the sandbox started or created (containers, forwarders, proxy). Idempotent. */
  close(): Promise<void>;
}

export type SandboxFailure =
  | { reason: 'unavailable'; message: string } // backend missing or not working on this machine
  | { reason: 'egress-unenforceable'; message: string } // refuses rather than silently downgrading
  | { reason: 'start-failed'; message: string };

export interface SandboxBackend {
  name: 'local' | 'bubblewrap' | 'docker';
  isolation: SandboxReceipt['isolation'];
  /** Whether this machine can run the backend, and if not, what to do about it. */
  available(): Promise<Result<void, string>>;
  canEnforce(mode: EgressMode): boolean;
  create(spec: SandboxSpec): Promise<Result<Sandbox, SandboxFailure>>;
}
