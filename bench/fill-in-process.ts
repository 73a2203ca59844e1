/**
 * Fills a store with the records a run of the engine bench's config makes, in this process:
 * the engine plans and records every node as a run does (the same keys, stamps, journals and
 * pack), and only the commands are not started; each node's outputs are what its command
 * (`echo "$PAIRBENCH_NODE" > o`, `cat` of its attempt's `o` > s) writes. Real processes took
 * ~100 ms a node on 2 cores (the 20k fill 2,067 s); a fill is then checked by a real `plan`,
 * which must find nothing to run.
 */
import { loadProject } from '../cli/project.js';
import { actionRecord, run, type NodeExecutor } from '../pipeline/engine.js';
import type { OutputManifest } from '../pipeline/store/action-cache.js';

/** What each of the bench's commands writes, by step: its output's name and bytes. */
export type SimulatedCommands = Record<string, (nodeId: string, outputOf: (upstreamNode: string) => Buffer) => { out: string; bytes: Buffer }>;

export async function fillInProcess(configPath: string, commands: SimulatedCommands): Promise<{ executed: number; ms: number }> {
  const t0 = process.hrtime.bigint();
  const project = await loadProject(configPath, undefined, process.env);
  if (!project.ok) throw new Error(`cannot load ${configPath}: ${project.error.map((d) => d.message).join('; ')}`);
  const { ctx, inputs } = project.value;
  const { store } = ctx;
  const executor: NodeExecutor = {
    async execute(node, key, records) {
      const simulate = commands[node.step.name];
      if (!simulate) throw new Error(`no simulated command for step ${node.step.name}`);
      const outputOf = (upstreamNode: string): Buffer => {
        const entry = Object.values(records.get(upstreamNode)?.outputs ?? {})[0];
        if (!entry) throw new Error(`${node.id}: no output of ${upstreamNode} among its upstream records`);
        return store.cas.read(entry.digest);
      };
      const { out, bytes } = simulate(node.id, outputOf);
      const digest = store.cas.putBytes(bytes);
      const outputs: OutputManifest = { [out]: { type: 'file', digest, size: bytes.length, executable: false } };
      const startedAt = new Date();
      const record = actionRecord(store, node, key, outputs, { log: null, startedAt, durationMs: 0 });
      store.actions.put(record);
      store.nodes.recordBuilt(node.id, key.key, startedAt.toISOString());
      return { status: 'executed', record };
    },
  };
  const { summary } = await run(ctx, inputs, { reporter: { event: () => {} }, executor });
  if (summary.failed || summary.skipped) throw new Error(`the in-process fill failed ${summary.failed} and skipped ${summary.skipped} nodes`);
  return { executed: summary.executed, ms: Number(process.hrtime.bigint() - t0) / 1e6 };
}
