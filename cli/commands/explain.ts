import { plan } from '../../pipeline/engine.js';
import { CONFIG_ERROR, defineCommand, EXIT } from '../command.js';
import { explainNode } from '../explain.js';
import { printJson } from '../json-output.js';
import { oneNode, selectNodes } from '../node-selection.js';

export const explainCommand = defineCommand({
  name: 'explain',
  synopsis: 'explain NODE',
  summary: "a node's key inputs, its record, and what changed since its last build",
  usage: 'pairbench explain NODE [options]',
  about: `Shows a node's key and the inputs it hashes (config slice, matrix values, file
digests, upstream output digests), its record when cached (outputs, log, time),
its last failure, and what changed since its last build.`,
  options: [],
  operands: { min: 1, max: 1, message: 'explain takes exactly one NODE' },
  config: true,
  usesStore: false,
  exits: `0 explained; ${CONFIG_ERROR}, or no node matches NODE.`,
  async run({ io, json, operands, project: { graph, ctx, inputs } }) {
    const one = oneNode(io, json, graph, operands[0]!);
    if ('code' in one) return one.code;
    const entries = plan(ctx, inputs, selectNodes(graph, [one.node.id]).nodes, io.env);
    const report = explainNode(ctx, one.node, entries, inputs, io.env);
    if (json) printJson(io.stdout, { ok: true, ...report.json });
    else io.stdout.write(report.text + '\n');
    return EXIT.ok;
  },
});
