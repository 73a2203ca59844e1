import type { Json } from './canonical-json.js';
import type { AnnotationContext, GraphNode, StepKind } from './step-kind.js';

/**
 * Gives every node the facts its kind adds to its key from outside the config (StepKind.annotate):
 * each kind once, with all of its nodes. Whoever loads a graph calls this before planning, so a
 * kind's knowledge of its own key lives in the kind, and no caller can compute other keys.
 */
export async function annotateNodes(nodes: readonly GraphNode[], ctx: AnnotationContext): Promise<void> {
  const byKind = new Map<StepKind, GraphNode[]>();
  for (const n of nodes) {
    if (!n.kind.annotate) continue;
    const list = byKind.get(n.kind);
    if (list) list.push(n);
    else byKind.set(n.kind, [n]);
  }
  await Promise.all([...byKind].map(([kind, ofKind]) => kind.annotate!(ofKind, ctx)));
}

/** Sets one field of a node's annotation, keeping the fields other kinds' hooks set. */
export function addAnnotation(node: GraphNode, field: string, value: Json): void {
  const a = node.annotation;
  node.annotation = { ...(a && typeof a === 'object' && !Array.isArray(a) ? a : {}), [field]: value };
}
