import { pinnedHostPaths } from './host-paths.js';
import { lstatSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import type { Json, JsonEncodable } from '../pipeline/canonical-json.js';
import type { StepConfig } from '../pipeline/config/load.js';
import { sha256 } from '../pipeline/digest.js';
import { err, ok, type Result } from '../pipeline/result.js';
import { withUpstream } from '../pipeline/dag.js';
import { EARLIER_TRIES, type ExecutionContext, type GraphNode, type StepKind } from '../pipeline/step-kind.js';
import type { OutputEntry } from '../pipeline/store/cas.js';
import type { AnalysisResult, AttemptRecord, AuditedAttempt } from '../stats/types.js';
import { attemptSpan } from '../stats/attempt-span.js';
import type { ResultsFile } from '../report/results-file.js';
import { taskOf } from './agent-step-config.js';
import type { BundleFile } from '../report/bundle.js';
import type { ReportContext, ReportHistory } from '../report/report-context.js';
import { observationWords, priorAnalysisWords, redrawWords, type FreezeAnnotation } from './preregistration.js';
import { AGENT_LOG, armOf, GATEWAY_LOG, limitsOf, RUN_RESULT, runStep, sandboxOf, TRAJECTORY, type ArmSpec } from './run.js';
import { isStepOutput } from './treatment-files.js';
import { materializeStep, TREE, treeEntries } from './materialize.js';
import { EVIDENCE, VERIFIER_LOG, verifyStep } from './verify.js';
import { ENVIRONMENT } from '../sandboxes/egress-modes.js';
import { environmentStep } from './environment.js';
import { attemptDiff } from './attempt-diff.js';
import type { Task } from './task.js';
import { CHANGED, CHANGES } from './workspace.js';
import { specIf, specOf, type SpecByKind } from './step-spec.js';
import { annotateExports } from './export-annotation.js';
import { artifact, isJsonArtifact, parseJsonArtifact, readJsonArtifact } from '../pipeline/artifact.js';
import { ANALYSIS, ANALYZED_ATTEMPTS } from './analyze-step.js';
import { ATTEMPT_DIFF, bundledPath, RESULTS_FILE } from './bundle-layout.js';

type ExportConfig = SpecByKind['export'];

const cfg = (step: StepConfig): ExportConfig => specOf(step, 'export');

/** Text outputs that may hold host paths or credentials: redacted before they enter the bundle. */
const REDACTED_OUTPUTS = new Set<string>([TRAJECTORY, GATEWAY_LOG, AGENT_LOG, RUN_RESULT, EVIDENCE, VERIFIER_LOG].map((a) => a.name));

function runStepOf(node: GraphNode): GraphNode | undefined {
  return withUpstream(node.upstream).find((n) => n.kind === runStep);
}

/** Whether the cohort's verifier ran in an environment its key pins (an image by ID), in words (its backend says). */
function verifierEnvironment(node: GraphNode): { pinned: boolean; text: string } {
  const verify = withUpstream(node.upstream).find((n) => n.kind === verifyStep);
  const spec: Partial<SpecByKind['verify']> = specIf(verify?.step, 'verify') ?? {};
  const s = sandboxOf({ ...(spec.sandbox ? { sandbox: spec.sandbox } : {}) });
  const hostPaths = verify ? pinnedHostPaths(verify) : undefined;
  return ENVIRONMENT[s.backend](
    { image: s.image, ...(hostPaths?.ok && hostPaths.value ? { hostPaths: hostPaths.value } : {}) },
    { who: 'the verifier', step: 'verify' },
  );
}

/** One run node per task the cohort ran (its task is loaded from that run's task source). */
function taskNodes(node: GraphNode): GraphNode[] {
  const byTask = new Map<string, GraphNode>();
  for (const n of withUpstream(node.upstream)) if (n.kind === runStep && n.matrix['task'] && !byTask.has(n.matrix['task'])) byTask.set(n.matrix['task'], n);
  return [...byTask.values()].sort((a, b) => (a.matrix['task']! < b.matrix['task']! ? -1 : 1));
}

/** A task's spec as the steps used it (prompt, repository, verifier, reference solution), for the bundle. */
function taskSpec(t: Task): Json {
  return {
    id: t.id,
    family: t.family,
    category: t.category,
    repo: { commit: t.repo.commit, subdir: t.repo.subdir ?? null, setup_patch: t.repo.setupPatch ?? null },
    prompt: t.prompt,
    allowed_paths: t.allowedPaths,
    verifier: {
      command: t.verifier.command,
      fail_to_pass: t.verifier.failToPass,
      pass_to_pass: t.verifier.passToPass,
      timeout_sec: t.verifier.timeoutSec,
      patch: t.verifier.patch,
      result: t.verifier.result,
    },
    solution: { patch: t.solution.patch },
    facts: t.facts ?? [],
  };
}

/** The cohort's registered freeze and history, as the CLI attached it to the export node (GraphNode.annotation). */
function freezeOf(node: GraphNode): FreezeAnnotation | null {
  const a = node.annotation as { freeze?: FreezeAnnotation } | undefined;
  return a?.freeze ?? null;
}

/** Which earlier version first executed each attempt this bundle reports (by the run records' keys). */
function reusedFrom(node: GraphNode, upstream: ExecutionContext['upstream']): Record<string, string> {
  const earlier = freezeOf(node)?.history.earlier ?? [];
  const firstBy = new Map<string, number>();
  for (const v of earlier) for (const k of v.executed) if (!firstBy.has(k)) firstBy.set(k, v.version);
  const runs = new Set(
    withUpstream(node.upstream)
      .filter((n) => n.kind === runStep)
      .map((n) => n.id),
  );
  const out: Record<string, string> = {};
  for (const u of upstream) {
    const v = runs.has(u.node) ? firstBy.get(u.key) : undefined;
    if (v !== undefined) out[u.node] = String(v);
  }
  return out;
}

/**
 * config/freeze.json: the registry entry of the cohort version this bundle reports -- its freeze
 * digest and frozen fields -- and the cohort's history in the store that built it: every
 * earlier version, what changed, what each observed, and which attempts this one reused.
 */
function freezeRecord(node: GraphNode, attempts: readonly AttemptRecord[], configDigest: string, reused: Record<string, string>): Json {
  const f = freezeOf(node);
  const span = attemptSpan(attempts);
  return {
    schema_version: 4,
    config_digest: configDigest,
    cohort: f?.cohort ?? null,
    version: f?.version ?? null,
    freeze_digest: f?.freeze_digest ?? null,
    frozen_fields: f?.fields ?? null,
    first_attempt_at: span.first,
    last_attempt_at: span.last,
    first_registration_in_store: f?.history.first_registration_in_store ?? null,
    earlier_versions: (f?.history.earlier ?? []).map((v) => ({
      version: v.version,
      freeze_digest: v.freeze_digest,
      frozen_at: v.frozen_at,
      bound_at: v.bound_at,
      changes_to_next: v.changes_to_next,
      observations: v.observations as unknown as Json,
      attempts_executed: v.executed.length,
    })),
    reused_attempts: reused,
    registry_resets: (f?.history.resets ?? []) as unknown as Json,
    registry_problem: f?.history.registry_problem ?? null,
    redraws: (f?.history.redraws ?? []) as unknown as Json,
    prior_analyses: (f?.history.prior_analyses ?? []) as unknown as Json,
    anchor: (f?.history.anchor ?? null) as unknown as Json,
    peeks: (f?.history.peeks ?? []) as unknown as Json,
    registry:
      "the store's cohort registry (a hash-chained log) binds this version to freeze_digest at its first observation; 'pairbench history <cohort>' lists every version and observation",
  };
}

/** The history section of the report, from the annotation. */
function reportHistory(node: GraphNode, reused: Record<string, string>): ReportHistory | undefined {
  const f = freezeOf(node);
  if (!f) return undefined;
  const counts: Record<string, number> = {};
  for (const v of Object.values(reused)) counts[v] = (counts[v] ?? 0) + 1;
  return {
    version: f.version,
    first_registration_in_store: f.history.first_registration_in_store,
    earlier: f.history.earlier.map((v) => ({
      version: v.version,
      freeze_digest: v.freeze_digest,
      frozen_at: v.frozen_at,
      bound_at: v.bound_at,
      changes_to_next: v.changes_to_next,
      observations: v.observations.map((o) => ({ at: o.at, by: o.by, words: observationWords(o) })),
    })),
    reused: counts,
    resets: f.history.resets.map(
      (r) =>
        `registry reset acknowledged ${r.at}: ${r.orphans.map((o) => `${o.records} record(s) of version ${o.version}`).join(', ')} were made under registrations the registry had lost`,
    ),
    registry_problem: f.history.registry_problem,
    redraws: f.history.redraws.map(redrawWords),
    prior_analyses: f.history.prior_analyses.map((p) => priorAnalysisWords(p)),
    peeks: f.history.peeks.map((p) => `${p.by} ${p.node} at ${p.at}, before the first analysis`),
    anchor: f.history.anchor
      ? `anchored by ${f.history.anchor.lock} (version ${f.history.anchor.version}, entry ${f.history.anchor.entries}, ${f.history.anchor.head.slice(0, 12)})`
      : null,
  };
}

/** What an arm adds, in words. */
function armWords(a: ArmSpec): string {
  const parts = [
    ...Object.entries(a.files ?? {}).map(([dest, src]) => `${dest} from ${isStepOutput(src) ? `the output ${src.out} of step ${src.from}` : src}`),
    ...Object.keys(a.mcp_servers ?? {}).map((m) => `MCP server ${m}`),
  ];
  if (a.restore) parts.push("the repository's own instruction files, restored (materialize redacts them from every other arm)");
  if (a.prompt_append) parts.push('a prompt addition');
  if (a.env && Object.keys(a.env).length) parts.push(`environment ${Object.keys(a.env).sort().join(', ')}`);
  const text = parts.length ? parts.join('; ') : 'nothing added';
  return a.ablate ? `${text}, without lines matching ${a.ablate.drop_lines.join(' | ')} (ablation of ${a.ablate.from})` : text;
}

function reportContext(
  node: GraphNode,
  attempts: AttemptRecord[],
  configDigest: string,
  analysis: AnalysisResult,
  exportedAt: string,
  reused: Record<string, string>,
): ReportContext {
  const run = runStepOf(node);
  const spec: Partial<SpecByKind['run']> = specIf(run?.step, 'run') ?? {};
  const sandbox = sandboxOf({ ...(spec.sandbox ? { sandbox: spec.sandbox } : {}) });
  const limits = limitsOf({ ...(spec.limits ? { limits: spec.limits } : {}) });
  const first = attempts.find((a) => a.admission === 'accepted') ?? attempts[0];
  const taskIds = [...new Set(attempts.map((a) => a.task))].sort();
  const tasks = taskIds.map((id) => {
    const t = run ? taskOf({ ...run, matrix: { ...run.matrix, task: id } }) : undefined;
    return { id, ...(t ? { family: t.family, category: t.category, repo: t.repo.source.split('/').slice(-1)[0]!, commit: t.repo.commit } : {}) };
  });
  const span = attemptSpan(attempts);
  const roleOf = (arm: string) => (arm === analysis.spec.control ? 'control' : analysis.spec.treatments.includes(arm) ? 'treatment' : 'arm');
  const history = reportHistory(node, reused);
  return {
    cohort: freezeOf(node) ? `${freezeOf(node)!.cohort} v${freezeOf(node)!.version}` : (cfg(node.step).cohort ?? node.step.name),
    times: { exported_at: exportedAt, first_attempt_at: span.first, last_attempt_at: span.last },
    config_digest: configDigest,
    freeze_digest: freezeOf(node)?.freeze_digest ?? 'unregistered',
    arms: Object.fromEntries(Object.keys(spec.arms ?? {}).map((k) => [k, { role: roleOf(k), treatment: armWords(armOf({ arms: spec.arms ?? {} }, k)) }])),
    ...(history ? { history } : {}),
    agent: {
      adapter: first?.agent.adapter ?? spec.agent?.adapter ?? 'unknown',
      version: first?.agent.version ?? 'unknown',
      model: first?.agent.model ?? spec.agent?.model ?? 'unknown',
    },
    sandbox: {
      backend: sandbox.backend,
      egress_mode: sandbox.egress,
      egress_enforced: first?.sandbox.egress_enforced ?? false,
      image_id: sandbox.image,
      isolation: first?.sandbox.isolation ?? 'unknown',
    },
    verifier_environment: verifierEnvironment(node),
    tasks,
    reps: Math.max(0, ...attempts.map((a) => a.rep)),
    limits: { turns: limits.turns, wall_seconds: limits.wallSeconds, tokens: limits.tokens, cost_usd: limits.costUsd },
    verifier_kind: 'hidden verifier (exit codes or reward file; FAIL_TO_PASS and PASS_TO_PASS) in a fresh sandbox the agent never saw',
    ...(cfg(node.step).fixture_note ? { fixture_note: cfg(node.step).fixture_note! } : {}),
  };
}

/**
 * `export` (per cohort): the bundle. Normalized results, attempt receipts,
 * certification and redaction receipts, the resolved config and its digest,
 * verifier evidence, mutation audits, logs, gateway logs and ATIF trajectories
 * (host paths and credentials redacted), excluded attempts included; the report in
 * Markdown, CSV and HTML; `manifest.json` with the SHA-256 and byte length of every
 * file. `pairbench export --out DIR` writes it out; `verify-bundle` re-checks it.
 */
/** Every file of every earlier try of an attempt (retried infrastructure faults): `nodes/<node>/earlier-tries/01/result.json`, ... */
function earlierTriesFiles(ctx: ExecutionContext, node: string, entry: OutputEntry, clean: (text: string) => string): BundleFile[] {
  const dir = join(ctx.workDir, 'tries', node.replaceAll('/', '_'));
  ctx.artifacts.materialize(entry, dir);
  const out: BundleFile[] = [];
  for (const t of readdirSync(dir).sort()) {
    for (const name of readdirSync(join(dir, t)).sort()) {
      if (!statSync(join(dir, t, name)).isFile()) continue;
      const text = readFileSync(join(dir, t, name), 'utf8');
      out.push({ path: bundledPath(node, EARLIER_TRIES, t, name), bytes: REDACTED_OUTPUTS.has(name) ? clean(text) : text });
    }
  }
  return out;
}

/** `nodes/<run node>/patch.diff` (ATTEMPT_DIFF): what each attempt changed, against the tree it started from. */
async function attemptPatches(ctx: ExecutionContext): Promise<Result<BundleFile[], string>> {
  const out: BundleFile[] = [];
  const outputsOf = new Map(ctx.upstream.map((u) => [u.node, u.outputs]));
  for (const run of ctx.node.upstream.filter((u) => u.kind === runStep)) {
    const outs = outputsOf.get(run.id);
    const changed = outs?.[CHANGED.name];
    if (!outs?.[CHANGES.name] || !changed) continue;
    const start = run.upstream.find((u) => u.kind === materializeStep || u.kind === environmentStep);
    const tree = start ? outputsOf.get(start.id)?.[TREE.name] : undefined;
    const changes = readJsonArtifact(CHANGES, outs, (d) => ctx.artifacts.read(d), run.id)!;
    if (!changes.ok) return changes;
    out.push({ path: bundledPath(run.id, ATTEMPT_DIFF), bytes: await attemptDiff(ctx, tree, changed, changes.value, run.id) });
  }
  return ok(out);
}

/** `tasks/<id>/task.json` (the spec as the steps used it) and `tasks/<id>/verifier/...` (the hidden verifier's bytes). */
function taskFiles(ctx: ExecutionContext): BundleFile[] {
  const out: BundleFile[] = [];
  for (const n of taskNodes(ctx.node)) {
    const t = taskOf(n);
    out.push({ path: `tasks/${t.id}/task.json`, bytes: JSON.stringify(taskSpec(t), null, 2) + '\n' });
    if (!t.verifier.filesDir) continue;
    const staged = ctx.files.find((f) => f.path === relative(n.step.rootDir, t.verifier.filesDir!));
    if (staged?.entry.type !== 'dir') continue;
    const dir = join(ctx.workDir, 'verifiers', t.id);
    ctx.artifacts.materialize(staged.entry, dir);
    for (const rel of treeEntries(dir))
      if (lstatSync(join(dir, rel)).isFile()) out.push({ path: `tasks/${t.id}/verifier/${rel}`, bytes: readFileSync(join(dir, rel)) });
  }
  return out;
}

/** The name of an export node's one output: the bundle directory. */
const BUNDLE = artifact('bundle', 'the verifiable bundle: results, report, evidence, manifest.json');
export const BUNDLE_OUTPUT = BUNDLE.name;

export const exportStep: StepKind = {
  name: 'export',
  observes: true,
  // The cohort's freeze and registered history are part of the key.
  annotate: annotateExports,
  title: { one: 'bundle', many: 'bundles' },
  outputs: () => [BUNDLE],
  // 6: the cohort's preregistration history (earlier versions, observations, reused attempts); time stamps named; arms by role.
  // 5: the report draws (a)/(b)/(c) as bars, a factorial's interaction plot (and its cells as a table), cost against pass rate.
  // 4: the report opens on every comparison at a glance; its tables scroll inside the page; the sequential section.
  // 3: each attempt's patch, each task's spec and verifier files in the bundle.
  // 2: the registered freeze (cohort version, digest, fields, first attempt) and earlier tries in the bundle.
  version: 6,
  check(step, steps) {
    const kinds = new Set(step.needs.map((n) => steps.get(n)?.kind));
    return kinds.has('analyze')
      ? []
      : [
          {
            field: `steps.${step.name}.needs`,
            message: 'an export step needs an analyze step (and every step whose outputs belong in the bundle: materialize, certify, run, verify, audit)',
            location: step.source.locate([...step.path, 'needs']),
          },
        ];
  },
  keyConfig: (node): JsonEncodable => ({ cohort: cfg(node.step).cohort ?? node.step.name, fixture_note: cfg(node.step).fixture_note ?? null }),
  // The resolved config and every task's hidden verifier files go into the bundle: their bytes are inputs.
  fileInputs: (node) => [
    { pattern: relative(node.step.rootDir, node.step.configFile), field: ['kind'] },
    ...taskNodes(node).flatMap((n) => {
      const dir = taskOf(n).verifier.filesDir;
      return dir ? [{ pattern: relative(n.step.rootDir, dir), field: ['kind'] }] : [];
    }),
  ],

  async execute(ctx: ExecutionContext) {
    // Loaded when a bundle is made, not when the config is.
    const [{ redact, writeBundle }, { renderCsv }, { renderHtml }, { renderMarkdown }] = await Promise.all([
      import('../report/bundle.js'),
      import('../report/report-csv.js'),
      import('../report/report-html.js'),
      import('../report/report-markdown.js'),
    ]);
    const files: BundleFile[] = [];
    const hostPaths = [
      { path: ctx.config.storeDir, as: '<store>' },
      { path: ctx.config.rootDir, as: '<project>' },
      { path: tmpdir(), as: '<tmp>' },
      { path: homedir(), as: '<home>' },
    ];
    let analysis: AnalysisResult | undefined;
    let attempts: AuditedAttempt[] = [];
    const producers = new Map(ctx.node.upstream.map((n) => [n.id, n]));
    for (const u of ctx.upstream) {
      const producer = producers.get(u.node);
      const declared = producer ? producer.kind.outputs(producer.step) : [];
      for (const [name, entry] of Object.entries(u.outputs)) {
        if (name === EARLIER_TRIES && entry.type === 'dir') {
          files.push(...earlierTriesFiles(ctx, u.node, entry, (text) => redact(text, { hostPaths })));
          continue;
        }
        if (entry.type !== 'file') continue; // directories (trees, changed files) stay in the store: their digests are in the receipts
        let text = ctx.artifacts.read(entry.digest).toString('utf8');
        // A JSON output enters the bundle only if it holds the type its producer declares; the
        // analysis and its attempts are known by their descriptor (an output of that name from
        // another kind is only bundled), and each file is parsed once.
        const typed = declared.find((a) => a.name === name);
        if (typed === ANALYSIS) {
          const read = parseJsonArtifact(ANALYSIS, text, u.node);
          if (!read.ok) return err({ reason: 'store-error', message: read.error });
          analysis = read.value;
        } else if (typed === ANALYZED_ATTEMPTS) {
          const read = parseJsonArtifact(ANALYZED_ATTEMPTS, text, u.node); // audit.json records, as analyze gathered them
          if (!read.ok) return err({ reason: 'store-error', message: read.error });
          attempts = read.value;
        } else if (typed && isJsonArtifact(typed)) {
          const holds = parseJsonArtifact(typed, text, u.node);
          if (!holds.ok) return err({ reason: 'store-error', message: holds.error });
        }
        if (REDACTED_OUTPUTS.has(name)) text = redact(text, { hostPaths });
        files.push({ path: bundledPath(u.node, name), bytes: text });
      }
    }
    if (!analysis) return err({ reason: 'internal', message: `export needs an analyze upstream (${ANALYSIS.name})` });
    const patches = await attemptPatches(ctx);
    if (!patches.ok) return err({ reason: 'store-error', message: patches.error });
    files.push(...patches.value, ...taskFiles(ctx));
    const configText = ctx.artifacts.read(ctx.files[0]!.entry.digest).toString('utf8');
    const configDigest = sha256(configText);
    const reused = reusedFrom(ctx.node, ctx.upstream);
    // When this bundle was built: said as that in the report (the attempts' own times are beside it).
    const context = reportContext(ctx.node, attempts, configDigest, analysis, new Date().toISOString(), reused);
    files.push(
      { path: 'config/bench.config.yaml', bytes: configText },
      { path: 'config/freeze.json', bytes: JSON.stringify(freezeRecord(ctx.node, attempts, configDigest, reused), null, 2) + '\n' },
      {
        path: RESULTS_FILE.name,
        bytes:
          JSON.stringify(
            {
              schema_version: 1,
              cohort: freezeOf(ctx.node)?.cohort ?? cfg(ctx.node.step).cohort ?? ctx.node.step.name,
              version: freezeOf(ctx.node)?.version ?? null,
              freeze_digest: freezeOf(ctx.node)?.freeze_digest ?? null,
              config_digest: configDigest,
              analysis,
              attempts,
            } satisfies ResultsFile,
            null,
            2,
          ) + '\n',
      },
      { path: 'report.md', bytes: renderMarkdown(analysis, context) },
      { path: 'report.html', bytes: renderHtml(analysis, context) },
      { path: 'attempts.csv', bytes: renderCsv(attempts) },
    );
    const dir = join(ctx.workDir, BUNDLE_OUTPUT);
    const written = writeBundle(dir, files);
    if (!written.ok) return err({ reason: 'internal', message: `cannot write the bundle: ${written.error}` });
    return ok({ [BUNDLE_OUTPUT]: ctx.artifacts.putPath(dir) });
  },
};
