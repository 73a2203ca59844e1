import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { err, ok } from '../pipeline/result.js';
import { runProcess } from './exec-process.js';
import type { EgressMode, Sandbox, SandboxBackend, SandboxReceipt, SandboxSpec } from './sandbox.js';
import { EGRESS_MODES } from './egress-modes.js';

/**
 * `local`: the workspace is a host directory and commands are host processes.
 * No isolation and no egress control: it says so in every receipt, and refuses
 * any egress mode other than `open` rather than pretending to enforce it. What it
 * can do for a plain process: a private TMPDIR and HOME per sandbox. It cannot stop
 * the process reading what its user can read (the store, other arms' outputs) or
 * leaving processes behind; a cohort run on it makes no claim (verdict unisolated).
 */
export const localBackend: SandboxBackend = {
  name: 'local',
  isolation: 'none',
  async available() {
    return ok(undefined);
  },
  canEnforce(mode: EgressMode) {
    return mode === 'open';
  },
  async create(spec: SandboxSpec) {
    if (!EGRESS_MODES.local.includes(spec.egress.mode)) {
      return err({
        reason: 'egress-unenforceable',
        message: `the local backend cannot enforce egress "${spec.egress.mode}"; use bubblewrap or docker, or egress: open (recorded as not enforced)`,
      });
    }
    const receipt: SandboxReceipt = {
      backend: 'local',
      isolation: 'none',
      egress_mode: 'open',
      egress_enforced: false,
      egress_log: [],
      image_id: null,
      resources: { cpus: null, memory_mb: null, pids: null },
    };
    // A private temp directory (TMPDIR, and HOME unless the caller gives one): arms never share /tmp files.
    const scratch = mkdtempSync(join(tmpdir(), 'pairbench-local-'));
    mkdirSync(join(scratch, 'tmp'));
    mkdirSync(join(scratch, 'home'));
    const privateEnv = { TMPDIR: join(scratch, 'tmp'), TMP: join(scratch, 'tmp'), TEMP: join(scratch, 'tmp'), HOME: join(scratch, 'home') };
    const sandbox: Sandbox = {
      workdir: spec.workspace,
      exec: (argv, o = {}) =>
        runProcess(argv, {
          cwd: o.cwd ?? spec.workspace,
          env: { ...privateEnv, ...spec.env, ...o.env },
          ...(o.timeoutMs ? { timeoutMs: o.timeoutMs } : {}),
          ...(o.signal ? { signal: o.signal } : {}),
          ...(o.stdin !== undefined ? { stdin: o.stdin } : {}),
        }),
      receipt: () => receipt,
      close: async () => rmSync(scratch, { recursive: true, force: true }),
    };
    return ok(sandbox);
  },
};
