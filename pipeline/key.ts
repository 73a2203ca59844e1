import { canonicalJson, type Json, type JsonEncodable } from './canonical-json.js';
import { cacheKeyOf, type CacheKey, type Sha256 } from './digest.js';
import type { ResolvedInput } from './inputs.js';
import type { GraphNode, HostEnv } from './step-kind.js';

/**
 * The pre-image of a node's key: everything its result may depend on, and nothing
 * else (no time, no absolute path, no undeclared environment).
 */
export interface KeyPreimage {
  kind: string;
  kind_version: number;
  /** Json once read back from a record; as built, whatever keyConfig returned (canonical JSON checks it). */
  config: JsonEncodable;
  matrix: Record<string, string>;
  /** Input path -> digest (directories end with /). */
  files: Record<string, string>;
  /** Upstream node id -> digest of the outputs this node reads from it. */
  upstream: Record<string, string>;
  /** GraphNode.annotation, when the node has one. */
  annotation?: Json;
}

export function buildPreimage(node: GraphNode, files: readonly ResolvedInput[], upstream: ReadonlyMap<string, Sha256>, hostEnv: HostEnv): KeyPreimage {
  const f: Record<string, string> = {};
  for (const i of files) f[i.type === 'dir' ? `${i.path}/` : i.path] = i.digest;
  return {
    kind: node.kind.name,
    kind_version: node.kind.version,
    config: node.kind.keyConfig(node, hostEnv),
    matrix: { ...node.matrix },
    files: f,
    upstream: Object.fromEntries(upstream),
    ...(node.annotation !== undefined ? { annotation: node.annotation } : {}),
  };
}

export function keyOf(preimage: KeyPreimage): { key: CacheKey; json: string } {
  const json = canonicalJson(preimage);
  return { key: cacheKeyOf(json), json };
}
