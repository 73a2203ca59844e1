/**
 * `pairbench doctor`'s agent canary: one real turn of each run step's agent CLI, in
 * the step's own sandbox and image, against pairbench's scripted model. An agent that
 * cannot start there (its binary or a library missing, a path not mounted) is found
 * before a cohort spends anything. Nothing is recorded; no provider is contacted.
 */
import { existsSync } from 'node:fs';
import { arch, release, type as osType } from 'node:os';
import type { GraphNode, StagedFile } from '../pipeline/step-kind.js';
import type { AgentAdapter } from '../agents/adapter.js';
import { agentAdapters } from '../agents/index.js';
import { canonicalJson } from '../pipeline/canonical-json.js';
import { sha256, sha256File, type Sha256 } from '../pipeline/digest.js';
import { packageVersion } from '../pipeline/package-root.js';
import type { Store } from '../pipeline/store/store.js';
import { AGENT_LOG, sandboxOf, runStep } from '../steps/run.js';
import { specOf } from '../steps/step-spec.js';
import type { PreflightCheck as DoctorCheck } from '../pipeline/step-kind.js';
import type { CliIO, LoadedConfig } from './command-context.js';
import { buildUpstream, executeUnrecorded, firstAsListed, readRunResult, readText } from './probe.js';

/** Staged beside the step's inputs; the run step finds its fake script by this path. */
const CANARY_SCRIPT = '.pairbench-doctor/canary-model.json';
/** One reply and no tool call: the agent starts, reaches its model once, and ends. */
const SCRIPT = { turns: [{ text: 'pairbench doctor canary: done', usage: { input_tokens: 1, output_tokens: 1 } }] };
const CANARY_WALL_SECONDS = 120;

/**
 * What a canary's outcome depends on: the agent's bytes and version, the step's agent and sandbox
 * settings as this machine resolves them, the node's facts (the image IDs), the kernel, Node and
 * pairbench. A canary that passed with the same digest (in this store, or one it reads) is not run
 * again: a CI job whose restored store holds it starts no agent to learn it.
 */
function canaryIdentity(node: GraphNode, adapter: AgentAdapter): Sha256 | undefined {
  const bin = adapter.binary?.();
  if (!bin || !existsSync(bin)) return undefined;
  const spec = specOf(node.step, 'run');
  return sha256(
    canonicalJson({
      check: 'agent canary',
      adapter: adapter.name,
      version: adapter.version(),
      binary: sha256File(bin).digest,
      agent: spec.agent,
      sandbox: sandboxOf(spec),
      facts: node.annotation ?? null,
      machine: `${osType()} ${release()} ${arch()}, node ${process.version}`,
      pairbench: packageVersion(),
    } as never),
  );
}

export async function canaryChecks(loaded: LoadedConfig, io: CliIO, signal?: AbortSignal, readStores: readonly Store[] = []): Promise<DoctorCheck[]> {
  const steps = [...new Set(loaded.graph.nodes.filter((n) => n.kind === runStep).map((n) => n.step))];
  const out: DoctorCheck[] = [];
  for (const step of steps) {
    const spec = specOf(step, 'run');
    const adapter = agentAdapters.get(spec.agent.adapter);
    if (!adapter?.needsModel || adapter.name === 'command') continue;
    const settings = sandboxOf(spec);
    const where = `${settings.backend}${settings.image ? ` image ${settings.image}` : ''}`;
    const name = `agent canary (step ${step.name}: ${adapter.name} ${adapter.version()} in ${where})`;
    const target = firstAsListed(loaded.graph.nodes.filter((n) => n.step === step));
    const key = canaryIdentity(target, adapter);
    const passed = key ? [loaded.ctx.store, ...readStores].map((s) => s.checks.get(key)).find(Boolean) : undefined;
    if (passed) {
      out.push({
        name,
        ok: true,
        detail: `passed at ${passed.at} with these agent bytes, this sandbox and this machine (${passed.detail}): not run again`,
        fix: null,
      });
      continue;
    }
    const check = await canary(loaded, io, target, name, signal, readStores);
    if (check.ok && key) loaded.ctx.store.checks.put(key, check.detail);
    out.push(check);
  }
  return out;
}

async function canary(
  loaded: LoadedConfig,
  io: CliIO,
  target: GraphNode,
  name: string,
  signal: AbortSignal | undefined,
  readStores: readonly Store[],
): Promise<DoctorCheck> {
  const fail = (detail: string, fix: string): DoctorCheck => ({ name, ok: false, detail, fix });
  const built = await buildUpstream(loaded, target, io, signal, undefined, readStores);
  if (!built.ok)
    return fail(
      `the canary's task tree could not be built: ${built.message}`,
      `fix that first ('pairbench run ${target.id.split('/')[0]}' names the failing node)`,
    );
  const spec = specOf(target.step, 'run');
  // The step as configured -- agent, sandbox, image, arm -- but its model is the canary script.
  const node: GraphNode = {
    ...target,
    step: {
      ...target.step,
      spec: {
        ...target.step.spec,
        model: { fake_script: CANARY_SCRIPT },
        limits: { ...(spec.limits ?? {}), turns: 2, wall_seconds: Math.min(spec.limits?.wall_seconds ?? CANARY_WALL_SECONDS, CANARY_WALL_SECONDS) },
      },
    },
  };
  const bytes = Buffer.from(JSON.stringify(SCRIPT));
  const digest = loaded.ctx.store.cas.putBytes(bytes);
  const script: StagedFile = { path: CANARY_SCRIPT, entry: { type: 'file', digest, size: bytes.length, executable: false } };
  const started = Date.now();
  const attempt = await executeUnrecorded(loaded, node, built.records, io, signal, () => undefined, [script]);
  if (!attempt.ok)
    return fail(`the canary attempt could not run: ${attempt.message}`, 'see the message above; pairbench probe runs one full attempt with its log');
  const read = readRunResult(loaded.ctx, attempt.outputs, node.id);
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  if (!read.ok) return fail(`the canary attempt left no usable result: ${read.error}`, 'run pairbench probe for the full log');
  const result = read.value;
  if (result.exit_reason === 'done' && result.turns > 0)
    return {
      name,
      ok: true,
      detail: `started, reached the scripted model (${result.turns} request${result.turns === 1 ? '' : 's'}) and ended in ${seconds} s`,
      fix: null,
    };
  const log = readText(loaded.ctx, attempt.outputs, AGENT_LOG.name) ?? '';
  const tail = log.trimEnd().split('\n').slice(-3).join(' | ');
  return fail(
    result.infra_error
      ? `${result.infra_error}`
      : `the canary turn ended ${result.exit_reason} after ${result.turns} model request(s)${tail ? `: ${tail}` : ''}`,
    'make the agent runnable in this sandbox (a missing shared library or binary belongs in the image; a path outside the mounted ones is not visible), then run doctor again',
  );
}
