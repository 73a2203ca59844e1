import { plan } from '../../pipeline/engine.js';
import { ensureLocal } from '../../pipeline/caching/remote-tier.js';
import { CONFIG_ERROR, defineCommand, EXIT, fail } from '../command.js';
import { printJson } from '../json-output.js';
import { oneNode, selectNodes } from '../node-selection.js';
import { ownKeys } from '../project.js';
import { recordPeek } from '../cohorts.js';
import { CONFIG_CACHE_OPTIONS, remoteCacheFor, remoteFlags } from '../remote.js';

export const showCommand = defineCommand({
  name: 'show',
  synopsis: 'show NODE [OUTPUT]',
  summary: "print a node's stored output, a file inside it, or its log (--list)",
  usage: 'pairbench show NODE [OUTPUT] [options]',
  about: `Prints a node's stored output from the store: an output file (result.json,
verdict.json, ...), a path inside a directory output (tree/src/add.mjs), or its
log ("log"; for a failed node, the log of its last failure). Without OUTPUT, or
with a directory, lists the outputs (name, type, size, digest). The record shown
is the one this config plans for the node; a stale node shows what this config's
last run built (said on stderr). A record the remote cache supplied has its bytes
fetched from it when shown. Exit 1 when the node has not been built (or its bytes
cannot be had).`,
  options: [
    ['list', null, "list instead of printing (an output file's entry)"],
    ['remote-cache', 'URL', 'where to fetch the bytes of a record the remote cache supplied (overrides cache.remote; read only)'],
    ...CONFIG_CACHE_OPTIONS,
  ],
  operands: { min: 1, max: 2, message: 'show takes a NODE and, optionally, one OUTPUT' },
  config: true,
  usesStore: true,
  exits: `0 shown; 1 the node has not been built; ${CONFIG_ERROR}, or no such node or output.`,
  async run({ io, json, values, operands, project }) {
    const { graph, ctx, inputs, config } = project;
    const one = oneNode(io, json, graph, operands[0]!);
    if ('code' in one) return one.code;
    const { node } = one;
    const { showNode, formatListing } = await import('../show.js');
    const entries = plan(ctx, inputs, selectNodes(graph, [node.id]).nodes, io.env);
    const own = ownKeys(project);
    const output = operands[1];
    let shown = showNode(ctx, node, entries, own, output, Boolean(values.list));
    // A record replayed from the remote cache: its bytes are fetched (read-only) and shown.
    if (!shown.ok && shown.code === 'not-local') {
      const remote = remoteCacheFor(config, remoteFlags(values, 'read-only'), io.env, (m) => io.stderr.write(`warning: ${m}\n`));
      if (remote && !remote.ok) return fail(io, json, [{ message: remote.error }], EXIT.usage);
      if (remote && (await ensureLocal(ctx.store, remote.value, shown.outputs))) shown = showNode(ctx, node, entries, own, output, Boolean(values.list));
    }
    if (!shown.ok)
      return fail(
        io,
        json,
        [{ message: shown.message, hint: shown.hint }],
        shown.code === 'not-built' || shown.code === 'not-local' ? EXIT.nodeFailed : EXIT.usage,
      );
    // A look at an outcome is on its cohorts' record (listing a directory shows no outcome).
    if (shown.kind !== 'list') await recordPeek(ctx, node, 'show');
    if (shown.note && !json) io.stderr.write(`note: ${shown.note}\n`);
    if (shown.kind === 'list') {
      if (json) printJson(io.stdout, { ok: true, node: shown.node, output: shown.output, entries: shown.entries, note: shown.note });
      else io.stdout.write(formatListing(shown) + '\n');
    } else if (json) {
      const text = shown.bytes.toString('utf8');
      const binary = !Buffer.from(text, 'utf8').equals(shown.bytes);
      printJson(io.stdout, {
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
  },
});
