import { errorMessage } from '../../pipeline/result.js';
import { CONFIG_ERROR, defineCommand, fail, type Invocation } from '../command.js';
import type { LoadedConfig } from '../command-context.js';

/** Serves an exported bundle (a directory) or the config's store until Ctrl-C. */
async function view({ io, json, values }: Invocation, source: string | LoadedConfig): Promise<number> {
  const { bundleData, serveView, storeData } = await import('../view.js');
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

export const viewCommand = defineCommand({
  name: 'view',
  synopsis: 'view [BUNDLE_DIR]',
  summary: 'a local, read-only web viewer: verdicts, pairs side by side, trajectories (live during a run)',
  usage: 'pairbench view [BUNDLE_DIR] [options]',
  about: `Serves a web viewer on this machine: each cohort's verdicts (the report's own
sentences and charts, its status bar and methods), its tasks with filters (task,
family, category, arm, outcome, admission), a task's attempts side by side (exit
reason, admission and reason code, tokens, cost, wall time, the diff each made, the
verifier's output, delivery evidence) and each attempt's trajectory and gateway
exchanges (credentials redacted), with leakage and out-of-bounds findings marked.
With BUNDLE_DIR it shows that exported bundle (or each bundle under it: an export
of several nodes, a Harbor layout); otherwise the config's store, read
again every second: started during a 'pairbench run', it shows nodes completing and
each bundle as its export node finishes. Read-only (no write endpoint); every value
is shown as text. Links are stable URLs. Runs until Ctrl-C.`,
  options: [
    ['port', 'N', 'the port (default 7377; 0 picks a free one)'],
    ['host', 'ADDR', 'the address to listen on (default 127.0.0.1; another exposes the\nviewer to that network, and it then answers any Host name)'],
  ],
  operands: { min: 0, max: 1, message: 'view takes at most one BUNDLE_DIR' },
  config: true,
  usesStore: false,
  exits: `0 stopped (Ctrl-C); ${CONFIG_ERROR}, BUNDLE_DIR is not a bundle, or the port is in use.`,
  withoutProject: (inv) => (inv.operands[0] === undefined ? undefined : view(inv, inv.operands[0])),
  run: (inv) => view(inv, inv.project),
});
