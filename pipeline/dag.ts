import type { BenchConfig, StepConfig } from './config/load.js';
import { closest, type Diagnostic } from './diagnostic.js';
import { err, ok, type Result } from './result.js';
import type { GraphNode, StepKindRegistry } from './step-kind.js';

export interface Graph {
  /** Topological order: every node comes after all of its upstream nodes. */
  nodes: GraphNode[];
  byId: Map<string, GraphNode>;
  steps: Map<string, StepConfig>;
  /** Step names in topological order. */
  stepOrder: string[];
}

/**
 * The most nodes one config may expand to. Past it a config is refused at load: the
 * store, the scheduler and the report are measured up to here (see npm run bench).
 */
export const MAX_NODES = 250_000;
/** Diagnostics shown for one config before the rest are counted, not listed. */
const MAX_DIAGNOSTICS = 20;

/** The given nodes and everything they need, transitively, sorted by id. */
export function withUpstream(start: Iterable<GraphNode>): GraphNode[] {
  const seen = new Set<GraphNode>();
  const stack = [...start];
  while (stack.length) {
    const n = stack.pop()!;
    if (seen.has(n)) continue;
    seen.add(n);
    for (const u of n.upstream) stack.push(u);
  }
  return [...seen].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

function cartesian(step: StepConfig): Record<string, string>[] {
  let combos: Record<string, string>[] = [{}];
  for (const dim of step.matrix) {
    const next: Record<string, string>[] = [];
    for (const c of combos) for (const v of dim.values) next.push({ ...c, [dim.name]: v });
    combos = next;
  }
  return combos;
}

export function nodeIdOf(step: StepConfig, matrix: Record<string, string>): string {
  return [step.name, ...step.matrix.map((d) => matrix[d.name]!)].join('/');
}

/**
 * Orders steps so each comes after what it needs (and, where that makes no cycle, after what
 * its kind implies it reads); reports unknown needs and cycles in words.
 */
function orderSteps(config: BenchConfig, implied: ReadonlyMap<string, readonly string[]> = new Map()): Result<StepConfig[], Diagnostic[]> {
  const steps = new Map(config.steps.map((s) => [s.name, s]));
  const diagnostics: Diagnostic[] = [];
  for (const s of config.steps) {
    s.needs.forEach((need, i) => {
      if (steps.has(need)) {
        if (need === s.name) {
          diagnostics.push({
            field: `steps.${s.name}.needs[${i}]`,
            message: `step "${s.name}" needs itself`,
            location: s.source.locate([...s.path, 'needs', i]),
          });
        }
        return;
      }
      const guess = closest(need, [...steps.keys()]);
      diagnostics.push({
        field: `steps.${s.name}.needs[${i}]`,
        message: `step "${s.name}" needs "${need}", which is not a step; steps are: ${[...steps.keys()].join(', ')}`,
        location: s.source.locate([...s.path, 'needs', i]),
        ...(guess ? { hint: `did you mean "${guess}"?` } : {}),
      });
    });
  }
  if (diagnostics.length) return err(diagnostics);

  const order: StepConfig[] = [];
  const state = new Map<string, 'visiting' | 'done'>();
  const stack: string[] = [];
  const visit = (s: StepConfig): boolean => {
    const st = state.get(s.name);
    if (st === 'done') return true;
    if (st === 'visiting') {
      const cycle = [...stack.slice(stack.indexOf(s.name)), s.name];
      const from = steps.get(cycle[cycle.length - 2]!)!;
      diagnostics.push({
        field: `steps.${from.name}.needs`,
        message: `cycle: ${cycle.join(' -> ')}`,
        location: from.source.locate([...from.path, 'needs', from.needs.indexOf(s.name)]),
        hint: 'a step cannot depend on its own output; remove one of these needs',
        // The other needs of the cycle, each where it is written.
        related: cycle.slice(0, -2).map((name, i) => {
          const step = steps.get(name)!;
          const next = cycle[i + 1]!;
          return {
            field: `steps.${name}.needs`,
            message: `${name} needs ${next}`,
            location: step.source.locate([...step.path, 'needs', step.needs.indexOf(next)]),
          };
        }),
      });
      return false;
    }
    state.set(s.name, 'visiting');
    stack.push(s.name);
    for (const n of s.needs) if (!visit(steps.get(n)!)) return false;
    // An implied need that would close a cycle is left out (the kind does without it).
    for (const n of implied.get(s.name) ?? []) if (state.get(n) !== 'visiting' && !visit(steps.get(n)!)) return false;
    stack.pop();
    state.set(s.name, 'done');
    order.push(s);
    return true;
  };
  for (const s of config.steps) if (!visit(s)) break;
  return diagnostics.length ? err(diagnostics) : ok(order);
}

/** A config that would expand past MAX_NODES, named at its largest step's matrix. */
function nodeCountProblem(config: BenchConfig): Diagnostic | undefined {
  let total = 0;
  let largest: { step: StepConfig; count: number } | undefined;
  for (const s of config.steps) {
    const count = s.matrix.reduce((n, d) => n * d.values.length, 1);
    total += count;
    if (!largest || count > largest.count) largest = { step: s, count };
  }
  if (total <= MAX_NODES || !largest) return undefined;
  const fmt = (n: number) => (n >= 1e15 ? n.toExponential(2) : n.toLocaleString('en-US'));
  return {
    field: `steps.${largest.step.name}.matrix`,
    message: `the config expands to ${fmt(total)} nodes (this step alone to ${fmt(largest.count)}: ${largest.step.matrix.map((d) => `${d.name} ${d.values.length}`).join(' x ')}); a config may have at most ${fmt(MAX_NODES)}`,
    location: largest.step.source.locate([...largest.step.path, 'matrix']),
    hint: 'split the cohort into several configs sharing one store (each runs only its own nodes)',
  };
}

/** Each diagnostic once (steps sharing a task source report a missing task once), at most MAX_DIAGNOSTICS of them. */
function distinct(diagnostics: Diagnostic[]): Diagnostic[] {
  const seen = new Set<string>();
  const out: Diagnostic[] = [];
  for (const d of diagnostics) {
    const key = `${d.message}\0${d.location ? `${d.location.file}:${d.location.line}:${d.location.column}` : ''}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(d);
  }
  if (out.length <= MAX_DIAGNOSTICS) return out;
  return [...out.slice(0, MAX_DIAGNOSTICS), { message: `... and ${out.length - MAX_DIAGNOSTICS} more problems of the same kinds; fix these and run again` }];
}

/** Each step's kind known, and what the kind's own check finds in the step. */
function kindProblems(config: BenchConfig, kinds: StepKindRegistry, steps: ReadonlyMap<string, StepConfig>): Diagnostic[] {
  const diagnostics: Diagnostic[] = [];
  for (const s of config.steps) {
    const kind = kinds.get(s.kind);
    if (!kind) {
      diagnostics.push({
        field: `steps.${s.name}.kind`,
        message: `unknown step kind "${s.kind}"; known kinds: ${[...kinds.keys()].join(', ')}`,
        location: s.source.locate([...s.path, 'kind']),
      });
      continue;
    }
    diagnostics.push(...(kind.check?.(s, steps) ?? []));
  }
  return diagnostics;
}

/**
 * Draws every matrix dimension written as a source, through its step's kind, in place: the
 * loaded config then holds the lists, as if they had been written out (drawn once per load).
 */
function drawMatrixSources(config: BenchConfig, kinds: StepKindRegistry): Diagnostic[] {
  const out: Diagnostic[] = [];
  for (const s of config.steps) {
    for (const dim of s.matrix) {
      if (!dim.source || dim.values.length > 0) continue;
      const kind = kinds.get(s.kind);
      const at = { field: `steps.${s.name}.matrix.${dim.name}`, location: s.source.locate([...s.path, 'matrix', dim.name]) };
      if (!kind?.matrixSource) {
        out.push({ ...at, message: `a ${s.kind} step cannot draw matrix.${dim.name} from a source`, hint: 'list its values' });
        continue;
      }
      const drawn = kind.matrixSource(s, dim.name, dim.source);
      if (!drawn.ok) out.push(...drawn.error.map((d) => ({ ...at, ...d })));
      else if (drawn.value.length === 0)
        out.push({ ...at, message: `the selection draws no ${dim.name}`, hint: 'check select: against the ids of the task source' });
      else dim.values = drawn.value;
    }
  }
  return out;
}

/**
 * Expands steps into nodes. A node of S needs every node of each upstream step U
 * that agrees with it on the matrix dimensions S and U share (so run/t1/a/2 needs
 * materialize/t1, and analyze, with no matrix, needs every verify node).
 */
export function buildGraph(config: BenchConfig, kinds: StepKindRegistry): Result<Graph, Diagnostic[]> {
  const undrawn = drawMatrixSources(config, kinds);
  if (undrawn.length) return err(undrawn);
  const steps = new Map(config.steps.map((s) => [s.name, s]));
  // What each step's kind reads whatever its needs say (verify: the canary calibrations of its tasks' certify step).
  const implied = new Map<string, string[]>();
  for (const s of config.steps) {
    const more = (kinds.get(s.kind)?.impliedNeeds?.(s, steps) ?? []).filter((n) => n !== s.name && !s.needs.includes(n) && steps.has(n));
    if (more.length) implied.set(s.name, more);
  }
  const ordered = orderSteps(config, implied);
  if (!ordered.ok) return ordered;
  const tooMany = nodeCountProblem(config);
  if (tooMany) return err([tooMany]);
  const diagnostics = kindProblems(config, kinds, steps);
  if (diagnostics.length) return err(distinct(diagnostics));

  const nodes: GraphNode[] = [];
  const byId = new Map<string, GraphNode>();
  const nodesOfStep = new Map<string, GraphNode[]>();
  let checkpoints = 0;
  for (const step of ordered.value) {
    const kind = kinds.get(step.kind)!;
    // For each upstream step: index its nodes by the values of the dimensions shared with this step.
    const before = new Set(ordered.value.slice(0, ordered.value.indexOf(step)).map((s) => s.name));
    const impliedHere = (implied.get(step.name) ?? []).filter((n) => before.has(n));
    const joins = [...step.needs.map((need) => ({ need, optional: false })), ...impliedHere.map((need) => ({ need, optional: true }))].map(
      ({ need, optional }) => {
        const up = steps.get(need)!;
        const shared = up.matrix.map((d) => d.name).filter((d) => step.matrix.some((m) => m.name === d));
        const index = new Map<string, GraphNode[]>();
        for (const n of nodesOfStep.get(need)!) {
          const k = shared.map((d) => n.matrix[d]).join('\u0000');
          let list = index.get(k);
          if (!list) index.set(k, (list = []));
          list.push(n);
        }
        return { up, shared, index, optional };
      },
    );
    const own: GraphNode[] = [];
    for (const matrix of cartesian(step)) {
      const node: GraphNode = { id: nodeIdOf(step, matrix), step, kind, matrix, upstream: [], downstream: [] };
      for (const j of joins) {
        const matches = j.index.get(j.shared.map((d) => matrix[d]).join('\u0000'));
        // An implied need without a node for this one is simply not read (the kind provides for it).
        if (!matches && j.optional) continue;
        if (!matches) {
          const want = j.shared.map((d) => `${d}=${matrix[d]}`).join(', ');
          diagnostics.push({
            field: `steps.${step.name}.needs`,
            message: `node ${node.id} needs step "${j.up.name}", but "${j.up.name}" has no node with ${want}`,
            location: step.source.locate([...step.path, 'needs', step.needs.indexOf(j.up.name)]),
            hint: `give "${j.up.name}" the same matrix values as "${step.name}" for ${j.shared.join(', ')}`,
          });
          continue;
        }
        for (const u of matches) {
          node.upstream.push(u);
          u.downstream.push(node);
        }
      }
      own.push(node);
      byId.set(node.id, node);
    }
    // A step kind may order its own nodes (e.g. run interleaves arms pair by pair in a
    // seeded order); nodes of one step never depend on each other, so any order is topological.
    for (const n of kind.order ? kind.order(own) : own) nodes.push(n);
    nodesOfStep.set(step.name, own);
    for (const c of kind.checkpoints?.(step, (name) => nodesOfStep.get(name) ?? []) ?? []) {
      const id = `${step.name}/${c.name}`;
      // A checkpoint's id may coincide with a matrix node's (an arm named like it): two nodes, one id, is refused.
      if (byId.has(id)) {
        diagnostics.push({
          field: `steps.${step.name}.matrix`,
          message: `node ${id} is both a node of the matrix and the ${c.kind.title.one} the step adds`,
          location: step.source.locate([...step.path, 'matrix']),
          hint: `rename the matrix value that makes ${id}`,
        });
        continue;
      }
      const node: GraphNode = {
        id,
        step,
        kind: c.kind,
        matrix: c.matrix,
        upstream: [...c.after],
        downstream: [...c.before],
        ...(c.annotation !== undefined ? { annotation: c.annotation } : {}),
      };
      for (const u of c.after) u.downstream.push(node);
      for (const d of c.before) d.upstream.push(node);
      nodes.push(node);
      byId.set(node.id, node);
      checkpoints++;
    }
    if (diagnostics.length > MAX_DIAGNOSTICS) break;
  }
  if (diagnostics.length) return err(distinct(diagnostics));
  const sorted = checkpoints ? topological(nodes) : ok(nodes);
  if (!sorted.ok) return err([sorted.error]);
  return ok({ nodes: sorted.value, byId, steps, stepOrder: ordered.value.map((s) => s.name) });
}

/**
 * The nodes reordered so each comes after what it needs, keeping their order otherwise
 * (each node is placed as late as its first position allows, after its upstream). Needed
 * only when checkpoints link nodes across steps.
 */
export function topological(nodes: readonly GraphNode[]): Result<GraphNode[], Diagnostic> {
  const state = new Map<GraphNode, 1 | 2>();
  const out: GraphNode[] = [];
  for (const start of nodes) {
    if (state.get(start) === 2) continue;
    // Iterative depth-first: a frame is a node and the index of its next upstream to visit.
    const stack: [GraphNode, number][] = [[start, 0]];
    state.set(start, 1);
    while (stack.length) {
      const frame = stack[stack.length - 1]!;
      const [node, i] = frame;
      if (i < node.upstream.length) {
        frame[1]++;
        const u = node.upstream[i]!;
        const st = state.get(u);
        if (st === 1) return err({ field: `steps.${node.step.name}`, message: `cycle between nodes: ${node.id} needs ${u.id}, which needs it` });
        if (st === undefined) {
          state.set(u, 1);
          stack.push([u, 0]);
        }
        continue;
      }
      stack.pop();
      state.set(node, 2);
      out.push(node);
    }
  }
  return ok(out);
}
