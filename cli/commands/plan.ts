import type { Graph } from '../../pipeline/dag.js';
import { plan, type PlanEntry } from '../../pipeline/engine.js';
import type { StepKind } from '../../pipeline/step-kind.js';
import { ANY_OPERANDS, CONFIG_ERROR, defineCommand, EXIT } from '../command.js';
import type { CliIO } from '../command-context.js';
import { printJson } from '../json-output.js';
import { selectOrFail } from '../node-selection.js';

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
  // What will run for certain, apart from what runs only if an upstream's output changes (after an
  // edit that certify reads, the control arm's attempts wait on a verdict that likely comes back the same).
  const certain = toRun.filter((e) => !(e.status === 'run' && e.if_upstream_changes));
  const maybe = toRun.length - certain.length;
  lines.push(
    toRun.length === 0
      ? `nothing to run: all ${entries.length} nodes are cached`
      : `${entries.length} nodes: ${entries.length - toRun.length} cached, ${certain.length} to run${certain.length ? ` (${countByKind(graph, certain)})` : ''}${
          maybe
            ? `, ${maybe} more only if an upstream's output changes (${countByKind(
                graph,
                toRun.filter((e) => !certain.includes(e)),
              )})`
            : ''
        }`,
  );
  io.stdout.write(lines.join('\n') + '\n');
}

export const planCommand = defineCommand({
  name: 'plan',
  synopsis: 'plan [NODE...]',
  summary: 'dry run: each node as cached or to run, and why',
  usage: 'pairbench plan [NODE...] [options]',
  about: `Lists every node as cached or to run, and for each node to run WHY: which input
changed (from its key pre-image against the node's last build), that it is new,
that its stored output is corrupt, or which upstream runs first. Changes nothing.`,
  options: [['all', null, 'also list cached nodes (human output)']],
  operands: ANY_OPERANDS,
  config: true,
  usesStore: false,
  memo: true,
  exits: `0 planned; ${CONFIG_ERROR}, or no node matches NODE.`,
  async run({ io, json, values, operands, project: { graph, ctx, inputs } }) {
    const sel = selectOrFail(io, json, graph, operands);
    if ('code' in sel) return sel.code;
    const entries = plan(ctx, inputs, sel.nodes, io.env);
    if (json) {
      const toRun = entries.filter((e) => e.status === 'run').length;
      printJson(io.stdout, { ok: true, total: entries.length, cached: entries.length - toRun, to_run: toRun, nodes: entries });
    } else printPlan(io, graph, entries, Boolean(values.all));
    return EXIT.ok;
  },
});
