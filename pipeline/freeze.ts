import { canonicalJson, type Json } from './canonical-json.js';
import { sha256, type Sha256 } from './digest.js';
import { topological, withUpstream } from './dag.js';
import type { ResolvedInput } from './inputs.js';
import type { GraphNode, HostEnv } from './step-kind.js';

/**
 * The freeze of a node (a cohort's analysis): everything upstream of it that can change its
 * result, DERIVED from the graph rather than listed. It is the key pre-image of the node and of
 * every node upstream of it, with two things folded out:
 *   - the upstreams' output digests, which exist only once the upstream has run: each node names
 *     its upstreams by their own frozen images instead (a Merkle tree over the graph);
 *   - the values of repetition dimensions (a matrix dimension written as a count, `rep: 3`): its
 *     values are indices, so the reps of one attempt fold into one image, and how many there are
 *     is frozen as the step's matrix.
 * So whatever any kind, present or future, puts in its key is frozen, with no per-kind code. A
 * kind may say which fields of its spec its key does not read (StepKind.unfrozen: a description,
 * a cohort's version number); it cannot add any, and a test checks each claim.
 */
export interface Freeze {
  digest: Sha256;
  /**
   * What is frozen, in words a refusal can name: `<step>: <field>` for a value every node of the
   * step shares, `<node group>: <field>` for one that differs between them (e.g. the prompt of
   * `attempts/fix-add/treatment/*`). Long values are shown by a short digest.
   */
  fields: Record<string, string>;
}

/** Spec fields no kind's key reads: they describe a step, they do not decide its result. */
export const ALWAYS_UNFROZEN: readonly string[] = ['description'];

/** What the freeze holds of one node. */
interface FrozenImage {
  kind: string;
  kind_version: number;
  config: unknown;
  /** The matrix without repetition dimensions. */
  matrix: Record<string, string>;
  files: Record<string, string>;
  annotation?: Json;
}

const SHOWN_MAX = 60;

const QUOTED_DIGEST = /^"[0-9a-f]{64}"$/;

/** A value as a refusal shows it: as written when short, a digest by its first 12 digits, anything longer by its own digest. */
function shown(json: string): string {
  if (QUOTED_DIGEST.test(json)) return json.slice(1, 13);
  if (json.length <= SHOWN_MAX) return json;
  // A long text by its beginning, its length and its digest: enough to see which one it is.
  const start = json.startsWith('"') ? `${json.slice(0, 25)}…" ` : '';
  return `${start}(${json.length} bytes, ${sha256(json).slice(0, 12)})`;
}

/** Leaves of a value, by dotted path; arrays and empty objects are leaves. */
function leaves(v: unknown, prefix: string, out: Map<string, string>): void {
  if (v !== null && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length > 0) {
    for (const [k, x] of Object.entries(v)) if (x !== undefined) leaves(x, prefix ? `${prefix}.${k}` : k, out);
  } else out.set(prefix, canonicalJson(v));
}

/** The dimensions of a node's step that are repetitions (written as a count). */
function repetitionDims(node: GraphNode): Set<string> {
  return new Set(node.step.matrix.filter((d) => d.repetition).map((d) => d.name));
}

/** The node's id with its repetition values as `*`: the group its reps fold into. */
function groupId(node: GraphNode): string {
  const reps = repetitionDims(node);
  if (!reps.size || node.id !== [node.step.name, ...node.step.matrix.map((d) => node.matrix[d.name])].join('/')) return node.id;
  return [node.step.name, ...node.step.matrix.map((d) => (reps.has(d.name) ? '*' : node.matrix[d.name]!))].join('/');
}

/**
 * The freeze of `target`: computed from the config, the inputs and the annotations alone (no
 * upstream needs to have run), so a run can be refused before it starts.
 */
export function freezeOf(target: GraphNode, inputs: ReadonlyMap<string, readonly ResolvedInput[]>, hostEnv: HostEnv): Freeze {
  // Every node `target` needs, and it, upstream first (a built graph has no cycle).
  const ordered = topological(withUpstream([target]));
  if (!ordered.ok) throw new Error(ordered.error.message);
  const nodes = ordered.value;
  const merkle = new Map<GraphNode, string>();
  const images = new Map<GraphNode, FrozenImage>();
  for (const n of nodes) {
    const reps = repetitionDims(n);
    const files: Record<string, string> = {};
    for (const i of inputs.get(n.id) ?? []) files[i.type === 'dir' ? `${i.path}/` : i.path] = i.digest;
    const image: FrozenImage = {
      kind: n.kind.name,
      kind_version: n.kind.version,
      config: n.kind.keyConfig(n, hostEnv),
      matrix: Object.fromEntries(Object.entries(n.matrix).filter(([d]) => !reps.has(d))),
      files,
      ...(n.annotation !== undefined ? { annotation: n.annotation } : {}),
    };
    images.set(n, image);
    const ups = [...new Set(n.upstream.map((u) => merkle.get(u)!))].sort();
    merkle.set(n, sha256(canonicalJson({ image, upstream: ups })));
  }

  // Per step: its nodes grouped with their reps folded (a group whose reps differ is listed by node).
  const bySteps = new Map<string, GraphNode[]>();
  for (const n of nodes) bySteps.set(n.step.name, [...(bySteps.get(n.step.name) ?? []), n]);
  const exact: Record<string, string> = {};
  for (const [step, members] of [...bySteps].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const groups = new Map<string, GraphNode[]>();
    for (const n of members) groups.set(groupId(n), [...(groups.get(groupId(n)) ?? []), n]);
    const described: { id: string; node: GraphNode; leaves: Map<string, string> }[] = [];
    for (const [id, ns] of groups) {
      const own = ns.map((n) => ({ n, json: canonicalJson(images.get(n)) }));
      const alike = own.every((o) => o.json === own[0]!.json);
      for (const o of alike ? own.slice(0, 1) : own) described.push({ id: alike ? id : o.n.id, node: o.n, leaves: imageLeaves(images.get(o.n)!) });
    }
    const paths = new Set(described.flatMap((d) => [...d.leaves.keys()]));
    for (const path of [...paths].sort()) {
      const values = described.map((d) => d.leaves.get(path));
      if (values.every((v) => v !== undefined && v === values[0])) {
        exact[`${step}: ${path}`] = values[0]!;
        continue;
      }
      // A value that differs between nodes is named by the one dimension that decides it (the task, the arm), else by node group.
      const dim = decidingDimension(described, path);
      for (const d of described) {
        const v = d.leaves.get(path);
        if (v !== undefined) exact[`${dim ? `${step}[${dim}=${d.node.matrix[dim]}]` : d.id}: ${path}`] = v;
      }
    }
    // The step's shape: what it needs, its matrix (a repetition dimension by its count), the order its nodes queue in.
    const first = members[0]!;
    exact[`${step}: needs`] = canonicalJson([...new Set(members.flatMap((n) => n.upstream.map((u) => u.step.name)))].sort());
    for (const d of first.step.matrix) {
      // (A checkpoint a step adds, e.g. a calibration per task, need not have every dimension.)
      const values = [...new Set(members.flatMap((n) => (n.matrix[d.name] === undefined ? [] : [n.matrix[d.name]!])))];
      exact[`${step}: matrix ${d.name}`] = d.repetition ? String(values.length) : canonicalJson(values.sort());
    }
    const order = first.kind.order?.(members.filter((n) => n.kind === first.kind));
    if (order) exact[`${step}: queue order`] = canonicalJson(order.map((n) => n.id));
  }
  const digest = sha256(canonicalJson({ root: merkle.get(target)!, fields: exact }));
  return { digest, fields: Object.fromEntries(Object.entries(exact).map(([k, v]) => [k, shown(v)])) };
}

/** The one matrix dimension whose value decides a leaf's value (absent counts as a value), if there is one. */
function decidingDimension(described: readonly { node: GraphNode; leaves: Map<string, string> }[], path: string): string | undefined {
  const dims = described[0]!.node.step.matrix.filter((d) => !d.repetition).map((d) => d.name);
  for (const dim of dims) {
    const seen = new Map<string, string | undefined>();
    let decides = true;
    for (const d of described) {
      const at = d.node.matrix[dim];
      if (at === undefined) return undefined; // not a node of the matrix (a checkpoint)
      const v = d.leaves.get(path);
      if (seen.has(at) && seen.get(at) !== v) {
        decides = false;
        break;
      }
      seen.set(at, v);
    }
    if (decides) return dim;
  }
  return undefined;
}

/** One node's frozen image as named leaves. */
function imageLeaves(image: FrozenImage): Map<string, string> {
  const out = new Map<string, string>();
  out.set('kind', JSON.stringify(`${image.kind} v${image.kind_version}`));
  leaves(image.config, '', out);
  for (const [path, digest] of Object.entries(image.files)) out.set(`input ${path}`, JSON.stringify(digest));
  if (image.annotation !== undefined) {
    const a = new Map<string, string>();
    leaves(image.annotation, '', a);
    for (const [k, v] of a) out.set(`annotation ${k}`, v);
  }
  // An empty config reads as one leaf at '' (`{}`): named so.
  if (out.has('')) {
    out.set('config', out.get('')!);
    out.delete('');
  }
  return out;
}

/** The frozen fields that differ, in words: `attempts: limits.turns: 20 -> 30`. */
export function describeFreezeChange(before: Readonly<Record<string, string>>, after: Readonly<Record<string, string>>): string[] {
  const out: string[] = [];
  for (const k of [...new Set([...Object.keys(before), ...Object.keys(after)])].sort()) {
    if (before[k] === after[k]) continue;
    if (before[k] === undefined) out.push(`${k}: added (${after[k]})`);
    else if (after[k] === undefined) out.push(`${k}: removed (was ${before[k]})`);
    else out.push(`${k}: ${before[k]} -> ${after[k]}`);
  }
  return out;
}
