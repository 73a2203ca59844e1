import { run, type NodeState } from '../../pipeline/engine.js';
import { ensureLocal } from '../../pipeline/caching/remote-tier.js';
import type { Reporter, RunSummary } from '../../pipeline/events.js';
import { parseShard } from '../../pipeline/shard.js';
import { analyzeStep } from '../../steps/analyze-step.js';
import { isolationFallback } from '../../steps/run.js';
import { admitCohorts, cohortsOf, drawKeeper, observationBinder, provenanceFor, recordCohorts, staleAnnotations } from '../cohorts.js';
import { withUpstream } from '../../pipeline/dag.js';
import { readLock } from '../../steps/record-lock.js';
import { ANY_OPERANDS, CONFIG_ERROR, defineCommand, EXIT, fail } from '../command.js';
import type { CliIO } from '../command-context.js';
import { printJson } from '../json-output.js';
import { selectOrFail } from '../node-selection.js';
import { configRootName } from '../project.js';
import { CONFIG_CACHE_OPTIONS, remoteCacheFor, remoteFlags } from '../remote.js';
import { READ_STORE_OPTION, readStoresOf } from '../read-stores.js';
import { chooseReporter } from '../reporter.js';
import { formatRunOutcome, runOutcome, type RunOutcome } from '../run-summary.js';
import { judgeGate, type GateResult } from '../verdict-gate.js';
import { parseFailOn, parseFailOnGates, VERDICTS } from '../../stats/verdicts.js';

/** `run --json`: the summary, what was reused, each comparison's verdict, and every node's state. */
function printRunJson(
  io: CliIO,
  r: {
    summary: RunSummary;
    states: ReadonlyMap<string, NodeState>;
    reuse: string[];
    outcome: RunOutcome;
    remoteWarnings: string[];
    remoteStats?: unknown;
    gate?: GateResult;
  },
): void {
  const { summary, states, outcome } = r;
  printJson(io.stdout, {
    ok: summary.failed === 0 && summary.interrupted === 0 && summary.skipped === 0,
    summary: {
      total: summary.total,
      cached: summary.cached,
      executed: summary.executed,
      failed: summary.failed,
      interrupted: summary.interrupted,
      skipped: summary.skipped,
      duration_ms: summary.elapsed,
    },
    reuse: r.reuse,
    ...(r.remoteStats ? { remote_cache: r.remoteStats } : {}),
    comparisons: outcome.comparisons,
    ...(r.gate ? { gate: r.gate } : {}),
    warnings: [...r.remoteWarnings.map((message) => ({ cohort: null, message })), ...outcome.warnings],
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

/** Which nodes failed, by name (the summary line only counts them). */
function printFailed(io: CliIO, states: ReadonlyMap<string, NodeState>, interrupted: boolean): void {
  const failed = [...states].filter(([, st]) => st.status === 'failed').map(([id]) => id);
  if (!failed.length) return;
  const listed = failed.slice(0, 10).join(', ') + (failed.length > 10 ? ` and ${failed.length - 10} more` : '');
  io.stderr.write(
    interrupted
      ? `interrupted: ${failed.length} node(s) stopped before they finished: ${listed}; run again to build them (completed nodes are kept)\n`
      : `failed: ${listed} ('pairbench show NODE log' shows why)\n`,
  );
}

export const runCommand = defineCommand({
  name: 'run',
  synopsis: 'run [NODE...]',
  summary: 'build every stale node (or only NODE... and what they need)',
  usage: 'pairbench run [NODE...] [options]',
  about: `Builds every node whose key has no record in the store. Cached nodes are reused;
a failing node fails only the nodes downstream of it. NODE is a node id
(run/t1/treatment/2), a prefix of one (run/t1) or a step name; its upstream nodes
are built too.`,
  options: [
    ['jobs', 'N', 'how many nodes execute at once (default: concurrency.global, 4)'],
    ['verbose', null, 'also list cached nodes'],
    ['progress', 'MODE', 'auto (listr2 on a TTY, plain lines otherwise or when CI is set), plain, or none'],
    [
      'shard',
      'i/N',
      `build only this shard's nodes: those of the tasks that hash to shard i of N
(a task's chain stays in one shard); shared roots (a context step) run in any
shard that finds them uncached; nodes that gather tasks (analyze, export) are
left to a final run without --shard. Skipped nodes do not fail a shard (exit 0).`,
    ],
    ['remote-cache', 'URL', 'the remote cache tier (overrides cache.remote): read on a local miss,\nwritten after a node succeeds (see README "Remote cache")'],
    ['cache-mode', 'MODE', 'read-write or read-only (a pull-request job: it never writes)'],
    ...CONFIG_CACHE_OPTIONS,
    READ_STORE_OPTION,
    [
      'fail-on',
      'LIST',
      `exit ${EXIT.gateFailed} when a comparison's verdict is one of LIST, comma-separated
(${VERDICTS.join(', ')}), or when the run analysed none;
unisolated also fails a comparison an unisolated arm ran in, whatever
its verdict; e.g. --fail-on negative,unisolated,invalid on a PR's check`,
    ],
    [
      'redraw',
      null,
      `draw again an agent attempt or verifier run whose first draw under a
preregistered version cannot be restored from the store (its record and
outputs are gone); without it such a node is refused. Every re-draw is on
record: history, the bundle and the report's status bar list it`,
    ],
    [
      'executor',
      'redis://HOST:PORT/DB',
      `hand every node that must run to 'pairbench worker' processes through
BullMQ queues on this Redis (one queue per step kind; job id = the node's
key; concurrency.kinds limits hold across the fleet); needs the remote cache`,
    ],
  ],
  operands: ANY_OPERANDS,
  config: true,
  usesStore: true,
  memo: true,
  exits: `0 every node built or cached (or left to another shard); 1 some node failed or was skipped; ${CONFIG_ERROR}, or a cohort's frozen field changed; ${EXIT.gateFailed} every node built, but --fail-on's gate failed (a verdict in its list, or no verdict); 130 interrupted.`,
  async run({ io, json, values, operands, project: { graph, ctx, inputs, config } }) {
    const sel = selectOrFail(io, json, graph, operands);
    if ('code' in sel) return sel.code;
    // Preregistration: a cohort version that has executed attempts keeps its frozen fields.
    const cohorts = cohortsOf(sel.nodes, inputs, io.env);
    const readStores = readStoresOf(values['read-store'], ctx.store.dir);
    if (!readStores.ok) return fail(io, json, [{ message: readStores.error }], EXIT.usage);
    const lock = readLock(config.configFile);
    if (!lock.ok) return fail(io, json, [{ message: lock.problem }]);
    const admitted = await admitCohorts(ctx, cohorts, lock.lock ? { lock: { path: lock.path, lock: lock.lock, stores: readStores.value } } : {});
    if (admitted.refusals.length)
      return fail(
        io,
        json,
        admitted.refusals.map((message) => ({ message })),
      );
    if (!json) for (const n of admitted.notes) io.stderr.write(`${n}\n`);
    const shown = json ? { event: () => undefined } : chooseReporter(io, values.progress, Boolean(values.verbose));
    const binder = observationBinder(ctx, cohorts, admitted);
    const draws = drawKeeper(ctx, cohorts, admitted, { redraw: Boolean(values.redraw) });
    const reporter: Reporter = {
      event: (e) => {
        binder.event(e);
        draws.event(e);
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
    const remote = remoteCacheFor(config, remoteFlags(values, values['cache-mode']), io.env, (message) => {
      remoteWarnings.push(message);
      reporter.event({ type: 'warning', message });
    });
    if (remote && !remote.ok) return fail(io, json, [{ message: remote.error }], EXIT.usage);
    const executor = values.executor ? await (await import('../worker.js')).queueExecutor(values.executor, ctx, remote?.value, sel.nodes) : undefined;
    if (executor && !executor.ok) return fail(io, json, [{ message: executor.error }], EXIT.usage);
    try {
      const runOptions = {
        reporter,
        signal: controller.signal,
        hostEnv: io.env,
        ...(values.jobs ? { jobs: Number(values.jobs) } : {}),
        ...(remote ? { remote: remote.value } : {}),
        ...(readStores.value.length ? { readStores: readStores.value } : {}),
        ...(shard ? { shard: shard.value } : {}),
        ...(executor ? { executor: executor.value } : {}),
        provenanceOf: provenanceFor(ctx, cohorts, admitted),
        recall: draws.recall,
      };
      // The exports were annotated with the record as loaded (what admission adds changes none of it):
      // only what the run itself appends can make one stale, so a run that appends nothing skips the check.
      const appendedBefore = ctx.store.logs.appended;
      const { summary, states } = await run(ctx, inputs, runOptions, sel.nodes).finally(() => (executor?.ok ? executor.value.close() : undefined));
      // What this command reads after the run (each cohort's analysis) is made local if it came from the remote cache.
      if (remote?.ok) {
        for (const [id, s] of states) {
          if ((s.status === 'cached' || s.status === 'executed') && graph.byId.get(id)?.kind === analyzeStep)
            await ensureLocal(ctx.store, remote.value, Object.values(s.record.outputs));
        }
      }
      await reporter.close?.();
      await binder.settled();
      for (const problem of await draws.settled()) io.stderr.write(`warning: ${problem}\n`);
      let reuse = await recordCohorts(ctx, cohorts, states);
      // A bundle tells the record: what this run put on it (a re-draw, an analysis another cohort
      // made first) is in its bundle now, by a second pass over what it changed (the rest is cached).
      const stale = controller.signal.aborted || ctx.store.logs.appended === appendedBefore ? [] : await staleAnnotations(ctx, sel.nodes, inputs, io.env);
      if (stale.length) {
        const again = new Set(withUpstream(stale));
        const second = await run(
          ctx,
          inputs,
          // Here, quietly: the queue executor is closed by now, and only exports are left to build.
          { ...runOptions, reporter: { event: () => undefined }, executor: undefined },
          sel.nodes.filter((n) => again.has(n)),
        );
        // Only the refreshed nodes take their second state (the rest were built by the first pass).
        for (const n of stale) {
          const st = second.states.get(n.id);
          if (!st) continue;
          if (st.status === 'failed') summary.failed++;
          states.set(n.id, st);
        }
        reuse = await recordCohorts(ctx, cohorts, states);
      }
      // What this config reaches stays through another config's gc (a run of some nodes adds to it).
      const reached = [...states.values()].flatMap((s) => (s.status === 'cached' || s.status === 'executed' ? [s.record.key] : []));
      const rootName = configRootName(config.configFile);
      const previous = operands.length ? (ctx.store.roots().find((r) => r.name === rootName)?.keys ?? []) : [];
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
      const gate = values['fail-on'] ? judgeGate(outcome.comparisons, parseFailOn(values['fail-on'])) : undefined;
      const againstBase = values['fail-on'] ? [...parseFailOnGates(values['fail-on'])] : [];
      if (againstBase.length && !json)
        io.stderr.write(
          `note: --fail-on ${againstBase.join(', ')}: a gate of a pull request against its base, which pairbench check judges (a run has no base)\n`,
        );
      if (gate?.message && !json) io.stderr.write(`gate failed: ${gate.message}\n`);
      if (json)
        printRunJson(io, {
          summary,
          states,
          reuse,
          outcome,
          remoteWarnings,
          ...(remote ? { remoteStats: remote.value.stats } : {}),
          ...(gate ? { gate } : {}),
        });
      else printFailed(io, states, controller.signal.aborted);
      if (controller.signal.aborted) return EXIT.interrupted;
      // A shard leaves other shards' nodes (and what needs them) skipped by design.
      const shardSkips = shard
        ? [...states.values()].filter((s) => s.status === 'skipped' && (s.because.startsWith('not in shard') || s.because.startsWith('upstream'))).length
        : 0;
      if (summary.failed || summary.skipped - shardSkips) return EXIT.nodeFailed;
      return gate?.message ? EXIT.gateFailed : EXIT.ok;
    } finally {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    }
  },
});
