import { printJson } from './json-output.js';
import { existsSync, readFileSync, statfsSync } from 'node:fs';
import { freemem } from 'node:os';
import { dirname } from 'node:path';
import type { BenchConfig, StepConfig } from '../pipeline/config/load.js';
import type { Graph } from '../pipeline/dag.js';
import { errorMessage } from '../pipeline/result.js';
import { findOnPath } from '../sandboxes/bubblewrap.js';
import { backendDoctor, SANDBOX_BACKENDS, type BackendName } from '../sandboxes/index.js';
import type { BackendReport, BackendUse } from '../sandboxes/backend-doctor.js';
import { isolationFallback, sandboxOf, runStep } from '../steps/run.js';
import { EXIT } from './command.js';
import type { CliIO, LoadedConfig } from './command-context.js';
import type { Store } from '../pipeline/store/store.js';
import type { PreflightCheck, PreflightContext } from '../pipeline/step-kind.js';
import { builtinStepKinds } from '../steps/index.js';
import { formatBytes, missing, pass } from '../pipeline/preflight.js';
import { anySpecOf } from '../steps/step-spec.js';
import { environmentStep } from '../steps/environment.js';

/**
 * `pairbench doctor`: the preflight. Checks every prerequisite of the configured
 * steps and names every missing one with its fix, never stopping at the first: what the
 * machine must have for any cohort (git and tar, free disk for the store, free memory
 * after what is already committed, each sandbox backend and pinned image the sandboxed
 * kinds use), then each step kind's own preflight (StepKind.preflight: the run kind's
 * agent CLIs at their pinned versions and the credentials each arm needs, by name only;
 * materialize's task repositories and commits).
 */

/** A prerequisite and whether it is met (a kind's preflight gives the same shape). */
export type DoctorCheck = PreflightCheck;

export interface DoctorFloors {
  /** Free space the store's file system must have. */
  diskBytes: number;
  /** Free memory per concurrent agent run (a docker run needs at least its container's memory limit). */
  memoryPerRunBytes: number;
}

const GiB = 1024 ** 3;
export const DEFAULT_FLOORS: DoctorFloors = { diskBytes: 2 * GiB, memoryPerRunBytes: 1 * GiB };

/** Runs every check; the order of the result is stable (it does not depend on timing). */
export async function doctorChecks(loaded: LoadedConfig, env: CliIO['env'], floors: DoctorFloors = DEFAULT_FLOORS): Promise<DoctorCheck[]> {
  const { config, graph } = loaded;
  const pathVar = env['PATH'] ?? '';
  const backends = await backendReports(sandboxUses(config.steps, graph), env);
  const groups = await Promise.all([
    Promise.resolve(toolChecks(pathVar)),
    Promise.resolve([diskCheck(config.storeDir, floors)]),
    Promise.resolve([memoryCheck(config, graph, backends, floors)]),
    Promise.resolve(backends.flatMap((b) => b.checks)),
    ...kindPreflights(config.steps, { env, store: loaded.ctx.store }),
  ]);
  return groups.flat();
}

/** Each step kind's own preflight, over the steps of that kind (in the order the kinds are registered). */
function kindPreflights(steps: readonly StepConfig[], ctx: PreflightContext): Promise<DoctorCheck[]>[] {
  return [...builtinStepKinds.values()].flatMap((kind) => {
    const ofKind = steps.filter((s) => s.kind === kind.name);
    return kind.preflight && ofKind.length ? [kind.preflight(ofKind, ctx)] : [];
  });
}

/** The command: one line per check, or `{ok, checks}` with --json; exit 0 only when every check passes. */
export async function runDoctor(
  loaded: LoadedConfig,
  io: CliIO,
  json: boolean,
  floors: DoctorFloors = DEFAULT_FLOORS,
  options: { canary?: boolean; readStores?: readonly Store[] } = {},
): Promise<number> {
  const checks = await doctorChecks(loaded, io.env, floors);
  checks.push(...(await gateChecks(loaded, io)));
  // The canary starts real agents: only once everything they need is there.
  if (options.canary !== false && checks.every((c) => c.ok)) {
    const { canaryChecks } = await import('./canary.js');
    checks.push(...(await canaryChecks(loaded, io, undefined, options.readStores ?? [])));
  }
  const allOk = checks.every((c) => c.ok);
  if (json) {
    printJson(io.stdout, { ok: allOk, checks });
  } else {
    const lines: string[] = [];
    for (const c of checks) {
      lines.push(`${!c.ok ? 'MISSING' : c.fix ? 'WARNING' : 'ok     '}  ${c.name}: ${c.detail}`);
      if (c.fix) lines.push(`         fix: ${c.fix}`);
    }
    const bad = checks.filter((c) => !c.ok).length;
    lines.push(
      bad
        ? `doctor: ${bad} of ${checks.length} prerequisites missing; no attempt was started${options.canary !== false && !checks.some((c) => c.name.startsWith('agent canary')) ? ' (the agent canary runs once the rest passes)' : ''}`
        : `doctor: all ${checks.length} prerequisites ok${checks.some((c) => c.fix) ? ` (${checks.filter((c) => c.fix).length} warning: see WARNING above)` : ''}`,
    );
    io.stdout.write(lines.join('\n') + '\n');
  }
  return allOk ? EXIT.ok : EXIT.nodeFailed;
}

/**
 * Each cohort's pull-request gate at the cohort's size: a warning (not a missing prerequisite:
 * the run works) when a gate its check fails on cannot be met there -- regression below the
 * cohort's power against its `detect` drop, not-noninferior failing more than 5% of pull
 * requests that change nothing.
 */
async function gateChecks(loaded: LoadedConfig, io: CliIO): Promise<DoctorCheck[]> {
  const { cohortsOf } = await import('./cohorts.js');
  const { gateShortfalls } = await import('./size.js');
  const out: DoctorCheck[] = [];
  for (const c of cohortsOf(loaded.graph.nodes, loaded.inputs, io.env)) {
    const short = await gateShortfalls(loaded, c);
    const name = `pull-request gate of cohort ${c.name} at its size`;
    out.push(
      short.length
        ? {
            name,
            ok: true,
            detail: short.join('; '),
            fix: `pairbench size ${c.name} says what size each gate needs and what it costs; or widen the gate (analyze gate: detect, noninferiority_margin)`,
          }
        : pass(name, 'every gate its check fails on can be met at this size'),
    );
  }
  return out;
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

function memoryCheck(config: BenchConfig, graph: Graph, backends: readonly BackendReport[], floors: DoctorFloors): DoctorCheck {
  const runNodes = graph.nodes.filter((n) => n.kind === runStep).length;
  const runLimit = Math.min(config.concurrency.global, config.concurrency.kinds[runStep.name] ?? config.concurrency.global);
  const concurrent = Math.max(1, Math.min(runLimit, runNodes || 1));
  // A backend may reserve more per run (a container's memory limit); never count less than the floor.
  const perRunMb = Math.max(floors.memoryPerRunBytes / 1024 ** 2, ...backends.flatMap((b) => (b.memory?.perRunMb === undefined ? [] : [b.memory.perRunMb])));
  const need = concurrent * perRunMb * 1024 ** 2;
  const name = `free memory for ${concurrent} concurrent agent run${concurrent === 1 ? '' : 's'}`;

  const host = readMeminfo();
  let free = host.available;
  const parts = [`${host.source} ${formatBytes(host.available)}`];
  for (const engine of backends.flatMap((b) => (b.memory?.engine ? [b.memory.engine] : []))) {
    const c = engine.memory;
    if (!c) {
      parts.push(`running containers not counted: ${engine.name} does not answer`);
      continue;
    }
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
    if (c.totalBytes > 0 && host.total !== null && Math.abs(c.totalBytes - host.total) > host.total * 0.05) {
      const engineFree = c.totalBytes - c.heldBytes;
      parts.push(
        `${engine.name} runs in a VM with ${formatBytes(c.totalBytes)}, of which its running containers hold or may claim ${formatBytes(c.heldBytes)}`,
      );
      free = Math.min(free, engineFree);
    }
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

/** Each sandboxed step's use of its backend, as the backends' doctors take it. */
function sandboxUses(steps: readonly StepConfig[], graph: Graph): (BackendUse & { backend: BackendName })[] {
  return steps.flatMap((s): (BackendUse & { backend: BackendName })[] => {
    const kind = builtinStepKinds.get(s.kind);
    if (!kind?.sandboxed) return [];
    const spec = anySpecOf(s);
    const settings = sandboxOf('sandbox' in spec ? spec : {});
    const configured = 'sandbox' in spec ? spec.sandbox?.backend : undefined;
    const nodes = graph.nodes.filter((n) => n.step.name === s.name);
    return [
      {
        backend: settings.backend as BackendName,
        step: s.name,
        egress: settings.egress,
        image: settings.image,
        resources: settings.resources,
        auto: configured === undefined || configured === 'auto',
        attempts: kind === runStep,
        builtImage: nodes.some((n) => n.upstream.some((x) => x.kind === environmentStep)),
        templateImages: nodes
          .map((n) => (n.annotation as { image?: { name: string; id: string | null } } | undefined)?.image)
          .filter((x): x is { name: string; id: string | null } => Boolean(x)),
      },
    ];
  });
}

/** Each backend some step uses, asked what it checks (in the registry's order of backends). */
async function backendReports(uses: readonly (BackendUse & { backend: BackendName })[], env: CliIO['env']): Promise<BackendReport[]> {
  const fallback = isolationFallback();
  return Promise.all(
    SANDBOX_BACKENDS.filter((b) => uses.some((u) => u.backend === b)).map(async (b) =>
      (await backendDoctor(b))(
        uses.filter((u) => u.backend === b),
        { env, fallback },
      ),
    ),
  );
}

// ---------------------------------------------------------------------------
// Agents and credentials
