import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { plan, type PlanEntry } from '../pipeline/engine.js';
import { lookup } from '../pipeline/caching/local-cache.js';
import { etaMs } from '../pipeline/progress.js';
import { packageRoot } from '../pipeline/package-root.js';
import { Store } from '../pipeline/store/store.js';
import { BUNDLE_OUTPUT, exportStep } from '../steps/export-step.js';
import { BundleReader } from '../viewer/bundle-reader.js';
import { RESULTS_FILE } from '../steps/bundle-layout.js';
import { MANIFEST_FILE } from '../report/bundle.js';
import { startViewer, type ViewerData } from '../viewer/server.js';
import type { Progress } from '../viewer/view-types.js';
import type { CliIO, LoadedConfig } from './command-context.js';
import { registryOf } from './cohorts.js';
import { historyLines } from '../steps/preregistration.js';
import { writeStoredBundle } from './stored-bundle.js';
import { EXIT } from './command.js';
import { printJsonErrors, printJsonLine } from './json-output.js';

export interface ViewOptions {
  port: number;
  host: string;
  json: boolean;
  /** Stops the viewer (the CLI aborts it on SIGINT or SIGTERM). */
  signal: AbortSignal;
}

/** How often the store is read again while watching a run (a plan of the config: reads only). */
const REFRESH_MS = 1000;

/** How deep under the given directory bundles are looked for (export writes DIR/<node id>, ids hold slashes; a Harbor layout puts one at DIR/<job>/pairbench). */
const BUNDLE_DEPTH = 4;

/** The bundles at or under `dir`: the directory itself when it is one, else every bundle below it. */
function bundlesUnder(dir: string, depth = 0): string[] {
  if (existsSync(join(dir, RESULTS_FILE.name)) && existsSync(join(dir, MANIFEST_FILE))) return [dir];
  if (depth >= BUNDLE_DEPTH) return [];
  return readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .sort((a, b) => (a.name < b.name ? -1 : 1))
    .flatMap((e) => bundlesUnder(join(dir, e.name), depth + 1));
}

/** An exported bundle, or a directory of them (`export --out` with several export nodes, a Harbor layout): one cohort each. */
export function bundleData(dir: string): ViewerData {
  if (!existsSync(dir)) throw new Error(`${dir} does not exist`);
  const found = bundlesUnder(dir);
  // Not a bundle, nor any below it: say so now, not on the first page.
  const readers = (found.length ? found : [dir]).map((d) => {
    const reader = new BundleReader(d);
    return { dir: d, reader, cohort: reader.resultsFile().cohort };
  });
  // A cohort is named by its cohort name; by its path under `dir` when two bundles share one.
  const unique = new Set(readers.map((r) => r.cohort)).size === readers.length;
  const cohorts = readers.map((r) => ({ id: unique ? r.cohort : relative(dir, r.dir), reader: r.reader }));
  return { cohorts: () => cohorts, progress: () => null };
}

/**
 * The config's store, watched: every export node's latest bundle (written to a temp directory
 * once per bundle digest) and, while nodes remain to run, the progress. It only reads the store
 * (a plan, as `pairbench plan` makes): the run writing it is the only writer.
 */
export function storeData(loaded: LoadedConfig, env: CliIO['env']): ViewerData & { dispose(): void } {
  const scratch = mkdtempSync(join(tmpdir(), 'pairbench-view-'));
  const bundles = new Map<string, BundleReader>();
  let cohorts: { id: string; reader: BundleReader }[] = [];
  let progress: Progress | null = null;
  let readAt = 0;
  const refresh = () => {
    if (Date.now() - readAt < REFRESH_MS) return;
    readAt = Date.now();
    // A fresh handle each time: records another process wrote since are seen.
    const store = new Store(loaded.config.storeDir);
    const ctx = { ...loaded.ctx, store };
    const entries = plan(ctx, loaded.inputs, loaded.graph.nodes, env);
    progress = progressOf(store, entries);
    const next: typeof cohorts = [];
    for (const node of loaded.graph.nodes.filter((n) => n.kind === exportStep)) {
      const e = entries.find((x) => x.node === node.id);
      const found = e?.status === 'cached' && e.key ? lookup(store, e.key) : undefined;
      const entry = found?.status === 'hit' ? found.record.outputs[BUNDLE_OUTPUT] : undefined;
      if (!entry) continue;
      let reader = bundles.get(entry.digest);
      if (!reader) {
        // All or nothing, as export writes it: a corrupt blob is dropped (the run rebuilds it), never served half-written.
        const dir = join(scratch, entry.digest);
        if (!writeStoredBundle(store, entry, dir).ok) continue;
        reader = new BundleReader(dir);
        bundles.set(entry.digest, reader);
      }
      next.push({ id: node.id, reader });
    }
    cohorts = next;
  };
  return {
    cohorts: () => (refresh(), cohorts),
    progress: () => (refresh(), progress),
    history: (cohort) => historyLines(registryOf(loaded.ctx).get(cohort)),
    dispose: () => rmSync(scratch, { recursive: true, force: true }),
  };
}

/**
 * The run's progress as the store shows it: built nodes (their records' durations estimate each
 * step's time left), running ones (a live run holds their lock), and the rest, queued.
 */
function progressOf(store: Store, entries: PlanEntry[]): Progress {
  const now = Date.now();
  const running: Progress['running'] = [];
  const steps = new Map<string, { built: number; total: number; finishedMs: number[]; runningMs: number[]; queued: number }>();
  const nodes = entries.map((e) => {
    const step = e.node.split('/')[0]!;
    const s = steps.get(step) ?? { built: 0, total: 0, finishedMs: [], runningMs: [], queued: 0 };
    steps.set(step, s);
    s.total++;
    if (e.status === 'cached') {
      s.built++;
      const found = lookup(store, e.key);
      if (found.status === 'hit') s.finishedMs.push(found.record.duration_ms);
      return { id: e.node, status: 'cached' as const };
    }
    const since = e.key ? store.locks.liveSince(e.key) : null;
    if (since) {
      const elapsed = Math.max(0, now - Date.parse(since));
      running.push({ id: e.node, since, elapsed_ms: elapsed });
      s.runningMs.push(elapsed);
      return { id: e.node, status: 'running' as const };
    }
    s.queued++;
    return { id: e.node, status: 'run' as const };
  });
  const cached = nodes.filter((n) => n.status === 'cached').length;
  return {
    total: entries.length,
    cached,
    to_run: entries.length - cached,
    nodes,
    running: running.sort((a, b) => b.elapsed_ms - a.elapsed_ms),
    queued: nodes.filter((n) => n.status === 'run').length,
    steps: [...steps]
      .filter(([, s]) => s.built < s.total)
      .map(([name, s]) => ({ name, built: s.built, total: s.total, eta_ms: etaMs({ finishedMs: s.finishedMs, runningMs: s.runningMs, queued: s.queued }) })),
    at: new Date(now).toISOString(),
  };
}

/** Serves `data` until the signal; prints where (a URL, or one JSON line). */
export async function serveView(data: ViewerData, io: CliIO, options: ViewOptions): Promise<number> {
  let viewer: Awaited<ReturnType<typeof startViewer>>;
  try {
    viewer = await startViewer(data, { host: options.host, port: options.port, appDir: join(packageRoot(), 'dist', 'viewer-app') });
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const message =
      code === 'EADDRINUSE'
        ? `port ${options.port} is in use`
        : `cannot listen on ${options.host}:${options.port}: ${e instanceof Error ? e.message : String(e)}`;
    if (options.json) printJsonErrors(io.stdout, [{ message, hint: 'pass --port N (0 picks a free one)' }]);
    else io.stderr.write(`error: ${message}\n  hint: pass --port N (0 picks a free one)\n`);
    return EXIT.usage;
  }
  // One line, at once: a script (or a test) reads the URL as soon as it is served.
  if (options.json) printJsonLine(io.stdout, { ok: true, url: viewer.url });
  else io.stdout.write(`pairbench view: ${viewer.url} (read-only; Ctrl-C stops it)\n`);
  await new Promise<void>((resolve) => (options.signal.aborted ? resolve() : options.signal.addEventListener('abort', () => resolve(), { once: true })));
  await viewer.close();
  return EXIT.ok;
}
