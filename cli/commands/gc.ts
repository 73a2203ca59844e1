import { existsSync, rmSync } from 'node:fs';
import { parseDuration, parseSize } from '../../pipeline/config/load.js';
import { plan } from '../../pipeline/engine.js';
import { lookup } from '../../pipeline/caching/local-cache.js';
import { collectGarbage, GC_GRACE_MS } from '../../pipeline/gc.js';
import { CONFIG_ERROR, defineCommand, EXIT, fail, type ProjectInvocation } from '../command.js';
import { printJson } from '../json-output.js';

/** `pairbench gc`, with the store held alone. */
function gc({ io, json, values, project: { graph, ctx, inputs, config } }: ProjectInvocation): number {
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
    printJson(io.stdout, { ok: true, ...report });
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

export const gcCommand = defineCommand({
  name: 'gc',
  synopsis: 'gc',
  summary: 'remove least-recently-used store entries down to a size cap',
  usage: 'pairbench gc [options]',
  about: `Removes store entries least recently used first until the store fits the size cap,
never anything the current config reaches, nor what other configs sharing the store
reached in their last run, nor any attempt a registered cohort version executed.
Also removes temp files and locks left by killed runs. It never collects beside a live
run on the store: it waits for the runs under way to end (and runs that start meanwhile
wait for it), and keeps whatever was used or written within the grace period, so a run
killed before it finished finds its work on the next run.`,
  options: [
    ['max-size', 'SIZE', 'the cap, with its unit (e.g. 500MB, 2GiB, 4096B; default: store.max_size, 10GB)'],
    ['dry-run', null, 'only report what would be removed'],
    ['keep-newer-than', 'DURATION', 'the grace period: what was used or written this recently is kept (e.g. 30m, 2h, 0s; default 1h)'],
    ['if-idle', null, 'collect only if nothing is using the store: with a run under way, exit 1 at once, naming it, instead of waiting for it'],
  ],
  config: true,
  // It holds the store alone instead (below): no run is live beside it.
  usesStore: false,
  exits: `0 collected (or, with --dry-run, listed); 1 a run is under way and --if-idle was given; ${CONFIG_ERROR}.`,
  async run(inv) {
    const { io, json, values, project } = inv;
    // The store alone: no run is live beside gc (runs that start meanwhile wait for it).
    const taken = await project.ctx.store.use.exclusive('gc', {
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
      return gc(inv);
    } finally {
      taken.held.release();
    }
  },
});
