import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, normalize, relative } from 'node:path';
import type { AgentAdapter, AttemptContext, McpServer } from '../agents/adapter.js';
import { fingerprintLines, foldLine, lineDigest, type Marker } from '../gateway/markers.js';
import { agentAdapters } from '../agents/index.js';
import type { Json } from '../pipeline/canonical-json.js';
import type { StepConfig } from '../pipeline/config/load.js';
import type { Diagnostic } from '../pipeline/diagnostic.js';
import { sha256 } from '../pipeline/digest.js';
import { err, errorMessage, ok, type Result } from '../pipeline/result.js';
import type { ExecutionContext, FileInputSpec, GraphNode, StepKind } from '../pipeline/step-kind.js';
import type { OutputManifest } from '../pipeline/store/action-cache.js';
import { bubblewrapWorksSync } from '../sandboxes/bubblewrap.js';
import { sandboxBackend, type BackendName } from '../sandboxes/index.js';
import type { EgressMode, Mount, Sandbox } from '../sandboxes/sandbox.js';
import { checkTasks, taskOf } from './agent-step-config.js';
import { ENVIRONMENT_OUTPUTS, inEnvironment, startingPoint } from './environment.js';
import type { ModelSession } from './model-session.js';
import { copyWritten, diffSnapshots, snapshot } from './workspace.js';

export interface ArmSpec {
  /** A bias-of-prompt arm: another arm's treatment with its steering lines removed. */
  ablate?: { from: string; drop_lines: string[] };
  files?: Record<string, string>;
  mcp_servers?: Record<string, McpServer>;
  prompt_append?: string;
  env?: Record<string, string>;
  marker?: string;
}

export interface SandboxSettings {
  backend?: BackendName | 'auto';
  egress?: EgressMode;
  allow?: string[];
  image?: string;
  resources?: { cpus?: number; memory_mb?: number; pids?: number };
}

export interface RunSpec {
  /** Seeds the interleaved order in which attempts are queued (preregistered with the cohort). */
  order_seed?: number;
  agent: { adapter: string; model?: string; flags?: string[]; command?: string };
  arms: Record<string, ArmSpec>;
  limits?: { turns?: number; wall_seconds?: number; tokens?: number; cost_usd?: number; max_file_mb?: number };
  sandbox?: SandboxSettings;
  /** api_key_env: the host variable holding the real key; the gateway adds it upstream, the agent never sees it. */
  model?: { fake_script?: string; upstream?: string; api_key_env?: string };
}

export type ExitReason = 'done' | 'turn-cap' | 'time-cap' | 'token-cap' | 'cost-cap' | 'agent-crash' | 'infra-error';

const spec = (step: StepConfig) => step.spec as unknown as RunSpec;

/** A config path as the input resolver records it (`./a//b.md` -> `a/b.md`). */
function normalizedPath(p: string): string {
  return normalize(p).replaceAll('\\', '/').replace(/\/$/, '');
}

/** An arm as it runs: an ablation arm takes its base arm's treatment, minus the lines it drops. */
export function armOf(s: { arms: Record<string, ArmSpec> }, name: string): ArmSpec {
  const a = s.arms[name] ?? {};
  if (!a.ablate) return a;
  const base = s.arms[a.ablate.from] ?? {};
  const { ablate, ...own } = a;
  return { ...base, ...own, ablate, env: { ...(base.env ?? {}), ...(own.env ?? {}) }, ...(base.prompt_append ? { prompt_append: ablated(base.prompt_append, ablate) } : {}) };
}

/** The text with every line matching one of the arm's `drop_lines` patterns removed. */
export function ablated(text: string, ablate: ArmSpec['ablate']): string {
  if (!ablate) return text;
  const patterns = ablate.drop_lines.map((p) => new RegExp(p, 'i')); // steering lines are prose: case does not matter
  return text
    .split('\n')
    .filter((line) => !patterns.some((p) => p.test(line)))
    .join('\n');
}
const GATEWAY_PORT_INSIDE = 41_000;

export function limitsOf(s: { limits?: RunSpec['limits'] }) {
  return {
    turns: s.limits?.turns ?? 30,
    wallSeconds: s.limits?.wall_seconds ?? 600,
    tokens: s.limits?.tokens ?? null,
    costUsd: s.limits?.cost_usd ?? null,
    // A file the attempt leaves that is larger than this is refused (recorded, not kept).
    maxFileMb: s.limits?.max_file_mb ?? 512,
  };
}

let autoBackend: 'bubblewrap' | 'local' | undefined;

/**
 * `backend: auto` (the shipped example's default): bubblewrap when it can make a
 * sandbox on this machine, else local with egress open and marked not enforced.
 * The resolved backend is what the key and the receipts record.
 */
function resolveAuto(): 'bubblewrap' | 'local' {
  autoBackend ??= bubblewrapWorksSync() ? 'bubblewrap' : 'local';
  return autoBackend;
}

export function sandboxOf(s: { sandbox?: SandboxSettings }) {
  const b = s.sandbox ?? {};
  // The default is the best isolation this machine has: an unconfigured run never runs unisolated silently.
  const auto = b.backend === undefined || b.backend === 'auto';
  const backend: BackendName = auto ? resolveAuto() : (b.backend as BackendName);
  return {
    backend,
    egress: auto ? (backend === 'local' ? 'open' : (b.egress ?? 'none')) : (b.egress ?? (backend !== 'local' ? 'none' : 'open')),
    allow: b.allow ?? [],
    image: b.image ?? null,
    resources: b.resources ?? {},
  } as const;
}

/**
 * The step's sandbox for one node: a per-task image template (`sweb.eval.x86_64.{instance_id}`)
 * is the image ID the CLI resolved when it planned the node (GraphNode.annotation, part of its key).
 */
export function sandboxFor(node: GraphNode, s: { sandbox?: SandboxSettings }): Result<ReturnType<typeof sandboxOf>, string> {
  const settings = sandboxOf(s);
  if (!settings.image?.includes('{')) return ok(settings);
  const resolved = (node.annotation as { image?: { name: string; id: string | null } } | undefined)?.image;
  if (!resolved) return err(`the image template ${settings.image} was not resolved for ${node.id} (it is resolved when a run is planned by the CLI)`);
  if (!resolved.id) return err(`image ${resolved.name} (from ${settings.image}) is not in the engine: build or load it locally (docker build / docker load / docker import); pairbench never pulls`);
  return ok({ ...settings, image: resolved.id });
}

/**
 * The arm's marker: the fingerprint of its treatment and where the agent gives it to
 * the model (gateway/markers.ts). Taken from the staged bytes (the ones in the key).
 * Only the node's own arm is checked here: checking another arm's marker would make
 * this attempt's key depend on that arm's files. The cross-arm check (no control
 * received a treatment) is analyze's, from the instruction lines each attempt records.
 */
function markerOf(arm: ArmSpec, adapter: AgentAdapter, staged: ExecutionContext['files'], read: (d: StagedDigest) => string): Marker | undefined {
  const files = Object.entries(arm.files ?? {});
  const instruction = files.map(([dest, src]) => ({ src, scope: adapter.deliveryScope(dest) })).find((f) => f.scope);
  if (arm.marker) return { lines: [foldLine(arm.marker)], scope: instruction?.scope ?? { kind: 'anywhere' } };
  // An MCP arm is delivered when its tools are offered to the model (Claude Code names them mcp__<server>__<tool>).
  const server = Object.keys(arm.mcp_servers ?? {})[0];
  if (server) return { lines: [], scope: { kind: 'tools', prefix: `mcp__${server}__` } };
  if (instruction?.scope) {
    const entry = staged.find((f) => f.path === normalizedPath(instruction.src))?.entry;
    if (entry?.type !== 'file') return undefined;
    const lines = fingerprintLines(ablated(read(entry.digest), arm.ablate));
    return lines.length ? { lines, scope: instruction.scope } : undefined;
  }
  if (arm.prompt_append) {
    const lines = fingerprintLines(ablated(arm.prompt_append, arm.ablate));
    return lines.length ? { lines, scope: { kind: 'prompt' } } : undefined;
  }
  return undefined;
}

type StagedDigest = ExecutionContext['files'][number]['entry']['digest'];

/** Starts the sandbox with the gateway reachable; a failure here is infrastructure, not the agent. */
async function startSandbox(
  settings: ReturnType<typeof sandboxOf> & { workdir?: string },
  workspace: string,
  mounts: Mount[],
  model: ModelSession | undefined,
  label: string,
): Promise<Result<Sandbox, { transient: boolean; message: string }>> {
  const backend = await sandboxBackend(settings.backend);
  const available = await backend.available();
  if (!available.ok) return err({ transient: false, message: `sandbox ${settings.backend} is not available: ${available.error}` });
  const created = await backend.create({
    workspace,
    mounts,
    ...(settings.image ? { image: settings.image } : {}),
    ...(settings.workdir ? { workdir: settings.workdir } : {}),
    resources: { ...(settings.resources.cpus ? { cpus: settings.resources.cpus } : {}), ...(settings.resources.memory_mb ? { memoryMb: settings.resources.memory_mb } : {}), ...(settings.resources.pids ? { pids: settings.resources.pids } : {}) },
    egress: { mode: settings.egress, allow: [...settings.allow] },
    forwards: model?.socket ? [{ socket: model.socket, port: GATEWAY_PORT_INSIDE }] : [],
    env: { PATH: '/usr/local/bin:/usr/bin:/bin', LANG: 'C.UTF-8' },
    labels: { 'pairbench.node': label },
  });
  if (created.ok) return ok(created.value);
  // A sandbox that failed to start is an infrastructure fault of this attempt; a backend that
  // is missing or cannot enforce the egress asked for is a setup problem: the node fails.
  return err({ transient: created.error.reason === 'start-failed', message: `${created.error.reason}: ${created.error.message}` });
}

/** The provider refused or failed (auth, rate limit, overload, server error): not the agent's doing. */
/** What an agent that never reached its model said on the way out: its last line of stderr (or stdout), else its exit. */
function startFailure(r: { exitCode: number | null; signal: string | null; timedOut: boolean; stdout: string; stderr: string }): string {
  const last = (text: string) => text.split('\n').map((l) => l.trim()).filter(Boolean).pop();
  const said = last(r.stderr) ?? last(r.stdout);
  const how = r.timedOut ? 'hung until the time cap' : r.signal ? `killed by ${r.signal}` : `exit code ${r.exitCode}`;
  return `${how} before its first model request${said ? `: ${said.length > 300 ? `${said.slice(0, 300)}...` : said}` : ''}`;
}

function isProviderFault(status: number): boolean {
  return status === 401 || status === 403 || status === 408 || status === 429 || status >= 500;
}

/** How each provider takes its key. */
function upstreamAuthFor(adapter: string, key: string): Record<string, string> {
  return adapter === 'codex' || adapter === 'command' ? { authorization: `Bearer ${key}` } : { 'x-api-key': key };
}

/** The endpoints the gateway forwards for an adapter: its provider's model API (a user's command: either). */
function gatewayProvider(adapter: string): 'anthropic' | 'openai' | 'any' {
  return adapter === 'claude-code' ? 'anthropic' : adapter === 'codex' ? 'openai' : 'any';
}

/** The model provider an adapter talks to (part of what arms must share). */
function providerOf(adapter: string): string {
  return adapter === 'claude-code' ? 'anthropic' : adapter === 'codex' ? 'openai' : adapter === 'command' ? 'custom' : 'none';
}

/**
 * `run` (task x arm x rep): one attempt of the agent on the materialized tree plus
 * the arm's treatment, in a fresh sandbox, talking to its model only through the
 * recording gateway. Never sees the verifier or the solution (but for `oracle`).
 */
export const runStep: StepKind = {
  name: 'run',
  // 3: an agent that never reached its model is an infrastructure fault; scripted replies are marked and unpriced.
  // 2: the sandbox closed before the workspace is read; delivery by fingerprint and scope.
  version: 3,

  check(step) {
    const s = spec(step);
    const problems: Diagnostic[] = [...checkTasks(step)];
    const at = (f: (string | number)[]) => ({ field: `steps.${step.name}.${f.join('.')}`, location: step.source.locate([...step.path, ...f]) });
    if (!agentAdapters.has(s.agent.adapter)) {
      problems.push({ ...at(['agent', 'adapter']), message: `unknown agent adapter "${s.agent.adapter}"; known: ${[...agentAdapters.keys()].join(', ')}` });
    }
    const arms = step.matrix.find((d) => d.name === 'arm');
    if (!arms) problems.push({ ...at(['matrix']), message: 'a run step fans out over arms: give it matrix.arm' });
    for (const a of arms?.values ?? []) {
      if (!s.arms[a]) problems.push({ ...at(['arms']), message: `arm "${a}" (in matrix.arm) has no entry under arms` });
    }
    // An arm's env may not redirect the agent's model, home or network: arms differ only in their treatment.
    const RESERVED = /^(ANTHROPIC_|OPENAI_)|^(PAIRBENCH_PROMPT|PAIRBENCH_MODEL|PAIRBENCH_MODEL_URL|HOME|CODEX_HOME|PATH|IS_SANDBOX|HTTPS?_PROXY|https?_proxy|NO_PROXY|no_proxy)$/;
    for (const [name, a] of Object.entries(s.arms)) {
      for (const k of Object.keys(a.env ?? {})) {
        if (RESERVED.test(k)) problems.push({ ...at(['arms', name, 'env', k]), message: `arm "${name}" sets ${k}, which pairbench controls (the model gateway, the private home, the network)` });
      }
    }
    for (const [name, a] of Object.entries(s.arms)) {
      if (!a.ablate) continue;
      if (!s.arms[a.ablate.from] || s.arms[a.ablate.from]!.ablate) problems.push({ ...at(['arms', name, 'ablate', 'from']), message: `arm "${name}" ablates "${a.ablate.from}", which is not an arm with its own treatment` });
      for (const p of a.ablate.drop_lines) {
        try {
          new RegExp(p, 'i');
        } catch (e) {
          problems.push({ ...at(['arms', name, 'ablate', 'drop_lines']), message: `"${p}" is not a regular expression: ${errorMessage(e)}` });
        }
      }
    }
    if (!step.matrix.some((d) => d.name === 'rep')) problems.push({ ...at(['matrix']), message: 'a run step needs matrix.rep (repetitions, e.g. rep: 3)' });
    const needsModel = agentAdapters.get(s.agent.adapter)?.needsModel && s.agent.adapter !== 'command';
    if (needsModel && !s.model?.fake_script && !s.model?.upstream) problems.push({ ...at(['model']), message: `agent ${s.agent.adapter} needs a model: model.upstream (URL) or model.fake_script` });
    return problems;
  },

  keyConfig(node: GraphNode): Json {
    const s = spec(node.step);
    const task = taskOf(node);
    const arm = armOf(s, node.matrix['arm']!);
    const adapter = agentAdapters.get(s.agent.adapter)!;
    return {
      task: { prompt: task.prompt, allowed_paths: task.allowedPaths },
      arm: { ablate: arm.ablate ?? null, files: arm.files ?? {}, mcp_servers: arm.mcp_servers ?? {}, prompt_append: arm.prompt_append ?? null, env: arm.env ?? {}, marker: arm.marker ?? null },
      agent: { adapter: adapter.name, version: adapter.version(), model: s.agent.model ?? null, flags: s.agent.flags ?? [], command: s.agent.command ?? null },
      limits: limitsOf(s),
      sandbox: sandboxOf(s),
      model: { upstream: s.model?.upstream ?? null, fake: Boolean(s.model?.fake_script), api_key_env: s.model?.api_key_env ?? null },
      // The script's bytes are a file input; its path here is relative, so machines share keys.
      solution: adapter.name === 'oracle' ? { patch: task.solution.patch, script: task.solution.script ? relative(node.step.rootDir, task.solution.script) : null } : null,
      // What a task's own environment (task.toml) sets: the agent's time limit, CPUs, memory, network.
      ...(task.environment ? { environment: task.environment } : {}),
      ...(task.workdir ? { workdir: task.workdir } : {}),
    } as unknown as Json;
  },

  fileInputs(node): FileInputSpec[] {
    const s = spec(node.step);
    const arm = armOf(s, node.matrix['arm']!);
    const out: FileInputSpec[] = Object.entries(arm.files ?? {}).map(([dest, src]) => ({ pattern: src, field: ['arms', node.matrix['arm']!, 'files', dest] }));
    if (s.model?.fake_script) out.push({ pattern: s.model.fake_script, field: ['model', 'fake_script'] });
    // The oracle's solution directory (its solve script and what it reads) is an input of its attempts (a patch is in keyConfig as text).
    const script = s.agent.adapter === 'oracle' ? taskOf(node).solution.script : null;
    if (script) out.push({ pattern: relative(node.step.rootDir, dirname(script)), field: ['agent'] });
    return out;
  },

  /**
   * Attempts are queued in a preregistered, seeded order that interleaves the arms
   * pair by pair (never all of control, then all of treatment), so drift in the
   * model service or the machine hits every arm alike.
   */
  order(nodes) {
    const seed = String(spec(nodes[0]!.step).order_seed ?? 0);
    const pairs = new Map<string, GraphNode[]>();
    for (const n of nodes) {
      const pair = `${n.matrix['task']}/${n.matrix['rep']}`;
      pairs.set(pair, [...(pairs.get(pair) ?? []), n]);
    }
    const rank = (s: string) => sha256(`${seed}:${s}`);
    return [...pairs.entries()]
      .sort(([a], [b]) => (rank(a) < rank(b) ? -1 : 1))
      .flatMap(([pair, arms]) => arms.sort((a, b) => (rank(`${pair}:${a.matrix['arm']}`) < rank(`${pair}:${b.matrix['arm']}`) ? -1 : 1)));
  },

  selectUpstream: (_node, upstream) =>
    upstream.kind.name === 'materialize' ? ['tree'] : upstream.kind.name === 'environment' ? ENVIRONMENT_OUTPUTS : upstream.kind.name === 'certify' ? ['verdict.json'] : undefined,

  describeConfigField(path) {
    const [a, b] = path;
    if (a === 'agent' && b === 'version') return 'agent version';
    if (a === 'task' && b === 'prompt') return 'prompt';
    return path.join('.');
  },

  async execute(ctx: ExecutionContext) {
    const s = spec(ctx.node.step);
    const task = taskOf(ctx.node);
    const armName = ctx.node.matrix['arm']!;
    const arm = armOf(s, armName);
    const adapter = agentAdapters.get(s.agent.adapter)!;
    const log = (line: string) => writeFileSync(ctx.logFile, line + '\n', { flag: 'a' });
    // The task's own environment (a Harbor task's image, at its WORKDIR) when the step has one.
    const point = startingPoint(ctx);
    if (!point) return err({ reason: 'internal', message: 'run needs a materialize (or environment) upstream with a tree' });
    const configured = sandboxFor(ctx.node, s);
    if (!configured.ok) return err({ reason: 'infra', message: configured.error });
    const settings = inEnvironment(configured.value, point.environment, task);
    if (point.environment && settings.backend !== 'docker') {
      return err({ reason: 'refused', message: `task ${task.id} runs in the image its environment step built: give step ${ctx.node.step.name} sandbox: { backend: docker }` });
    }
    // A time limit the task sets for its agent applies unless the step sets one.
    const limits = { ...limitsOf(s), ...(s.limits?.wall_seconds === undefined && task.environment?.agentTimeoutSec ? { wallSeconds: Math.ceil(task.environment.agentTimeoutSec) } : {}) };

    // 0. A task that failed certification is never run.
    const certifyIds = new Set(ctx.node.upstream.filter((u) => u.kind.name === 'certify').map((u) => u.id));
    const cert = ctx.upstream.find((u) => certifyIds.has(u.node))?.outputs['verdict.json'];
    if (cert) {
      const receipt = JSON.parse(ctx.artifacts.read(cert.digest).toString('utf8')) as { verdict: string; reasons: string[] };
      if (receipt.verdict !== 'certified') {
        return err({ reason: 'refused', message: `task ${task.id} failed certification: ${receipt.reasons.join('; ')}` });
      }
    }

    // 1. The workspace: the materialized tree, then the arm's treatment files.
    const ws = join(ctx.workDir, 'ws');
    // Unsandboxed (local), the agent is a plain process: its HOME is outside the store, so no
    // path in its environment leads there (its working directory still does: see the README).
    const home = settings.backend === 'local' ? mkdtempSync(join(tmpdir(), 'pairbench-home-')) : join(ctx.workDir, 'home');
    mkdirSync(home, { recursive: true });
    ctx.artifacts.materialize(point.tree, ws);
    for (const [dest, src] of Object.entries(arm.files ?? {})) {
      const staged = ctx.files.find((f) => f.path === normalizedPath(src));
      if (!staged) return err({ reason: 'internal', message: `treatment file ${src} was not staged` });
      mkdirSync(join(ws, dest, '..'), { recursive: true });
      if (arm.ablate) writeFileSync(join(ws, dest), ablated(ctx.artifacts.read(staged.entry.digest).toString('utf8'), arm.ablate));
      else ctx.artifacts.materialize(staged.entry, join(ws, dest));
    }
    const before = await snapshot(ws);

    // 2. The model, through the recording gateway, which also checks the arm's marker was delivered.
    const markers: Record<string, Marker> = {};
    const marker = markerOf(arm, adapter, ctx.files, (d) => ctx.artifacts.read(d).toString('utf8'));
    if (marker) markers[armName] = marker;
    const fake = s.model?.fake_script ? ctx.files.find((f) => f.path === normalizedPath(s.model!.fake_script!)) : undefined;
    let model: ModelSession | undefined;
    const outDir = join(ctx.workDir, 'out');
    mkdirSync(outDir, { recursive: true });
    const sandboxed = settings.backend !== 'local';
    if (adapter.needsModel && (s.model?.upstream || fake)) {
      const { openModel } = await import('./model-session.js');
      model = await openModel({
        ...(fake ? { fakeScript: JSON.parse(ctx.artifacts.read(fake.entry.digest).toString('utf8')) } : { upstream: s.model!.upstream! }),
        caps: { ...(limits.tokens ? { maxTokens: limits.tokens } : {}), ...(limits.costUsd ? { maxCostUsd: limits.costUsd } : {}) },
        ...(s.model?.api_key_env && !fake ? { upstreamAuth: upstreamAuthFor(adapter.name, ctx.hostEnv[s.model.api_key_env] ?? '') } : {}),
        markers,
        provider: gatewayProvider(adapter.name),
        logFile: join(outDir, 'gateway.jsonl'),
        socketDir: sandboxed ? join(ctx.workDir, 'gw') : undefined,
      });
    }

    if (adapter.needsModel && adapter.name !== 'command' && !model) {
      return err({ reason: 'internal', message: `agent ${adapter.name} needs its model, but no gateway was opened (model.fake_script not staged, or no model.upstream)` });
    }
    const actx: AttemptContext = {
      prompt: arm.prompt_append ? `${task.prompt}\n\n${arm.prompt_append}` : task.prompt,
      workdir: sandboxed ? (settings.workdir ?? '/work') : ws,
      model: s.agent.model ?? 'default',
      flags: s.agent.flags ?? [],
      limits: { turns: limits.turns, wallSeconds: limits.wallSeconds },
      home: sandboxed ? '/tmp/home' : home,
      sandboxed,
      ...(model ? { gatewayUrl: sandboxed ? `http://127.0.0.1:${GATEWAY_PORT_INSIDE}` : model.url } : {}),
      ...(s.agent.command ? { command: s.agent.command } : {}),
      ...(arm.mcp_servers ? { mcpServers: arm.mcp_servers } : {}),
      ...(adapter.name === 'oracle' ? { solution: task.solution } : {}),
    };
    let sandbox: Sandbox | undefined;
    const started = Date.now();
    const clock = performance.now();
    try {
      const inv = adapter.invocation(actx);
      await adapter.beforeRun?.(actx, ws);
      const sb = await startSandbox(settings, ws, inv?.mounts ?? [], model, ctx.node.id);
      if (!sb.ok) {
        log(sb.error.message);
        if (!sb.error.transient) return err({ reason: 'infra', message: `infrastructure: ${sb.error.message}` });
        ctx.doNotCache(`infrastructure error: ${sb.error.message}`);
      }
      sandbox = sb.ok ? sb.value : undefined;
      const result =
        inv && sandbox
          ? await sandbox.exec(inv.argv, { env: { ...(arm.env ?? {}), ...inv.env, ...(sandboxed ? { HOME: '/tmp/home' } : {}) }, timeoutMs: limits.wallSeconds * 1000, signal: ctx.signal })
          : { exitCode: sandbox ? 0 : null, signal: null, timedOut: false, stdout: '', stderr: sb.ok ? '' : sb.error.message, durationMs: 0 };
      // The agent's own time: its process from start to exit on a monotonic clock, whatever the
      // scheduler's load did to the sandbox start, the workspace copy or the snapshot around it.
      const wallMs = result.durationMs;
      // Every process of the attempt is dead before its workspace is read: a process left
      // behind could otherwise swap a directory for a link to /etc while it is copied.
      const receipt = sandbox?.receipt();
      await sandbox?.close();
      writeFileSync(join(outDir, 'agent.log'), `$ ${inv?.argv.join(' ') ?? '(nothing)'}\n--- stdout\n${result.stdout}\n--- stderr\n${result.stderr}\n`);
      const parsed = adapter.parse(result, actx, adapter.version());
      const gw = model?.summary();
      // A provider that failed or refused (transport errors, 401/403/429/5xx) while the agent did not
      // finish normally is infrastructure, whatever cap the agent's retries then ran into.
      const providerFault = Boolean(gw && (gw.upstream_errors > 0 || model!.statuses().some(isProviderFault)) && (result.exitCode !== 0 || result.timedOut));
      // An agent CLI that ended without one model request never ran: its binary, a library or a
      // path it needs is not there in this sandbox. That is the harness's fault, never the agent's.
      const didNotStart = Boolean(sandbox && gw && adapter.name !== 'command' && gw.model_requests === 0 && !gw.cap_hit);
      const exitReason: ExitReason = !sandbox
        ? 'infra-error'
        : gw?.cap_hit
          ? gw.cap_hit
          : providerFault || didNotStart
            ? 'infra-error'
            : result.timedOut
              ? 'time-cap'
              : parsed.hitTurnCap
                ? 'turn-cap'
                : result.exitCode !== 0
                  ? 'agent-crash'
                  : 'done';
      // 3. What the attempt changed (the verifier sees only this, applied to a fresh tree).
      const changes = diffSnapshots(before, await snapshot(ws, { maxFileBytes: limits.maxFileMb * 1024 * 1024 }));
      copyWritten(changes, ws, join(outDir, 'changed'));
      writeFileSync(join(outDir, 'changes.json'), JSON.stringify(changes, null, 2) + '\n');
      writeFileSync(join(outDir, 'trajectory.json'), JSON.stringify(parsed.trajectory, null, 2) + '\n');
      // Host paths (this attempt's work directory, the store, the project) are redacted before the
      // logs are stored: they differ per machine and per run, and say nothing about the agent.
      const hostPaths = [
        { path: ctx.workDir, as: '<work>' },
        { path: ctx.config.storeDir, as: '<store>' },
        { path: ctx.config.rootDir, as: '<project>' },
      ];
      const { redact } = await import('./export/bundle.js');
      const infraCause = exitReason !== 'infra-error'
        ? null
        : !sandbox
          ? `sandbox failed to start: ${sb.ok ? '' : sb.error.message}`
          : didNotStart
            ? `agent did not start: ${startFailure(result)}`
            : `model provider: ${gw?.upstream_errors ? 'unreachable' : `HTTP ${model!.statuses().filter(isProviderFault).join(', ')}`}`;
      if (exitReason === 'infra-error' && sandbox) {
        ctx.doNotCache(didNotStart ? `infrastructure error: ${infraCause}` : 'infrastructure error: the model provider failed or refused (see gateway.jsonl)');
      }
      const sandboxReceipt = receipt ?? {
        backend: settings.backend,
        isolation: 'unknown',
        egress_mode: settings.egress,
        egress_enforced: false,
        egress_log: [],
        image_id: settings.image,
        resources: { cpus: settings.resources.cpus ?? null, memory_mb: settings.resources.memory_mb ?? null, pids: settings.resources.pids ?? null },
      };
      const resultJson = {
        schema_version: 1,
        task: task.id,
        arm: armName,
        rep: Number(ctx.node.matrix['rep']),
        agent: { adapter: adapter.name, version: adapter.version(), model: actx.model, provider: providerOf(adapter.name) },
        exit_reason: exitReason,
        infra_error: infraCause === null ? null : redact(infraCause, { hostPaths }),
        started_at: new Date(started).toISOString(),
        ended_at: new Date(started + (performance.now() - clock)).toISOString(),
        exit_code: result.exitCode,
        wall_ms: wallMs,
        // Sandbox start and close, workspace snapshot and the rest the harness did for this attempt.
        harness_ms: Math.max(0, Math.round(performance.now() - clock) - wallMs),
        turns: gw ? gw.model_requests : parsed.turns,
        agent_reported_turns: parsed.turns,
        tool_calls: gw ? gw.tool_calls : parsed.toolCalls,
        usage: gw?.usage ?? null,
        // A scripted model is no provider: its replies have no price, whatever the caps counted.
        cost_usd: fake ? null : (gw?.cost_usd ?? null),
        cost_confidence: fake ? 'none' : gw ? gw.cost_confidence : 'free',
        // Where the model's replies came from: a reader must never mistake scripted outcomes for a model's.
        model_source: fake ? 'scripted' : model ? 'provider' : 'none',
        delivered: gw?.delivered ?? {},
        // The fingerprint this arm is delivered by, and every instruction line this attempt's model
        // received (digests): analyze checks that no control received a treatment's fingerprint.
        delivery: { marker: marker ? { scope: marker.scope, lines: marker.lines.map(lineDigest) } : null, instruction_lines: gw?.instruction_lines ?? [] },
        files_changed: Object.keys(changes.written).length + changes.deleted.length,
        sandbox: sandboxReceipt,
      };
      writeFileSync(join(outDir, 'result.json'), JSON.stringify(resultJson, null, 2) + '\n');
      log(`${ctx.node.id}: ${exitReason} in ${(wallMs / 1000).toFixed(2)} s, ${resultJson.files_changed} file(s) changed`);
      if (!model) writeFileSync(join(outDir, 'gateway.jsonl'), '');
      for (const name of ['trajectory.json', 'gateway.jsonl', 'agent.log']) {
        const file = join(outDir, name);
        writeFileSync(file, redact(readFileSync(file, 'utf8'), { hostPaths }));
      }
      const outputs: OutputManifest = {};
      for (const name of ['changes.json', 'changed', 'result.json', 'trajectory.json', 'gateway.jsonl', 'agent.log']) {
        outputs[name] = ctx.artifacts.putPath(join(outDir, name));
      }
      return ok(outputs);
    } catch (e) {
      log(errorMessage(e));
      return err({ reason: 'infra', message: `attempt could not run: ${errorMessage(e)}` });
    } finally {
      await sandbox?.close();
      await model?.close();
      if (settings.backend === 'local') rmSync(home, { recursive: true, force: true });
    }
  },
};
