import { plan } from '../../pipeline/engine.js';
import { CONFIG_ERROR, defineCommand, EXIT } from '../command.js';
import { printJson } from '../json-output.js';

export const statusCommand = defineCommand({
  name: 'status',
  synopsis: 'status',
  summary: 'per step: cached, to run, failed last time',
  usage: 'pairbench status [options]',
  about: `Per step: nodes, cached, to run, and failed last time; then each failed node with
its last failure.`,
  options: [],
  config: true,
  usesStore: false,
  exits: `0 listed; ${CONFIG_ERROR}.`,
  async run({ io, json, project: { graph, ctx, inputs, config } }) {
    const entries = plan(ctx, inputs, graph.nodes, io.env);
    const byStep = new Map<string, { nodes: number; cached: number; to_run: number; failed_last: number }>();
    for (const s of graph.stepOrder) byStep.set(s, { nodes: 0, cached: 0, to_run: 0, failed_last: 0 });
    const failures: { node: string; at: string; reason: string; message: string }[] = [];
    for (const e of entries) {
      const row = byStep.get(graph.byId.get(e.node)!.step.name)!;
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
      printJson(io.stdout, { ok: true, config: config.configFile, store: config.storeDir, steps: Object.fromEntries(byStep), failed: failures });
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
  },
});
