import { existsSync } from 'node:fs';
import { dirname, resolve as resolvePath } from 'node:path';
import { annotateNodes } from '../pipeline/annotate.js';
import { buildGraph } from '../pipeline/dag.js';
import { DEFAULT_CONFIG_FILE, loadConfig } from '../pipeline/config/load.js';
import type { Diagnostic } from '../pipeline/diagnostic.js';
import { resolveInputs, type EngineContext } from '../pipeline/engine.js';
import type { HostEnv } from '../pipeline/step-kind.js';
import { Store } from '../pipeline/store/store.js';
import { builtinStepKinds } from '../steps/index.js';
import type { LoadedConfig } from './command-context.js';

/**
 * A config as every command sees it: loaded, expanded, its inputs hashed, and each node given
 * the facts its kind adds to its key (StepKind.annotate: a cohort's freeze and history for its
 * exports, image IDs). A library caller that loads a config this way gets the keys the CLI gets.
 */
export async function loadProject(
  configPath: string,
  storeDir: string | undefined,
  env: HostEnv,
): Promise<{ ok: true; value: LoadedConfig } | { ok: false; error: Diagnostic[] }> {
  if (!existsSync(configPath)) {
    const where = resolvePath(configPath);
    return {
      ok: false,
      error: [
        configPath === DEFAULT_CONFIG_FILE
          ? { message: `no ${DEFAULT_CONFIG_FILE} in ${dirname(where)}`, hint: 'run pairbench in the directory of your config, or pass --config FILE' }
          : { message: `no config file at ${where}`, hint: 'check the path given to --config' },
      ],
    };
  }
  const config = loadConfig(configPath, storeDir ? { storeDir } : {});
  if (!config.ok) return config;
  const graph = buildGraph(config.value, builtinStepKinds);
  if (!graph.ok) return graph;
  const ctx: EngineContext = { config: config.value, graph: graph.value, store: new Store(config.value.storeDir) };
  const inputs = resolveInputs(ctx, graph.value.nodes);
  if (!inputs.ok) return inputs;
  await annotateNodes(graph.value.nodes, { env, store: ctx.store, inputs: inputs.value, configFile: config.value.configFile });
  return { ok: true, value: { config: config.value, graph: graph.value, ctx, inputs: inputs.value } };
}

/** The keys this config's last run reached (its root in the store): what is its own among records other configs share. */
export function ownKeys({ ctx, config }: LoadedConfig): Set<string> {
  return new Set(ctx.store.roots().find((r) => r.name === configRootName(config.configFile))?.keys ?? []);
}

/** The name of a config's root in the store. */
export function configRootName(configFile: string): string {
  return `config ${configFile}`;
}
