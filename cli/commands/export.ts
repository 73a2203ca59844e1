import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmdirSync, rmSync } from 'node:fs';
import { dirname, join, resolve as resolvePath } from 'node:path';
import type { CacheKey } from '../../pipeline/digest.js';
import { plan, type EngineContext } from '../../pipeline/engine.js';
import { lookup, type Lookup } from '../../pipeline/caching/local-cache.js';
import { ensureLocal } from '../../pipeline/caching/remote-tier.js';
import { ok, type Result } from '../../pipeline/result.js';
import { BUNDLE_OUTPUT, exportStep } from '../../steps/export-step.js';
import { specOf } from '../../steps/step-spec.js';
import { byteProgress, type ProgressMode } from '../byte-progress.js';
import { ANY_OPERANDS, CONFIG_ERROR, defineCommand, EXIT, fail } from '../command.js';
import { printJson } from '../json-output.js';
import { selectOrFail } from '../node-selection.js';
import { ownKeys } from '../project.js';
import { CONFIG_CACHE_OPTIONS, remoteCacheFor, remoteFlags } from '../remote.js';
import { writeStoredBundle } from '../stored-bundle.js';

/**
 * Lays a bundle written at `staging/bundle` out as a Harbor jobs directory and renames it to
 * `dest`: `dest/<job>/` holds the trials, and the bundle itself at `dest/<job>/pairbench`.
 */
async function harborLayout(staging: string, dest: string): Promise<Result<{ bundle: string; job: { dir: string; trials: number } }, string>> {
  const { BUNDLE_SUBDIR, harborJobName, writeHarborJob } = await import('../../report/harbor-layout.js');
  const { HARBOR_SOURCES } = await import('../../steps/bundle-layout.js');
  const name = harborJobName(join(staging, 'bundle'), HARBOR_SOURCES);
  if (!name.ok) return name;
  const jobDir = join(staging, name.value);
  mkdirSync(jobDir, { recursive: true });
  renameSync(join(staging, 'bundle'), join(jobDir, BUNDLE_SUBDIR));
  const laid = writeHarborJob(join(jobDir, BUNDLE_SUBDIR), HARBOR_SOURCES, jobDir, join(dest, name.value));
  if (!laid.ok) {
    rmSync(staging, { recursive: true, force: true });
    return laid;
  }
  if (existsSync(dest)) rmdirSync(dest); // empty (checked by the caller)
  renameSync(staging, dest);
  return ok({ bundle: join(dest, name.value, BUNDLE_SUBDIR), job: { dir: join(dest, name.value), trials: laid.value.trials } });
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

interface Written {
  dir: string;
  visibility: 'public' | 'private';
  root_digest: string;
  key_id: string | null;
  harbor_job?: { dir: string; trials: number };
}

function describe(w: Written): string {
  const job = w.harbor_job
    ? `wrote Harbor job ${w.harbor_job.dir} (${w.harbor_job.trials} trials; open it with: harbor view ${dirname(w.harbor_job.dir)})\n`
    : '';
  const signed = w.key_id ? ` (signed, Ed25519 key ${w.key_id.slice(0, 16)})` : '';
  return `${job}wrote ${w.dir} (${w.visibility})\nroot digest sha256:${w.root_digest}${signed}\ncheck it with: pairbench verify-bundle ${w.dir} --root sha256:${w.root_digest}`;
}

export const exportCommand = defineCommand({
  name: 'export',
  synopsis: 'export --out DIR',
  summary: 'write out the cohort bundle(s) built by export steps',
  usage: 'pairbench export --out DIR [NODE...] [options]',
  about: `Writes the bundle that an export step built (results, receipts, evidence, redacted
logs and trajectories, report.md, report.html, attempts.csv, manifest.json) into
DIR, which must be new or empty: all or nothing, every stored blob verified as it is
copied. With several export nodes, each goes to DIR/<node>. Prints the bundle's root
digest (the SHA-256 of manifest.json): publish it where the bundle cannot reach (a
CI job log), and anyone can check a bundle is that one.`,
  options: [
    ['out', 'DIR', 'where the bundle is written'],
    [
      'public',
      null,
      `the form to publish: the hidden verifier, the reference solution
and every quote of them (any run of 40 bytes) withheld, their
digests in withheld.json (the default for an export step with
public: true)`,
    ],
    ['private', null, 'everything, for the team (the default otherwise)'],
    ['sign', 'KEY', 'sign manifest.json with this Ed25519 private key (PEM):\nwrites manifest.sig.json (openssl genpkey -algorithm ed25519)'],
    [
      'harbor-layout',
      null,
      `write DIR as a Harbor jobs directory that Harbor's viewer
opens (harbor view DIR): DIR/<cohort>/ holds one trial per
attempt (config.json, result.json, agent/trajectory.json,
verifier/test-stdout.txt) and the bundle in
DIR/<cohort>/pairbench/ (what verify-bundle checks)`,
    ],
    [
      'remote-cache',
      'URL',
      'fetch the bundle from this remote cache when the store holds only\nits record (a run that replayed remote hits); cache.remote otherwise',
    ],
    ...CONFIG_CACHE_OPTIONS,
    ['progress', 'MODE', 'auto (a bar on a terminal for a bundle over 64 MiB), plain (a line\nat every tenth of the bytes written), none'],
  ],
  operands: ANY_OPERANDS,
  config: true,
  usesStore: true,
  exits: `0 the bundle was written; ${CONFIG_ERROR}, no bundle built yet for a node, or DIR is not empty.`,
  check: (values) => (values.out ? undefined : 'export needs --out DIR'),
  async run({ io, json, values, operands, project }) {
    const { graph, ctx, inputs, config } = project;
    // Writes out the cached bundle of each export node (or of the named ones).
    const sel = selectOrFail(io, json, graph, operands);
    if ('code' in sel) return sel.code;
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
    const { rootDigest, signBundle } = await import('../../report/bundle.js');
    const written: Written[] = [];
    // Other configs may share this store and have export nodes of the same name: only the key
    // this config plans, or failing that the last one a run of this config reached, is its bundle.
    const own = ownKeys(project);
    for (const n of exports) {
      const planned = entries.find((x) => x.node === n.id);
      let found: Lookup | undefined = planned?.status === 'cached' && planned.key ? lookup(ctx.store, planned.key) : undefined;
      if (!found || found.status !== 'hit') {
        // Stale (e.g. an attempt with a transient infrastructure fault waits to be retried): the
        // bundle the last run of this config built is still its record.
        const latest = ctx.store.nodes.get(n.id)?.latest;
        const last = latest && own.has(latest.key) ? lookup(ctx.store, latest.key) : lastBuiltAmong(ctx, n.id, own);
        if (!last || last.status !== 'hit')
          return fail(io, json, [
            { message: `${n.id} has no bundle built from this config (${config.configFile})`, hint: `run 'pairbench run ${n.id}' first` },
          ]);
        found = last;
        if (!json)
          io.stderr.write(`note: ${n.id} is stale (see 'pairbench plan'); writing the bundle this config's last run built at ${last.record.started_at}\n`);
      }
      const dest = exports.length === 1 ? resolvePath(values.out!) : join(resolvePath(values.out!), n.id);
      if (existsSync(dest) && readdirSync(dest).length)
        return fail(io, json, [{ message: `${dest} exists and is not empty`, hint: 'choose an empty or new directory' }]);
      // --harbor-layout: dest is a Harbor jobs directory, the bundle inside its one job (written whole, then renamed into place).
      const staging = values['harbor-layout'] ? `${dest}.partial-${process.pid}` : null;
      if (staging) rmSync(staging, { recursive: true, force: true });
      const bundleDir = staging ? join(staging, 'bundle') : dest;
      const bundle = found.record.outputs[BUNDLE_OUTPUT]!;
      // A bundle whose record came from the remote cache is fetched now (records travel first, blobs when read).
      const remote = remoteCacheFor(config, remoteFlags(values, 'read-only'), io.env, (message) => io.stderr.write(`warning: ${message}\n`));
      if (remote?.ok && !(await ensureLocal(ctx.store, remote.value, [bundle])))
        return fail(
          io,
          json,
          [
            {
              message: `${n.id}: its bundle could not be fetched from the remote cache ${values['remote-cache'] ?? (values['ignore-config-cache'] ? '' : config.cache?.remote)}`,
              hint: 'check that the cache is reachable, then export again',
            },
          ],
          EXIT.nodeFailed,
        );
      // The public form is made from the private one, which is written beside it first (and removed).
      const visibility = values.private ? 'private' : values.public || specOf(n.step, 'export').public ? 'public' : 'private';
      const privateDir = visibility === 'public' ? `${bundleDir}.private-${process.pid}` : bundleDir;
      rmSync(`${bundleDir}.private-${process.pid}`, { recursive: true, force: true });
      const mode = json ? 'none' : ((values.progress ?? 'auto') as ProgressMode);
      const wrote = writeStoredBundle(ctx.store, bundle, privateDir, byteProgress(io.stderr, io.env, mode, `writing ${n.id}`, bundle.size));
      if (!wrote.ok)
        return fail(
          io,
          json,
          [
            {
              message: `${n.id}: ${wrote.error}`,
              hint: wrote.missing
                ? "a run that replayed it from a remote cache fetches its files when they are read: give the remote cache the run used, pairbench export --remote-cache URL (or cache.remote in the config); if this store built it, 'pairbench run' rebuilds it"
                : `run 'pairbench run' to rebuild it, then export again`,
            },
          ],
          EXIT.nodeFailed,
        );
      if (visibility === 'public') {
        const { publicBundle } = await import('../../report/public-bundle.js');
        const { writeBundle } = await import('../../report/bundle.js');
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
    if (json) printJson(io.stdout, { ok: true, bundles: written });
    else io.stdout.write(written.map(describe).join('\n') + '\n');
    return EXIT.ok;
  },
});
