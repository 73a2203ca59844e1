import { err, type Result } from '../pipeline/result.js';
import { printJson, printJsonErrors } from './json-output.js';
import { closest, diagnosticToJson } from '../pipeline/diagnostic.js';
import { executeUnrecorded as executeUnrecordedNode, plan, run } from '../pipeline/engine.js';
import { lookup } from '../pipeline/caching/local-cache.js';
import { withUpstream } from '../pipeline/dag.js';
import type { GraphNode, StagedFile } from '../pipeline/step-kind.js';
import type { ActionRecord, OutputManifest } from '../pipeline/store/action-cache.js';
import type { Store } from '../pipeline/store/store.js';
import { DEFAULT_WEIGHTS } from '../stats/spec.js';
import type { CostWeights } from '../stats/types.js';
import { AGENT_LOG, armOf, BUDGET_EXITS, RUN_RESULT, runStep, type RunOutput } from '../steps/run.js';
import type { RunResult } from '../steps/run-result.js';
import { readJsonArtifact } from '../pipeline/artifact.js';
import type { CliIO, LoadedConfig } from './command-context.js';
import { EXIT } from './command.js';
import { specIf, specOf } from '../steps/step-spec.js';
import { certifyStep } from '../steps/certify.js';
import { analyzeStep } from '../steps/analyze-step.js';

/**
 * `pairbench probe [NODE]`: prices a cohort from ONE real attempt before it is funded.
 *
 * Runs one attempt of one arm (the first run node, or the one named) exactly as the
 * engine would -- the materialized tree (built or reused through the engine, cached),
 * the arm's files staged through the store's CAS, a fresh work dir -- but calls the
 * run step's execute() directly, so nothing is recorded: no attempt record, no
 * certify, no verify (the tokens are in the attempt whether or not its patch is
 * correct). The attempt's result.json holds the gateway's usage, read from the
 * provider's own replies; the projection multiplies it by the run step's attempts
 * (tasks x arms x reps). If the node already has a recorded attempt, that one is
 * read instead and nothing new is spent.
 */

type TokenUsage = { input_tokens: number; output_tokens: number; cache_write_tokens: number; cache_read_tokens: number };

/** The fields of a run's result.json the probe reads. */
type AttemptResult = Pick<RunResult, 'exit_reason' | 'usage' | 'cost_usd' | 'cost_confidence' | 'wall_ms' | 'turns' | 'agent'>;

export interface ProbeFigures {
  usage: TokenUsage | null;
  total_tokens: number | null;
  weighted_tokens: number | null;
  cost_usd: number | null;
  wall_ms: number;
  turns: number;
}

export interface ProbeReport {
  ok: boolean;
  node: string;
  step: string;
  /** `probe`: an attempt run now and not recorded; `recorded`: the node's cached attempt, nothing run. */
  source: 'probe' | 'recorded';
  exit_reason: string;
  agent: AttemptResult['agent'];
  cost_confidence: string;
  weights: CostWeights;
  per_attempt: ProbeFigures;
  cohort: {
    attempts: number;
    dimensions: Record<string, number>;
    concurrency: number;
    projected: Omit<ProbeFigures, 'usage' | 'wall_ms' | 'turns'> & {
      usage: TokenUsage | null;
      /** Sum of every attempt's wall time (agent time). */
      wall_ms_total: number;
      /** Elapsed time at the run step's concurrency: ceil(attempts / concurrency) x one attempt. */
      wall_ms_elapsed: number;
    };
  };
  caveats: string[];
}

export interface ProbeOptions {
  /** Aborts the attempt (wire SIGINT/SIGTERM to it as `run` does). */
  signal?: AbortSignal;
}

const silent = { event: () => undefined };

export async function runProbe(loaded: LoadedConfig, io: CliIO, json: boolean, node?: string, options: ProbeOptions = {}): Promise<number> {
  const usage = (message: string, hint: string) => {
    if (json) printJsonErrors(io.stdout, [{ message, ...(hint ? { hint } : {}) }]);
    else io.stderr.write(`pairbench probe: ${message}\n${hint}\n`);
    return EXIT.usage;
  };
  const failed = (message: string, logTail = '') => {
    if (json) printJson(io.stdout, { ok: false, errors: [diagnosticToJson({ message })], ...(logTail ? { log: logTail } : {}) });
    else io.stderr.write(`pairbench probe: ${message}\n${logTail ? `${logTail}\n` : ''}`);
    return EXIT.nodeFailed;
  };

  const picked = pickRunNode(loaded, node);
  if (!picked.ok) return usage(picked.message, picked.hint);
  const target = picked.node;
  const { ctx, inputs } = loaded;
  const note = (line: string) => {
    if (!json) io.stderr.write(line + '\n');
  };

  // An attempt already recorded for this exact key prices the cohort without spending anything.
  const entries = plan(ctx, inputs, closure(loaded, [target]), io.env);
  const own = entries.find((e) => e.node === target.id);
  let result: AttemptResult;
  let source: ProbeReport['source'];
  const transient: string[] = [];
  if (own?.status === 'cached') {
    const found = lookup(ctx.store, own.key);
    if (found.status !== 'hit') return failed(`the record of ${target.id} could not be read`);
    const read = readRunResult(ctx, found.record.outputs, target.id);
    if (!read.ok) return failed(read.error);
    result = read.value;
    source = 'recorded';
    note(`${target.id} already has a recorded attempt; pricing from it (nothing new is run)`);
  } else {
    // 1. What the attempt reads: its upstream (materialize), built or reused through the engine. Never certify.
    note(`probe: ${target.id} (one attempt, not recorded; no certify, no verify)`);
    const built = await buildUpstream(loaded, target, io, options.signal, note);
    if (!built.ok) return failed(built.message);
    const records = built.records;
    // 2. The attempt, as engine.executeNode would run it, minus the record.
    const attempt = await executeUnrecorded(loaded, target, records, io, options.signal, (reason) => transient.push(reason));
    if (!attempt.ok) return failed(`the probe attempt ${target.id} failed: ${attempt.message}`, attempt.logTail);
    const read = readRunResult(ctx, attempt.outputs, target.id);
    if (!read.ok) return failed(read.error);
    result = read.value;
    source = 'probe';
    if (result.exit_reason !== 'done') {
      const log = readText(ctx, attempt.outputs, AGENT_LOG.name);
      if (log && !json) note(`--- agent.log (tail)\n${tail(log, 15)}`);
    }
  }

  const report = project(loaded, target, result, source, transient);
  if (json) printJson(io.stdout, { ...report });
  else io.stdout.write(formatReport(report) + '\n');
  return report.ok ? EXIT.ok : EXIT.nodeFailed;
}

/** A run node's upstream but certify (materialize), built or reused through the engine: the records an unrecorded attempt reads. */
export async function buildUpstream(
  loaded: LoadedConfig,
  target: GraphNode,
  io: CliIO,
  signal: AbortSignal | undefined,
  note: (line: string) => void = () => undefined,
  readStores: readonly Store[] = [],
): Promise<{ ok: true; records: Map<string, ActionRecord> } | { ok: false; message: string }> {
  const prereqs = closure(
    loaded,
    target.upstream.filter((u) => u.kind !== certifyStep),
  );
  const { states } = await run(
    loaded.ctx,
    loaded.inputs,
    { reporter: silent, hostEnv: io.env, ...(signal ? { signal } : {}), ...(readStores.length ? { readStores } : {}) },
    prereqs,
  );
  const records = new Map<string, ActionRecord>();
  for (const n of prereqs) {
    const s = states.get(n.id);
    if (s?.status === 'cached' || s?.status === 'executed') {
      records.set(n.id, s.record);
      note(`  ${n.id}: ${s.status === 'cached' ? 'cached' : 'built'}`);
    } else {
      return {
        ok: false,
        message: `${n.id} did not complete: ${s?.status === 'failed' ? s.failure.message : s?.status === 'skipped' ? s.because : 'unknown'}`,
      };
    }
  }
  return { ok: true, records };
}

/** The first run node as listed, or the one named (an id, an id prefix, or a step name). */
function pickRunNode(loaded: LoadedConfig, name: string | undefined): { ok: true; node: GraphNode } | { ok: false; message: string; hint: string } {
  const runs = loaded.graph.nodes.filter((n) => n.kind === runStep);
  if (!runs.length) return { ok: false, message: 'the config has no step of kind run: nothing to probe', hint: 'add a run step (see README, "Agent steps")' };
  if (name === undefined) return { ok: true, node: firstAsListed(runs.filter((n) => n.step === runs[0]!.step)) };
  const clean = name.replace(/\/+$/, '');
  const hits = runs.filter((n) => n.id === clean || n.id.startsWith(clean + '/'));
  if (hits.length) return { ok: true, node: firstAsListed(hits) };
  const other = loaded.graph.nodes.find((n) => n.id === clean || n.id.startsWith(clean + '/'));
  if (other)
    return {
      ok: false,
      message: `${other.id} is a ${other.kind.name} node; probe runs one attempt of a run step`,
      hint: `run nodes: ${runs
        .slice(0, 3)
        .map((n) => n.id)
        .join(', ')}${runs.length > 3 ? ', ...' : ''}`,
    };
  const guess = closest(clean, runs.length > 5000 ? [...new Set(runs.map((n) => n.step.name))] : runs.map((n) => n.id));
  return { ok: false, message: `no run node matches "${name}"`, hint: guess ? `did you mean "${guess}"?` : "'pairbench plan --all' lists every node" };
}

/**
 * The node of the first task, first arm, first rep as the config lists them (usually the
 * control arm): not the graph's first, since a run step may interleave its nodes in a seeded order.
 */
export function firstAsListed(nodes: GraphNode[]): GraphNode {
  const rank = (n: GraphNode) => n.step.matrix.map((d) => d.values.indexOf(n.matrix[d.name] ?? ''));
  return nodes.reduce((best, n) => {
    const a = rank(n);
    const b = rank(best);
    const i = a.findIndex((x, k) => x !== b[k]);
    return i >= 0 && a[i]! < b[i]! ? n : best;
  });
}

/** `roots` and everything they need, in the graph's (topological) order. */
export function closure(loaded: LoadedConfig, roots: GraphNode[]): GraphNode[] {
  const wanted = new Set(withUpstream(roots));
  return loaded.graph.nodes.filter((n) => wanted.has(n));
}

export type Attempt = { ok: true; outputs: OutputManifest } | { ok: false; message: string; logTail: string };

/** The attempt as a run would execute it (engine.executeUnrecorded), minus the record. */
export async function executeUnrecorded(
  loaded: LoadedConfig,
  node: GraphNode,
  records: ReadonlyMap<string, ActionRecord>,
  io: CliIO,
  signal: AbortSignal | undefined,
  doNotCache: (reason: string) => void,
  /** Files staged besides the node's inputs (already in the store). */
  extraFiles: readonly StagedFile[] = [],
): Promise<Attempt> {
  const r = await executeUnrecordedNode(loaded.ctx, node, loaded.inputs.get(node.id) ?? [], records, {
    hostEnv: io.env,
    ...(signal ? { signal } : {}),
    extraFiles,
    doNotCache,
  });
  return r.ok ? r : { ok: false, message: r.failure.message, logTail: r.logTail };
}

/** An output of an attempt (a run node), by the name the run kind declares. */
export function readText(ctx: LoadedConfig['ctx'], outputs: OutputManifest, name: RunOutput): string | undefined {
  const e = outputs[name];
  return e ? ctx.store.cas.read(e.digest).toString('utf8') : undefined;
}

/** An attempt's result.json, checked (an error says which node's record does not hold). */
export function readRunResult(ctx: LoadedConfig['ctx'], outputs: OutputManifest, node: string): Result<RunResult, string> {
  return readJsonArtifact(RUN_RESULT, outputs, (d) => ctx.store.cas.read(d), node) ?? err(`${node} wrote no ${RUN_RESULT.name}`);
}

function tail(text: string, lines: number): string {
  return text.trimEnd().split('\n').slice(-lines).join('\n');
}

/** The cost weights of the config's analyze step, if it sets them; else the defaults. */
function weightsOf(loaded: LoadedConfig): CostWeights {
  const analyze = loaded.config.steps.find((s) => s.kind === analyzeStep.name);
  const w: Partial<CostWeights> = specIf(analyze, 'analyze')?.weights ?? {};
  return { ...DEFAULT_WEIGHTS, ...w };
}

export function weightedTokens(u: TokenUsage, w: CostWeights): number {
  return u.input_tokens * w.input + u.cache_write_tokens * w.cache_write + u.cache_read_tokens * w.cache_read + u.output_tokens * w.output;
}

const scale = (u: TokenUsage, k: number): TokenUsage => ({
  input_tokens: u.input_tokens * k,
  output_tokens: u.output_tokens * k,
  cache_write_tokens: u.cache_write_tokens * k,
  cache_read_tokens: u.cache_read_tokens * k,
});

function project(loaded: LoadedConfig, target: GraphNode, r: AttemptResult, source: ProbeReport['source'], transient: string[]): ProbeReport {
  const { config, graph } = loaded;
  const weights = weightsOf(loaded);
  const attempts = graph.nodes.filter((n) => n.step === target.step).length;
  const dimensions = Object.fromEntries(target.step.matrix.map((d) => [d.name, d.values.length]));
  const concurrency = Math.max(1, Math.min(config.concurrency.global, config.concurrency.kinds['run'] ?? config.concurrency.global, attempts));
  const u = r.usage;
  const total = u ? u.input_tokens + u.output_tokens + u.cache_write_tokens + u.cache_read_tokens : null;
  const weighted = u ? weightedTokens(u, weights) : null;
  const per: ProbeFigures = { usage: u, total_tokens: total, weighted_tokens: weighted, cost_usd: r.cost_usd, wall_ms: r.wall_ms, turns: r.turns };
  const times = (x: number | null) => (x === null ? null : x * attempts);

  const caveats = [
    `one attempt is one sample: a stochastic agent's tokens and time vary from attempt to attempt, and by task and arm; this prices ${target.matrix['arm'] ? `arm "${target.matrix['arm']}"` : 'one arm'} of ${target.matrix['task'] ? `task "${target.matrix['task']}"` : 'one task'} only`,
  ];
  const runSpec = { arms: specOf(target.step, 'run').arms };
  const adding = Object.keys(runSpec.arms).filter((name) => {
    const a = armOf(runSpec, name);
    return name !== target.matrix['arm'] && (Object.keys(a.files ?? {}).length > 0 || Boolean(a.prompt_append) || Object.keys(a.mcp_servers ?? {}).length > 0);
  });
  if (adding.length)
    caveats.push(
      `arm${adding.length === 1 ? '' : 's'} ${adding.join(', ')} add${adding.length === 1 ? 's' : ''} context the probed arm does not have, so ${adding.length === 1 ? 'its' : 'their'} attempts may cost more`,
    );
  if (BUDGET_EXITS.has(r.exit_reason))
    caveats.push(`the attempt stopped at its ${r.exit_reason}: its figures are bounded by that limit, and so is the projection`);
  if (r.exit_reason === 'agent-crash' || r.exit_reason === 'infra-error')
    caveats.push(
      `the attempt did not complete (${r.exit_reason}): its figures do not price a normal attempt; fix the cause (pairbench doctor) and probe again`,
    );
  if (u === null) caveats.push('the gateway recorded no model usage (the agent made no model request through it): there are no tokens to project');
  if (r.cost_confidence === 'none')
    caveats.push(
      'no request reached a priced provider (the model is scripted, or was never reached): there is no cost to project; the tokens and weighted cost are the figures',
    );
  if (r.cost_confidence === 'estimated')
    caveats.push(
      'cost is estimated: the model has no configured price, so a default (Claude Sonnet list) price was used; the weighted tokens do not depend on prices',
    );
  for (const t of transient) caveats.push(`the step flagged this attempt as transient: ${t}`);
  if (target.upstream.some((n) => n.kind === certifyStep)) caveats.push('certify was not run by the probe: a task it rejects would not be attempted at all');

  return {
    ok: r.exit_reason !== 'agent-crash' && r.exit_reason !== 'infra-error',
    node: target.id,
    step: target.step.name,
    source,
    exit_reason: r.exit_reason,
    agent: r.agent,
    cost_confidence: r.cost_confidence,
    weights,
    per_attempt: per,
    cohort: {
      attempts,
      dimensions,
      concurrency,
      projected: {
        usage: u ? scale(u, attempts) : null,
        total_tokens: times(total),
        weighted_tokens: times(weighted),
        cost_usd: times(r.cost_usd),
        wall_ms_total: r.wall_ms * attempts,
        wall_ms_elapsed: r.wall_ms * Math.ceil(attempts / concurrency),
      },
    },
    caveats,
  };
}

const int = (n: number | null) => (n === null ? 'n/a' : Math.round(n).toLocaleString('en-US'));
const usd = (n: number | null) => (n === null ? 'n/a (unpriced)' : `$${n < 1 ? n.toFixed(4) : n.toFixed(2)}`);
function duration(ms: number): string {
  const s = ms / 1000;
  if (s < 120) return `${s.toFixed(1)} s`;
  if (s < 7200) return `${(s / 60).toFixed(1)} min`;
  return `${(s / 3600).toFixed(1)} h`;
}

const costText = (usdValue: number | null, confidence: string) =>
  confidence === 'none' ? 'cost none (no priced provider)' : `cost ${usd(usdValue)} (${confidence})`;

export function formatReport(r: ProbeReport): string {
  const p = r.per_attempt;
  const c = r.cohort.projected;
  const dims = Object.entries(r.cohort.dimensions)
    .map(([k, v]) => `${v} ${k}${v === 1 ? '' : 's'}`)
    .join(' x ');
  const w = r.weights;
  const usageLine = (u: TokenUsage | null) =>
    u
      ? `input ${int(u.input_tokens)}, cache write ${int(u.cache_write_tokens)}, cache read ${int(u.cache_read_tokens)}, output ${int(u.output_tokens)}`
      : 'no usage recorded';
  return [
    `${r.source === 'probe' ? 'probe attempt' : 'recorded attempt'} ${r.node}: ${r.exit_reason} (${r.agent.adapter} ${r.agent.version}, model ${r.agent.model})`,
    `  per attempt   tokens ${int(p.total_tokens)} (${usageLine(p.usage)})`,
    `                weighted ${int(p.weighted_tokens)} (input + ${w.cache_write} x cache_write + ${w.cache_read} x cache_read + ${w.output} x output)`,
    `                ${costText(p.cost_usd, r.cost_confidence)}, wall ${duration(p.wall_ms)}, ${p.turns} turn${p.turns === 1 ? '' : 's'}`,
    `  cohort        ${r.cohort.attempts} attempts of step ${r.step} (${dims})`,
    `                tokens ${int(c.total_tokens)}, weighted ${int(c.weighted_tokens)}, ${costText(c.cost_usd, r.cost_confidence)}`,
    `                wall ${duration(c.wall_ms_total)} of agent time; about ${duration(c.wall_ms_elapsed)} elapsed at concurrency ${r.cohort.concurrency}`,
    ...r.caveats.map((x) => `  note: ${x}`),
    // The planner prices a gate's size at this attempt's cost.
    ...(p.cost_usd !== null ? [`  size the pull-request gates at this price: pairbench size --cost-per-attempt ${Number(p.cost_usd.toPrecision(3))}`] : []),
  ].join('\n');
}
