import { join } from 'node:path';
import { loadConfig } from '../pipeline/config/load.js';
import { buildGraph } from '../pipeline/dag.js';
import { builtinStepKinds } from '../steps/index.js';
import type { Rig } from './rig.js';

/** The expanded DAG of a rig's config, in scheduling order. */
export function graphOf(rig: Rig) {
  const config = loadConfig(join(rig.dir, 'bench.config.yaml'));
  if (!config.ok) throw new Error(config.error.map((d) => d.message).join('\n'));
  const graph = buildGraph(config.value, builtinStepKinds);
  if (!graph.ok) throw new Error(graph.error.map((d) => d.message).join('\n'));
  return { config: config.value, graph: graph.value };
}
