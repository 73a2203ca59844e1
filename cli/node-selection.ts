import { closest, type Diagnostic } from '../pipeline/diagnostic.js';
import { withUpstream, type Graph } from '../pipeline/dag.js';
import type { GraphNode } from '../pipeline/step-kind.js';
import { fail } from './command.js';
import type { CliIO } from './command-context.js';

/** Nodes matching the patterns (id, id prefix, or step name) plus everything they need, in topological order. */
export function selectNodes(graph: Graph, patterns: readonly string[]): { nodes: GraphNode[]; unknown: string[] } {
  if (!patterns.length) return { nodes: graph.nodes, unknown: [] };
  const matches: GraphNode[] = [];
  const unknown: string[] = [];
  for (const p of patterns) {
    const clean = p.replace(/\/+$/, '');
    const found = graph.nodes.filter((n) => n.id === clean || n.id.startsWith(clean + '/'));
    if (!found.length) unknown.push(p);
    matches.push(...found);
  }
  const wanted = new Set(withUpstream(matches));
  return { nodes: graph.nodes.filter((n) => wanted.has(n)), unknown };
}

export function unknownNodes(graph: Graph, unknown: readonly string[]): Diagnostic[] {
  const ids = graph.nodes.map((n) => n.id);
  return unknown.map((u) => {
    // A step name first (plan attemps -> attempts), then a node id.
    const guess = closest(u, [...graph.steps.keys()]) ?? (ids.length > 5000 ? undefined : closest(u, ids));
    return {
      message: `no node matches "${u}"`,
      hint: guess ? `did you mean "${guess}"? ('pairbench plan --all' lists every node)` : "'pairbench plan --all' lists every node",
    };
  });
}

/** The selection, or the usage error naming what matched nothing. */
export function selectOrFail(io: CliIO, json: boolean, graph: Graph, patterns: readonly string[]): { nodes: GraphNode[] } | { code: number } {
  const sel = selectNodes(graph, patterns);
  return sel.unknown.length ? { code: fail(io, json, unknownNodes(graph, sel.unknown)) } : { nodes: sel.nodes };
}

/** The one node an operand names (a trailing slash allowed), or the usage error. */
export function oneNode(io: CliIO, json: boolean, graph: Graph, operand: string): { node: GraphNode } | { code: number } {
  const id = operand.replace(/\/+$/, '');
  const node = graph.byId.get(id);
  return node ? { node } : { code: fail(io, json, unknownNodes(graph, [id])) };
}
