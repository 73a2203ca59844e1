import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmdirSync, rmSync } from 'node:fs';
import { dirname, join, resolve as resolvePath } from 'node:path';
import { buildGraph, withUpstream, type Graph } from '../pipeline/dag.js';
import { DEFAULT_CONFIG_FILE, loadConfig, parseDuration, parseSize, type BenchConfig } from '../pipeline/config/load.js';
import { closest, formatDiagnostic, type Diagnostic } from '../pipeline/diagnostic.js';
import { ensureLocal, lookup, plan, resolveInputs, run, type EngineContext, type Lookup, type PlanEntry } from '../pipeline/engine.js';
import { parseShard } from '../pipeline/shard.js';
import { remoteCacheFor } from './remote.js';
import type { CacheKey } from '../pipeline/digest.js';
import type { Reporter } from '../pipeline/events.js';
import type { HeldLock } from '../pipeline/store/lock.js';
import { CorruptBlobError } from '../pipeline/store/cas.js';
import { collectGarbage, GC_GRACE_MS } from '../pipeline/gc.js';
import type { ResolvedInput } from '../pipeline/inputs.js';
import { PlainReporter } from '../pipeline/reporters/plain.js';
import { Store } from '../pipeline/store/store.js';
import type { GraphNode, HostEnv, StepKind } from '../pipeline/step-kind.js';
import { errorMessage, ok, type Result } from '../pipeline/result.js';
import { builtinStepKinds } from '../steps/index.js';
import { byteProgress, type ProgressMode } from './byte-progress.js';
import { writeStoredBundle } from './stored-bundle.js';
import { COMMAND_NAMES, parseCommandLine } from './command-line.js';
import { EXIT, helpFor, isCommandName, mainHelp, operandProblem, type CommandName, type OptionValues } from './help.js';
import { admitCohorts, annotateExports, cohortsOf, observationBinder, provenanceFor, recordCohorts, registryOf } from './cohorts.js';
import { annotateEnvironments, annotateImageTemplates } from './image-annotations.js';
import { historyLines } from '../steps/preregistration.js';
import { explainNode } from './explain.js';
import { formatRunOutcome, runOutcome } from './run-summary.js';
import { generate } from './generate.js';
import { printJson as printJsonTo, printJsonErrors } from './json-output.js';
import { exportStep } from '../steps/export-step.js';
import { specOf } from '../steps/step-spec.js';
import { isolationFallback } from '../steps/run.js';
import type { CliIO, Out } from './command-context.js';

/** What is wrong with an option's value (or a required option missing), in words. */
function optionProblem(command: CommandName, values: OptionValues): string | undefined {
  if (command === 'export' && !values.out) return 'export needs --out DIR';
  if (values.jobs !== undefined && !(Number.isInteger(Number(values.jobs)) && Number(values.jobs) >= 1))
    return `--jobs takes a whole number >= 1, not "${values.jobs}"`;
  if (values.progress !== undefined && !['auto', 'plain', 'none'].includes(values.progress))
    return `--progress takes auto, plain or none, not "${values.progress}"`;
  if (values.port !== undefined && !(/^\d+$/.test(values.port) && Number(values.port) <= 65535))
    return `--port takes a port number (0-65535), not "${values.port}"`;
  if (values['max-size'] !== undefined && Number.isNaN(parseSize(values['max-size'])))
    return `--max-size takes a size with its unit, such as 500MB, 2GiB or 4096B, not "${values['max-size']}"`;
  if (values['keep-newer-than'] !== undefined && Number.isNaN(parseDuration(values['keep-newer-than'])))
    return `--keep-newer-than takes a duration with its unit, such as 30m, 2h or 0s, not "${values['keep-newer-than']}"`;
  return undefined;
}

/** A usage error in words, on stderr or as the JSON error shape; exit 2. */
function usageError(io: CliIO, json: boolean, command: string | null, message: string): number {
  const hint = command ? `Run 'pairbench ${command} --help' for its options.` : "Run 'pairbench --help' for the commands.";
  if (json) printJsonErrors(io.stdout, [{ message, hint }]);
  else io.stderr.write(`pairbench${command ? ` ${command}` : ''}: ${message}\n${hint}\n`);
  return EXIT.usage;
}

/**
 * Lays a bundle written at `staging/bundle` out as a Harbor jobs directory and renames it to
 * `dest`: `dest/<job>/` holds the trials, and the bundle itself at `dest/<job>/pairbench`.
 */
async function harborLayout(staging: string, dest: string): Promise<Result<{ bundle: string; job: { dir: string; trials: number } }, string>> {
  const { BUNDLE_SUBDIR, harborJobName, writeHarborJob } = await import('../steps/export/harbor-layout.js');
  const name = harborJobName(join(staging, 'bundle'));
  if (!name.ok) return name;
  const jobDir = join(staging, name.value);
  mkdirSync(jobDir, { recursive: true });
  renameSync(join(staging, 'bundle'), join(jobDir, BUNDLE_SUBDIR));
  const laid = writeHarborJob(join(jobDir, BUNDLE_SUBDIR), jobDir, join(dest, name.value));
  if (!laid.ok) {
    rmSync(staging, { recursive: true, force: true });
    return laid;
  }
  if (existsSync(dest)) rmdirSync(dest); // empty (checked by the caller)
  renameSync(staging, dest);
  return ok({ bundle: join(dest, name.value, BUNDLE_SUBDIR), job: { dir: join(dest, name.value), trials: laid.value.trials } });
}

function printJson(io: CliIO, value: Record<string, unknown>): void {
  printJsonTo(io.stdout, value);
}

/** The one error shape of every command: {schema_version, ok: false, errors: [{message, field?, location?, hint?}]}. */
function fail(io: CliIO, json: boolean, diagnostics: Diagnostic[], code: number = EXIT.usage): number {
  if (json) printJsonErrors(io.stdout, diagnostics);
  else io.stderr.write(diagnostics.map(formatDiagnostic).join('\n\n') + '\n');
  return code;
}

export interface Loaded {
  config: BenchConfig;
  graph: Graph;
  ctx: EngineContext;
  inputs: Map<string, ResolvedInput[]>;
}

/**
 * A config as every command sees it: loaded, expanded, its inputs hashed, and each node given
 * the facts its key needs (a cohort's freeze and history for its exports, image IDs). A library
 * caller that loads a config this way gets the keys the CLI gets.
 */
export function loadProject(configPath: string, storeDir: string | undefined, env: HostEnv): { ok: true; value: Loaded } | { ok: false; error: Diagnostic[] } {
  if (!existsSync(configPath)) {
    const where = resolvePath(configPath);
    return {
      ok: false,
      error: [
        configPath === DEFAULT_CONFIG_FILE
          ? { message: `no ${DEFAULT_CONFIG_FILE} in ${dirname(where)}`, hint: 'run pairbench in the directory of your config, or pass --config FILE' }
          : { message: `no config file at ${where}`, hint: 'check the path given to --config' },
      ],
    };
  }
  const config = loadConfig(configPath, storeDir ? { storeDir } : {});
  if (!config.ok) return config;
  const graph = buildGraph(config.value, builtinStepKinds);
  if (!graph.ok) return graph;
  const ctx: EngineContext = { config: config.value, graph: graph.value, store: new Store(config.value.storeDir) };
  const inputs = resolveInputs(ctx, graph.value.nodes);
  if (!inputs.ok) return inputs;
  annotateExports(graph.value.nodes, inputs.value, env, ctx.store);
  annotateEnvironments(graph.value.nodes, env);
  annotateImageTemplates(graph.value.nodes, env);
  return { ok: true, value: { config: config.value, graph: graph.value, ctx, inputs: inputs.value } };
}

/** The most recent record of node `id` among `keys` (a config's root): what that config last built. */
function lastBuiltAmong(ctx: EngineContext, id: string, keys: ReadonlySet<string>): Lookup | undefined {
  let best: Lookup | undefined;
  for (const key of keys) {
    const found = lookup(ctx.store, key as CacheKey);
    if (found.status !== 'hit' || found.record.node !== id) continue;
    if (!best || best.status !== 'hit' || found.record.started_at > best.record.started_at) best = found;
  }
  return best;
}

/** Nodes matching the patterns (id, id prefix, or step name) plus everything they need, in topological order. */
function selectNodes(graph: Graph, patterns: string[]): { nodes: GraphNode[]; unknown: string[] } {
  if (!patterns.length) return { nodes: graph.nodes, unknown: [] };
  const matches: GraphNode[] = [];
  const unknown: string[] = [];
  for (const p of patterns) {
    const clean = p.replace(/\/+$/, '');
    const found = graph.nodes.filter((n) => n.id === clean || n.id.startsWith(clean + '/'));
    if (!found.length) unknown.push(p);
    matches.push(...found);
  }
  const wanted = new Set(withUpstream(matches));
  return { nodes: graph.nodes.filter((n) => wanted.has(n)), unknown };
}

function unknownNodes(graph: Graph, unknown: string[]): Diagnostic[] {
  const ids = graph.nodes.map((n) => n.id);
  return unknown.map((u) => {
    // A step name first (plan attemps -> attempts), then a node id.
    const guess = closest(u, [...graph.steps.keys()]) ?? (ids.length > 5000 ? undefined : closest(u, ids));
    return {
      message: `no node matches "${u}"`,
      hint: guess ? `did you mean "${guess}"? ('pairbench plan --all' lists every node)` : "'pairbench plan --all' lists every node",
    };
  });
}

function chooseReporter(io: CliIO, mode: string | undefined, verbose: boolean): Reporter {
  const m = mode ?? 'auto';
  if (m === 'none') return { event: () => undefined };
  const interactive = m === 'auto' && io.stderr.isTTY && !io.env['CI'];
  if (interactive) {
    // Loaded only when needed: a no-op run in CI should not pay for it.
    return new LazyListr(io.stderr);
  }
  return new PlainReporter(io.stderr, { verbose, color: Boolean(io.stderr.isTTY) && !io.env['NO_COLOR'] });
}

/** Defers importing listr2 until the first event; events arrive synchronously, so buffer them. */
class LazyListr implements Reporter {
  private inner?: Reporter;
  private readonly ready: Promise<void>;
  private readonly queue: Parameters<Reporter['event']>[0][] = [];
  constructor(out: Out) {
    this.ready = import('../pipeline/reporters/listr.js').then((m) => {
      this.inner = new m.ListrReporter(out);
      for (const e of this.queue.splice(0)) this.inner.event(e);
    });
  }
  event(e: Parameters<Reporter['event']>[0]): void {
    if (this.inner) this.inner.event(e);
    else this.queue.push(e);
  }
  async close(): Promise<void> {
    await this.ready;
    await this.inner?.close?.();
  }
}

/** "8 task certification, 16 agent attempts": the nodes to run, counted by what they are (each kind's title). */
function countByKind(graph: Graph, entries: readonly PlanEntry[]): string {
  const counts = new Map<StepKind['title'], number>();
  for (const e of entries) {
    const title = graph.byId.get(e.node)?.kind.title ?? { one: 'node', many: 'nodes' };
    counts.set(title, (counts.get(title) ?? 0) + 1);
  }
  return [...counts].map(([title, n]) => `${n} ${n === 1 ? title.one : title.many}`).join(', ');
}

function printPlan(io: CliIO, graph: Graph, entries: PlanEntry[], all: boolean): void {
  const toRun = entries.filter((e) => e.status === 'run');
  const lines: string[] = [];
  for (const e of entries) {
    if (e.status === 'cached') {
      if (all) lines.push(`cached  ${e.node}`);
      continue;
    }
    lines.push(`to run  ${e.node}`);
    for (const r of e.reasons) lines.push(`          ${r}`);
  }
  lines.push(
    toRun.length === 0
      ? `nothing to run: all ${entries.length} nodes are cached`
      : `${entries.length} nodes: ${entries.length - toRun.length} cached, ${toRun.length} to run (${countByKind(graph, toRun)})`,
  );
  io.stdout.write(lines.join('\n') + '\n');
}

async function runVerifyBundle(
  io: CliIO,
  json: boolean,
  dir: string,
  keyFile: string | undefined,
  expectedRoot: string | undefined,
  progressMode: ProgressMode,
): Promise<number> {
  const { checkSignature, rootDigest, verifyBundle } = await import('../steps/export/bundle.js');
  if (!existsSync(dir)) return fail(io, json, [{ message: `${dir} does not exist`, hint: 'give the directory pairbench export --out wrote' }]);
  if (!existsSync(join(dir, 'manifest.json')))
    return fail(io, json, [{ message: `${dir} is not a bundle: it has no manifest.json`, hint: 'give the directory pairbench export --out wrote' }]);
  let publicKey: string | undefined;
  if (keyFile !== undefined) {
    try {
      publicKey = readFileSync(keyFile, 'utf8');
    } catch (e) {
      return fail(io, json, [{ message: `cannot read the public key ${keyFile}: ${(e as Error).message}` }]);
    }
  }
  let progress: ((bytes: number) => void) | undefined;
  const r = verifyBundle(dir, (bytes, total) => (progress ??= byteProgress(io.stderr, io.env, json ? 'none' : progressMode, `verifying ${dir}`, total))(bytes));
  const root = rootDigest(dir);
  const rootProblem =
    expectedRoot === undefined || !root.ok
      ? null
      : root.value === expectedRoot.replace(/^sha256:/, '')
        ? null
        : `root digest ${root.value} is not the expected ${expectedRoot}: this is not the bundle that was published`;
  const signature = publicKey === undefined ? null : checkSignature(dir, publicKey);
  const ok = r.ok && rootProblem === null && (signature === null || signature.ok);
  if (json) {
    printJson(io, {
      ok,
      root_digest: root.ok ? root.value : null,
      ...(r.ok ? { files: r.value.files } : r.error),
      ...(rootProblem ? { root_problem: rootProblem } : {}),
      ...(signature ? { signature: signature.ok ? { ok: true, key_id: signature.value.key_id } : { ok: false, problem: signature.error } } : {}),
    });
    return ok ? EXIT.ok : EXIT.nodeFailed;
  }
  const lines: string[] = [];
  if (r.ok) lines.push(`bundle ok: ${r.value.files} files match manifest.json`);
  else
    lines.push(
      'bundle does NOT match manifest.json:',
      ...r.error.differs.map((f) => `differs  ${f}`),
      ...r.error.missing.map((f) => `missing  ${f}`),
      ...r.error.extra.map((f) => `extra    ${f}`),
    );
  if (root.ok) lines.push(`root digest sha256:${root.value}`);
  if (rootProblem) lines.push(`NOT the published bundle: ${rootProblem}`);
  if (signature) lines.push(signature.ok ? `signature ok (Ed25519, key ${signature.value.key_id.slice(0, 16)})` : `signature NOT valid: ${signature.error}`);
  io.stdout.write(lines.join('\n') + '\n');
  return ok ? EXIT.ok : EXIT.nodeFailed;
}

async function runGenerate(io: CliIO, json: boolean, kind: string, values: OptionValues): Promise<number> {
  const outcome = await generate(
    {
      kind,
      repo: values.repo,
      commit: values.commit,
      seed: values.seed,
      count: values.count,
      language: values.language,
      testCommand: values['test-command'],
      out: values.out,
      repeats: values.repeats,
      addTo: values['add-to'],
    },
    (line) => {
      if (!json) io.stderr.write(line + '\n');
    },
  );
  switch (outcome.status) {
    case 'usage':
      return usageError(io, json, 'generate', outcome.message);
    case 'refused':
      if (json) printJsonErrors(io.stdout, [{ message: outcome.message }]);
      else io.stderr.write(`pairbench generate: ${outcome.message}\n`);
      return EXIT.nodeFailed;
    case 'ok': {
      const { report, asked, commit, added } = outcome;
      const { tasks, dropped } = report;
      if (json) printJson(io, { ok: true, commit: commit.id, asked, tasks, dropped, added_to: added });
      else {
        const lines = commit.given === commit.id ? [] : [`${commit.given} is commit ${commit.id} (the tasks are pinned to it)`];
        lines.push(...tasks.map((t) => `wrote ${t.dir}  (${t.file}; fail_to_pass: ${t.covering.join(', ')})`));
        for (const d of dropped) lines.push(`dropped ${d.candidate}: ${d.reason}`);
        lines.push(`${tasks.length} task${tasks.length === 1 ? '' : 's'} written (up to ${asked} asked for), ${dropped.length} candidates dropped`);
        if (added?.ok) {
          if (added.removedPlaceholders.length)
            lines.push(`removed ${added.removedPlaceholders.join(', ')} from the matrix (init's placeholder, never written; its files are kept)`);
          lines.push(
            added.added.length
              ? `added ${added.added.join(', ')} to ${values['add-to']} (steps ${added.steps.join(', ')})`
              : `${values['add-to']} already lists every task`,
          );
          lines.push('next: pairbench doctor && pairbench plan');
        } else if (!added) lines.push("next: add the task ids to your config's task matrix (or run again with --add-to bench.config.yaml)");
        io.stdout.write(lines.join('\n') + '\n');
      }
      if (added && !added.ok) {
        if (!json) io.stderr.write(`pairbench generate: the tasks are written, but ${added.message}\n  hint: ${added.hint}\n`);
        return EXIT.nodeFailed;
      }
      return EXIT.ok;
    }
  }
}

/** `pairbench view`: an exported bundle (a directory) or the config's store, served until Ctrl-C. */
async function runView(io: CliIO, json: boolean, values: OptionValues, source: string | Loaded): Promise<number> {
  const { bundleData, serveView, storeData } = await import('./view.js');
  const port = values.port === undefined ? 7377 : Number(values.port);
  let data: ReturnType<typeof bundleData> & { dispose?: () => void };
  try {
    data = typeof source === 'string' ? bundleData(source) : storeData(source, io.env);
  } catch (e) {
    return fail(io, json, [{ message: errorMessage(e), hint: "give the directory pairbench export --out wrote, or no directory to view the config's store" }]);
  }
  const controller = new AbortController();
  const stop = () => controller.abort();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  try {
    return await serveView(data, io, { port, host: values.host ?? '127.0.0.1', json, signal: controller.signal });
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
    data.dispose?.();
  }
}

async function runInit(io: CliIO, json: boolean, dir: string, values: OptionValues): Promise<number> {
  const { init } = await import('./init.js');
  const outcome = init({ dir, repo: values.repo, commit: values.commit, testCommand: values['test-command'], fakeModel: values['fake-model'] === true });
  if (outcome.status !== 'ok') {
    return outcome.status === 'usage'
      ? usageError(io, json, 'init', outcome.message)
      : fail(io, json, [{ message: outcome.message, ...(outcome.hint ? { hint: outcome.hint } : {}) }]);
  }
  if (json) printJson(io, { ok: true, dir: outcome.dir, commit: outcome.commit, files: outcome.files });
  else {
    io.stdout.write(
      [
        ...outcome.files.map((f) => `wrote ${f}`),
        `next: write the context in context/CLAUDE.md and the tasks: tasks/first-task/task.yaml by hand, or derived from the repository's tests with`,
        `  pairbench generate stub_function --repo ${outcome.repo} --commit ${outcome.commit} --out ${join(outcome.dir, 'tasks')} --add-to ${join(outcome.dir, 'bench.config.yaml')}`,
        `then (in ${outcome.dir}) pairbench doctor && pairbench plan`,
      ].join('\n') + '\n',
    );
  }
  return EXIT.ok;
}

export async function main(argv: string[], io: CliIO): Promise<number> {
  const held: HeldLock[] = [];
  try {
    return await runCommand(argv, io, held);
  } catch (e) {
    // Whatever went wrong is said in words, never as a stack trace (PAIRBENCH_DEBUG=1 adds it).
    const hint =
      e instanceof CorruptBlobError
        ? "a blob the store needs is missing or damaged: 'pairbench fsck --repair' drops what needs it, and the next run rebuilds it"
        : 'this is a fault in pairbench itself: please report it, with the command and PAIRBENCH_DEBUG=1 output';
    if (argv.includes('--json')) printJsonErrors(io.stdout, [{ message: errorMessage(e), hint }]);
    else io.stderr.write(`pairbench: ${errorMessage(e)}\n${hint}\n${io.env['PAIRBENCH_DEBUG'] === '1' && e instanceof Error ? `${e.stack}\n` : ''}`);
    return EXIT.nodeFailed;
  } finally {
    for (const h of held) h.release();
  }
}

/** The commands that read and write records: each is live on the store while it runs, so gc waits for it. */
const STORE_USERS: ReadonlySet<CommandName> = new Set<CommandName>(['run', 'export', 'probe', 'worker', 'show', 'doctor']);

async function runCommand(argv: string[], io: CliIO, held: HeldLock[]): Promise<number> {
  const [first, ...rest] = argv;
  if (!first || first === '--help' || first === '-h' || first === 'help') {
    io.stdout.write(mainHelp() + '\n');
    return first ? EXIT.ok : EXIT.usage;
  }
  if (first === '--version' || first === '-V') {
    const { packageVersion } = await import('../pipeline/package-root.js');
    io.stdout.write(packageVersion() + '\n');
    return EXIT.ok;
  }
  const wantsJson = rest.includes('--json');
  if (!isCommandName(first)) {
    const guess = closest(first, COMMAND_NAMES);
    return usageError(io, wantsJson, null, `unknown command "${first}"${guess ? `; did you mean "${guess}"?` : ''}`);
  }
  const command = first;
  const line = parseCommandLine(command, rest);
  if (!line.ok) return usageError(io, wantsJson, command, line.error);
  const { values, positionals } = line.value;
  if (values.help) {
    io.stdout.write(helpFor(command) + '\n');
    return EXIT.ok;
  }
  const problem = operandProblem(command, positionals) ?? optionProblem(command, values);
  if (problem) return usageError(io, wantsJson, command, problem);
  const json = Boolean(values.json);
  if (command === 'generate') return runGenerate(io, json, positionals[0]!, values);
  if (command === 'init') return runInit(io, json, positionals[0] ?? '.', values);
  if (command === 'verify-bundle') return runVerifyBundle(io, json, positionals[0]!, values.key, values.root, (values.progress ?? 'auto') as ProgressMode);
  if (command === 'view' && positionals[0] !== undefined) return runView(io, json, values, positionals[0]);
  const loaded = loadProject(values.config ?? DEFAULT_CONFIG_FILE, values.store, io.env);
  if (!loaded.ok) return fail(io, json, loaded.error);
  const { graph, ctx, inputs, config } = loaded.value;
  if (STORE_USERS.has(command))
    held.push(
      await ctx.store.use.enter(`pairbench ${command} --config ${config.configFile}`, (holder) =>
        io.stderr.write(`pairbench: waiting for gc to finish with the store (${holder})\n`),
      ),
    );

  switch (command) {
    case 'view':
      return runView(io, json, values, loaded.value);
    case 'doctor': {
      // Loaded on demand: doctor talks to Docker, and a no-op run should not pay for that.
      const { runDoctor } = await import('./doctor.js');
      return runDoctor(loaded.value, io, json, undefined, { canary: !values['skip-canary'] });
    }
    case 'probe': {
      const controller = new AbortController();
      const onSignal = () => controller.abort(new Error('interrupted'));
      process.on('SIGINT', onSignal);
      try {
        const { runProbe } = await import('./probe.js');
        return await runProbe(loaded.value, io, json, positionals[0], { signal: controller.signal });
      } finally {
        process.off('SIGINT', onSignal);
      }
    }
    case 'plan': {
      const sel = selectNodes(graph, positionals);
      if (sel.unknown.length) return fail(io, json, unknownNodes(graph, sel.unknown));
      const entries = plan(ctx, inputs, sel.nodes, io.env);
      if (json) {
        const toRun = entries.filter((e) => e.status === 'run').length;
        printJson(io, { ok: true, total: entries.length, cached: entries.length - toRun, to_run: toRun, nodes: entries });
      } else printPlan(io, graph, entries, Boolean(values.all));
      return EXIT.ok;
    }
    case 'run': {
      const sel = selectNodes(graph, positionals);
      if (sel.unknown.length) return fail(io, json, unknownNodes(graph, sel.unknown));
      // Preregistration: a cohort version that has executed attempts keeps its frozen fields.
      const cohorts = cohortsOf(sel.nodes, inputs, io.env);
      const admitted = await admitCohorts(ctx, cohorts);
      if (admitted.refusals.length)
        return fail(
          io,
          json,
          admitted.refusals.map((message) => ({ message })),
        );
      if (!json) for (const n of admitted.notes) io.stderr.write(`${n}\n`);
      const shown = json ? { event: () => undefined } : chooseReporter(io, values.progress, Boolean(values.verbose));
      const binder = observationBinder(ctx, cohorts, admitted);
      const reporter: Reporter = {
        event: (e) => {
          binder.event(e);
          shown.event(e);
        },
        ...(shown.close ? { close: () => shown.close!() } : {}),
      };
      const controller = new AbortController();
      let interrupts = 0;
      const onSignal = () => {
        interrupts++;
        if (interrupts > 1) process.exit(EXIT.interrupted);
        io.stderr.write('\npairbench: interrupted; stopping running nodes (completed ones are kept). Press Ctrl-C again to quit at once.\n');
        controller.abort(new Error('interrupted'));
      };
      process.on('SIGINT', onSignal);
      process.on('SIGTERM', onSignal);
      const shard = values.shard ? parseShard(values.shard) : undefined;
      if (shard && !shard.ok) return fail(io, json, [{ message: shard.error }], EXIT.usage);
      // Remote-cache warnings (a record ignored, the server gone) are printed, and kept for --json, which prints no events.
      const remoteWarnings: string[] = [];
      const remote = remoteCacheFor(config, { url: values['remote-cache'], mode: values['cache-mode'] }, io.env, (message) => {
        remoteWarnings.push(message);
        reporter.event({ type: 'warning', message });
      });
      if (remote && !remote.ok) return fail(io, json, [{ message: remote.error }], EXIT.usage);
      const executor = values.executor ? await (await import('./worker.js')).queueExecutor(values.executor, ctx, remote?.value, sel.nodes) : undefined;
      if (executor && !executor.ok) return fail(io, json, [{ message: executor.error }], EXIT.usage);
      try {
        const { summary, states } = await run(
          ctx,
          inputs,
          {
            reporter,
            signal: controller.signal,
            hostEnv: io.env,
            ...(values.jobs ? { jobs: Number(values.jobs) } : {}),
            ...(remote ? { remote: remote.value } : {}),
            ...(shard ? { shard: shard.value } : {}),
            ...(executor ? { executor: executor.value } : {}),
            provenanceOf: provenanceFor(ctx, cohorts, admitted),
          },
          sel.nodes,
        ).finally(() => (executor?.ok ? executor.value.close() : undefined));
        // What this command reads after the run (each cohort's analysis) is made local if it came from the remote cache.
        if (remote?.ok) {
          const kindOf = new Map(graph.nodes.map((n) => [n.id, n.kind.name]));
          for (const [id, s] of states) {
            if ((s.status === 'cached' || s.status === 'executed') && kindOf.get(id) === 'analyze')
              await ensureLocal(ctx.store, remote.value, Object.values(s.record.outputs));
          }
        }
        await reporter.close?.();
        await binder.settled();
        const reuse = await recordCohorts(ctx, cohorts, states);
        // What this config reaches stays through another config's gc (a run of some nodes adds to it).
        const reached = [...states.values()].flatMap((s) => (s.status === 'cached' || s.status === 'executed' ? [s.record.key] : []));
        const rootName = `config ${config.configFile}`;
        const previous = positionals.length ? (ctx.store.roots().find((r) => r.name === rootName)?.keys ?? []) : [];
        ctx.store.setRoot(rootName, previous.length ? [...previous, ...reached] : reached, { kind: 'config', config: config.configFile });
        if (!json) for (const line of reuse) io.stderr.write(`${line}\n`);
        const outcome = runOutcome(ctx, states, values.config ? ` --config ${values.config}` : '');
        if (!json) for (const line of formatRunOutcome(outcome)) io.stdout.write(`${line}\n`);
        // Beside the verdict: why these attempts ran unisolated, and how to isolate them on this machine.
        const fallback = isolationFallback();
        if (fallback && !json)
          io.stdout.write(
            `warning: sandbox backend auto ran unisolated (local): ${fallback.cause}\n  fix: ${fallback.fix}; then bump each analysis' version (the sandbox is frozen with it), or use a new store\n`,
          );
        if (json) {
          printJson(io, {
            ok: summary.failed === 0 && summary.skipped === 0,
            summary: {
              total: summary.total,
              cached: summary.cached,
              executed: summary.executed,
              failed: summary.failed,
              skipped: summary.skipped,
              duration_ms: summary.durationMs,
            },
            reuse,
            ...(remote ? { remote_cache: remote.value.stats } : {}),
            comparisons: outcome.comparisons,
            warnings: [...remoteWarnings.map((message) => ({ cohort: null, message })), ...outcome.warnings],
            reports: outcome.reports,
            nodes: [...states].map(([node, s]) => ({
              node,
              status: s.status,
              ...(s.status === 'cached' || s.status === 'executed' ? { key: s.record.key, outputs_digest: s.record.outputs_digest } : {}),
              ...(s.status === 'failed' ? { failure: s.failure } : {}),
              ...(s.status === 'skipped' ? { because: s.because } : {}),
            })),
          });
        }
        // Which nodes failed, by name (the summary line only counts them).
        const failed = [...states].filter(([, st]) => st.status === 'failed').map(([id]) => id);
        if (!json && failed.length) {
          const listed = failed.slice(0, 10).join(', ') + (failed.length > 10 ? ` and ${failed.length - 10} more` : '');
          io.stderr.write(
            controller.signal.aborted
              ? `interrupted: ${failed.length} node(s) stopped before they finished: ${listed}; run again to build them (completed nodes are kept)\n`
              : `failed: ${listed} ('pairbench show NODE log' shows why)\n`,
          );
        }
        if (controller.signal.aborted) return EXIT.interrupted;
        // A shard leaves other shards' nodes (and what needs them) skipped by design.
        const shardSkips = shard
          ? [...states.values()].filter((s) => s.status === 'skipped' && (s.because.startsWith('not in shard') || s.because.startsWith('upstream'))).length
          : 0;
        return summary.failed || summary.skipped - shardSkips ? EXIT.nodeFailed : EXIT.ok;
      } finally {
        process.off('SIGINT', onSignal);
        process.off('SIGTERM', onSignal);
      }
    }
    case 'explain': {
      const id = positionals[0]!.replace(/\/+$/, '');
      const node = graph.byId.get(id);
      if (!node) return fail(io, json, unknownNodes(graph, [id]));
      const sel = selectNodes(graph, [id]);
      const entries = plan(ctx, inputs, sel.nodes, io.env);
      const report = explainNode(ctx, node, entries, inputs, io.env);
      if (json) printJson(io, { ok: true, ...report.json });
      else io.stdout.write(report.text + '\n');
      return EXIT.ok;
    }
    case 'show': {
      const id = positionals[0]!.replace(/\/+$/, '');
      const node = graph.byId.get(id);
      if (!node) return fail(io, json, unknownNodes(graph, [id]));
      const { showNode, formatListing } = await import('./show.js');
      const entries = plan(ctx, inputs, selectNodes(graph, [id]).nodes, io.env);
      const ownKeys = new Set(ctx.store.roots().find((r) => r.name === `config ${config.configFile}`)?.keys ?? []);
      let shown = showNode(ctx, node, entries, ownKeys, positionals[1], Boolean(values.list));
      // A record replayed from the remote cache: its bytes are fetched (read-only) and shown.
      if (!shown.ok && shown.code === 'not-local') {
        const remote = remoteCacheFor(config, { url: values['remote-cache'], mode: 'read-only' }, io.env, (m) => io.stderr.write(`warning: ${m}\n`));
        if (remote && !remote.ok) return fail(io, json, [{ message: remote.error }], EXIT.usage);
        if (remote && (await ensureLocal(ctx.store, remote.value, shown.outputs)))
          shown = showNode(ctx, node, entries, ownKeys, positionals[1], Boolean(values.list));
      }
      if (!shown.ok)
        return fail(
          io,
          json,
          [{ message: shown.message, hint: shown.hint }],
          shown.code === 'not-built' || shown.code === 'not-local' ? EXIT.nodeFailed : EXIT.usage,
        );
      if (shown.note && !json) io.stderr.write(`note: ${shown.note}\n`);
      if (shown.kind === 'list') {
        if (json) printJson(io, { ok: true, node: shown.node, output: shown.output, entries: shown.entries, note: shown.note });
        else io.stdout.write(formatListing(shown) + '\n');
      } else if (json) {
        const text = shown.bytes.toString('utf8');
        const binary = !Buffer.from(text, 'utf8').equals(shown.bytes);
        printJson(io, {
          ok: true,
          node: shown.node,
          output: shown.output,
          digest: shown.digest,
          bytes: shown.bytes.length,
          note: shown.note,
          ...(binary ? { base64: shown.bytes.toString('base64') } : { text }),
        });
      } else io.stdout.write(shown.bytes);
      return EXIT.ok;
    }
    case 'status': {
      const entries = plan(ctx, inputs, graph.nodes, io.env);
      const byStep = new Map<string, { nodes: number; cached: number; to_run: number; failed_last: number }>();
      for (const s of graph.stepOrder) byStep.set(s, { nodes: 0, cached: 0, to_run: 0, failed_last: 0 });
      const failures: { node: string; at: string; reason: string; message: string }[] = [];
      for (const e of entries) {
        const row = byStep.get(e.node.split('/')[0]!)!;
        row.nodes++;
        if (e.status === 'cached') row.cached++;
        else {
          row.to_run++;
          const h = ctx.store.nodes.get(e.node);
          if (h?.last_failure && h.last_failure.key === e.key) {
            row.failed_last++;
            failures.push({ node: e.node, at: h.last_failure.at, reason: h.last_failure.reason, message: h.last_failure.message });
          }
        }
      }
      if (json) {
        printJson(io, { ok: true, config: config.configFile, store: config.storeDir, steps: Object.fromEntries(byStep), failed: failures });
        return EXIT.ok;
      }
      const w = Math.max(4, ...graph.stepOrder.map((s) => s.length));
      const lines = [`store ${config.storeDir}`, `${'step'.padEnd(w)}  nodes  cached  to run  failed last run`];
      for (const [s, r] of byStep)
        lines.push(
          `${s.padEnd(w)}  ${String(r.nodes).padStart(5)}  ${String(r.cached).padStart(6)}  ${String(r.to_run).padStart(6)}  ${String(r.failed_last).padStart(15)}`,
        );
      for (const f of failures) lines.push(`failed  ${f.node} (${f.at}): ${f.message}`);
      io.stdout.write(lines.join('\n') + '\n');
      return EXIT.ok;
    }
    case 'freeze':
    case 'history': {
      const all = cohortsOf(graph.nodes, inputs, io.env);
      const chosen = positionals.length ? all.filter((c) => positionals.includes(c.name)) : all;
      const missing = positionals.filter((p) => !all.some((c) => c.name === p));
      if (missing.length)
        return fail(
          io,
          json,
          missing.map((m) => ({ message: `no cohort "${m}" (a cohort is an analyze step; these are: ${all.map((c) => c.name).join(', ') || 'none'})` })),
        );
      if (command === 'freeze') {
        const admitted = await admitCohorts(ctx, chosen, { acknowledgeReset: Boolean(values['acknowledge-reset']) });
        if (admitted.refusals.length && !json) for (const n of admitted.notes) io.stderr.write(`${n}\n`);
        if (admitted.refusals.length)
          return fail(
            io,
            json,
            admitted.refusals.map((message) => ({ message })),
          );
        const lines = chosen.map((c) => `cohort ${c.name} version ${c.version}: freeze ${c.freeze.digest}`);
        if (json)
          printJson(io, {
            ok: true,
            cohorts: chosen.map((c) => ({ cohort: c.name, version: c.version, freeze_digest: c.freeze.digest, fields: c.freeze.fields })),
            notes: admitted.notes,
          });
        else io.stdout.write([...admitted.notes, ...lines].join('\n') + '\n');
        return EXIT.ok;
      }
      const registry = registryOf(ctx);
      const read = chosen.map((c) => ({ c, r: registry.read(c.name) }));
      const broken = read.flatMap(({ c, r }) => (r.ok ? [] : [{ message: `cohort ${c.name}: its registry log is broken: ${r.problem}` }]));
      if (broken.length) return fail(io, json, broken, EXIT.nodeFailed);
      const records = read.flatMap(({ r }) => (r.ok ? [r.record] : []));
      if (json) printJson(io, { ok: true, cohorts: records });
      else io.stdout.write(records.flatMap(historyLines).join('\n') + '\n');
      return EXIT.ok;
    }
    case 'export': {
      // Writes out the cached bundle of each export node (or of the named ones).
      const sel = selectNodes(graph, positionals);
      if (sel.unknown.length) return fail(io, json, unknownNodes(graph, sel.unknown));
      const exports = sel.nodes.filter((n) => n.kind === exportStep);
      if (!exports.length) return fail(io, json, [{ message: 'no export step in the selection', hint: 'add a step of kind export, then run pairbench run' }]);
      const entries = plan(ctx, inputs, graph.nodes, io.env);
      let signingKey: string | undefined;
      if (values.sign !== undefined) {
        try {
          signingKey = readFileSync(values.sign, 'utf8');
        } catch (e) {
          return fail(io, json, [{ message: `cannot read the signing key ${values.sign}: ${(e as Error).message}` }]);
        }
      }
      const { rootDigest, signBundle } = await import('../steps/export/bundle.js');
      const written: {
        dir: string;
        visibility: 'public' | 'private';
        root_digest: string;
        key_id: string | null;
        harbor_job?: { dir: string; trials: number };
      }[] = [];
      // Other configs may share this store and have export nodes of the same name: only the key
      // this config plans, or failing that the last one a run of this config reached, is its bundle.
      const ownKeys = new Set(ctx.store.roots().find((r) => r.name === `config ${config.configFile}`)?.keys ?? []);
      for (const n of exports) {
        const planned = entries.find((x) => x.node === n.id);
        let found: Lookup | undefined = planned?.status === 'cached' && planned.key ? lookup(ctx.store, planned.key) : undefined;
        if (!found || found.status !== 'hit') {
          // Stale (e.g. an attempt with a transient infrastructure fault waits to be retried): the
          // bundle the last run of this config built is still its record.
          const latest = ctx.store.nodes.get(n.id)?.latest;
          const own = latest && ownKeys.has(latest.key) ? lookup(ctx.store, latest.key) : lastBuiltAmong(ctx, n.id, ownKeys);
          if (!own || own.status !== 'hit')
            return fail(io, json, [
              { message: `${n.id} has no bundle built from this config (${config.configFile})`, hint: `run 'pairbench run ${n.id}' first` },
            ]);
          found = own;
          if (!json)
            io.stderr.write(`note: ${n.id} is stale (see 'pairbench plan'); writing the bundle this config's last run built at ${own.record.started_at}\n`);
        }
        const dest = exports.length === 1 ? resolvePath(values.out!) : join(resolvePath(values.out!), n.id);
        if (existsSync(dest) && readdirSync(dest).length)
          return fail(io, json, [{ message: `${dest} exists and is not empty`, hint: 'choose an empty or new directory' }]);
        // --harbor-layout: dest is a Harbor jobs directory, the bundle inside its one job (written whole, then renamed into place).
        const staging = values['harbor-layout'] ? `${dest}.partial-${process.pid}` : null;
        if (staging) rmSync(staging, { recursive: true, force: true });
        const bundleDir = staging ? join(staging, 'bundle') : dest;
        // A bundle whose record came from the remote cache is fetched now (records travel first, blobs when read).
        const remote = remoteCacheFor(config, { url: values['remote-cache'], mode: 'read-only' }, io.env, (message) =>
          io.stderr.write(`warning: ${message}\n`),
        );
        if (remote?.ok) await ensureLocal(ctx.store, remote.value, [found.record.outputs['bundle']!]);
        const bundle = found.record.outputs['bundle']!;
        // The public form is made from the private one, which is written beside it first (and removed).
        const visibility = values.private ? 'private' : values.public || specOf(n.step, 'export').public ? 'public' : 'private';
        const privateDir = visibility === 'public' ? `${bundleDir}.private-${process.pid}` : bundleDir;
        rmSync(`${bundleDir}.private-${process.pid}`, { recursive: true, force: true });
        const wrote = writeStoredBundle(
          ctx.store,
          bundle,
          privateDir,
          byteProgress(io.stderr, io.env, json ? 'none' : ((values.progress ?? 'auto') as ProgressMode), `writing ${n.id}`, bundle.size),
        );
        if (!wrote.ok)
          return fail(io, json, [{ message: `${n.id}: ${wrote.error}`, hint: `run 'pairbench run' to rebuild it, then export again` }], EXIT.nodeFailed);
        if (visibility === 'public') {
          const { publicBundle } = await import('../steps/export/public-bundle.js');
          const { writeBundle } = await import('../steps/export/bundle.js');
          const pub = publicBundle(privateDir);
          const made = writeBundle(bundleDir, pub.files);
          rmSync(privateDir, { recursive: true, force: true });
          if (!made.ok) return fail(io, json, [{ message: `${n.id}: ${made.error}` }], EXIT.nodeFailed);
          if (!json)
            io.stderr.write(
              `public form: ${pub.withheld.length} hidden file(s) withheld, ${pub.scrubbed.length} file(s) with quotes of them scrubbed (digests in withheld.json)\n`,
            );
        }
        let dir = dest;
        let job: { dir: string; trials: number } | null = null;
        if (staging) {
          const laid = await harborLayout(staging, dest);
          if (!laid.ok) return fail(io, json, [{ message: `${n.id}: ${laid.error}` }], EXIT.nodeFailed);
          ({ bundle: dir, job } = laid.value);
        }
        const signed = signingKey === undefined ? null : signBundle(dir, signingKey);
        if (signed && !signed.ok) return fail(io, json, [{ message: `${n.id}: ${signed.error}` }]);
        const root = rootDigest(dir);
        if (!root.ok) return fail(io, json, [{ message: root.error }], EXIT.nodeFailed);
        written.push({ dir, visibility, root_digest: root.value, key_id: signed?.ok ? signed.value.key_id : null, ...(job ? { harbor_job: job } : {}) });
      }
      if (json) printJson(io, { ok: true, bundles: written });
      else
        io.stdout.write(
          written
            .map(
              (w) =>
                `${w.harbor_job ? `wrote Harbor job ${w.harbor_job.dir} (${w.harbor_job.trials} trials; open it with: harbor view ${dirname(w.harbor_job.dir)})\n` : ''}wrote ${w.dir} (${w.visibility})\nroot digest sha256:${w.root_digest}${w.key_id ? ` (signed, Ed25519 key ${w.key_id.slice(0, 16)})` : ''}\ncheck it with: pairbench verify-bundle ${w.dir} --root sha256:${w.root_digest}`,
            )
            .join('\n') + '\n',
        );
      return EXIT.ok;
    }
    case 'worker': {
      const { runWorker } = await import('./worker.js');
      return runWorker(io, json, ctx, inputs, { redis: values.redis, concurrency: values.concurrency, remoteCache: values['remote-cache'] });
    }
    case 'fsck': {
      const { fsck, fsckClean } = await import('../pipeline/store/fsck.js');
      const report = fsck(ctx.store, { repair: Boolean(values.repair) });
      const clean = fsckClean(report);
      if (json) printJson(io, { ok: clean, ...report });
      else {
        const verb = report.repaired ? 'dropped' : 'found';
        const lines = [
          `checked ${report.blobs_checked} blobs (${(report.bytes_checked / 1e6).toFixed(2)} MB) and ${report.records_checked} records in ${ctx.store.dir}`,
          ...report.corrupt_blobs.map((d) => `${verb} corrupt blob ${d} (its bytes do not hash to its name)`),
          ...report.corrupt_records.map((r) => `${verb} corrupt record ${r.key}: ${r.reason}`),
          ...report.broken_records.map((r) => `${verb} record ${r.key} of ${r.node}: it needs ${r.blobs.length} missing or corrupt blob(s)`),
          ...(report.corrupt_pack ? [report.corrupt_pack] : []),
          clean
            ? 'the store is intact'
            : report.repaired
              ? "repaired: the next 'pairbench run' rebuilds what was dropped"
              : "run 'pairbench fsck --repair' to drop them; the next run rebuilds them",
        ];
        io.stdout.write(lines.join('\n') + '\n');
      }
      return clean ? EXIT.ok : EXIT.nodeFailed;
    }
    case 'gc': {
      // The store alone: no run is live beside gc (runs that start meanwhile wait for it).
      const taken = await ctx.store.use.exclusive('gc', {
        wait: !values['if-idle'],
        onWait: (users) => io.stderr.write(`pairbench gc: waiting for what is using the store to end: ${users.join('; ')}\n`),
      });
      if ('busy' in taken)
        return fail(
          io,
          json,
          [{ message: `the store is in use: ${taken.busy.join('; ')}`, hint: 'run gc when it ends, or without --if-idle to wait for it' }],
          EXIT.nodeFailed,
        );
      try {
        return gc(io, json, values, loaded.value);
      } finally {
        taken.held.release();
      }
    }
  }
}

/** `pairbench gc`, with the store held alone. */
function gc(io: CliIO, json: boolean, values: OptionValues, { graph, ctx, inputs, config }: Loaded): number {
  const entries = plan(ctx, inputs, graph.nodes, io.env);
  const reachable = new Set<string>();
  for (const e of entries) {
    if (e.status === 'cached') reachable.add(e.key);
    const latest = ctx.store.nodes.get(e.node)?.latest;
    if (latest && lookup(ctx.store, latest.key).status === 'hit') reachable.add(latest.key);
  }
  // What any other config sharing this store reached in its last run, and every attempt a
  // registered cohort version executed, is kept too (roots of configs that no longer exist are dropped).
  const roots = ctx.store.roots();
  const goneRoots = roots.filter((r) => r.about['kind'] === 'config' && r.about['config'] && !existsSync(r.about['config']));
  for (const r of roots) if (!goneRoots.includes(r)) for (const k of r.keys) reachable.add(k);
  const maxBytes = values['max-size'] !== undefined ? parseSize(values['max-size']) : config.maxStoreBytes;
  const report = {
    ...collectGarbage(ctx.store, {
      maxBytes,
      dryRun: Boolean(values['dry-run']),
      reachable,
      keepNewerThanMs: values['keep-newer-than'] !== undefined ? parseDuration(values['keep-newer-than']) : GC_GRACE_MS,
    }),
    roots_kept: roots.length - goneRoots.length,
    removed_roots: goneRoots.map((r) => r.name),
  };
  if (!values['dry-run']) for (const r of goneRoots) rmSync(r.file, { force: true });
  if (json) {
    printJson(io, { ok: true, ...report });
    return EXIT.ok;
  }
  const mb = (n: number) => `${(n / 1e6).toFixed(2)} MB`;
  const verb = report.dry_run ? 'would remove' : 'removed';
  const lines = [
    `store ${mb(report.bytes_before)} (cap ${mb(report.max_bytes)}); ${report.records_reachable} of ${report.records_total} records are reached by this config, by ${report.roots_kept} root(s) of other configs and cohorts sharing the store, and kept`,
    ...(report.records_recent || report.blobs_recent
      ? [`kept ${report.records_recent} records and ${report.blobs_recent} blobs newer than the grace period (--keep-newer-than)`]
      : []),
    ...report.removed_roots.map((r) => `${verb} the root of ${r} (its config file is gone)`),
    ...report.removed_records.map((r) => `${verb} ${r.node} ${r.key.slice(0, 12)} (last used ${r.last_used})`),
    `${verb} ${report.removed_records.length} records and ${report.removed_blobs} blobs (${mb(report.removed_blob_bytes)}); ${report.removed_temp.length} temp entries, ${report.removed_locks.length} stale locks`,
    `store ${report.dry_run ? 'would be' : 'is now'} ${mb(report.bytes_after)}`,
  ];
  io.stdout.write(lines.join('\n') + '\n');
  return EXIT.ok;
}
