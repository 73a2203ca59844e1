import type { EngineContext, NodeState, RunOptions } from '../pipeline/engine.js';
import { canonicalJson, type Json } from '../pipeline/canonical-json.js';
import type { EngineEvent } from '../pipeline/events.js';
import { freezeOf, type Freeze } from '../pipeline/freeze.js';
import type { ResolvedInput } from '../pipeline/inputs.js';
import { withUpstream } from '../pipeline/dag.js';
import { annotateNodes } from '../pipeline/annotate.js';
import { lockDisagreement, type RecordLock } from '../steps/record-lock.js';
import type { Store } from '../pipeline/store/store.js';
import type { GraphNode, HostEnv } from '../pipeline/step-kind.js';
import { plainRecord, type ActionRecord } from '../pipeline/store/action-cache.js';
import {
  checkFreeze,
  FREEZE_FORMAT,
  Registry,
  type CohortEntry,
  type CohortRecord,
  type Draw,
  type DrawData,
  type ResetRecord,
} from '../steps/preregistration.js';
import { specOf } from '../steps/step-spec.js';
import { readJsonArtifact } from '../pipeline/artifact.js';
import { ANALYSIS, analyzeStep } from '../steps/analyze-step.js';
import { GATE_DECISION, gateStep } from '../steps/gate.js';
import { runStep } from '../steps/run.js';
import { auditStep } from '../steps/audit.js';
import { CERTIFICATION_VERDICT } from '../steps/certification.js';
import { certifyStep } from '../steps/certify.js';
import type { CacheKey, Sha256 } from '../pipeline/digest.js';
import { CorruptBlobError } from '../pipeline/store/corrupt-blob.js';

/** A cohort: an analyze node, its version, its attempts, what observes it, and its freeze. */
export interface Cohort {
  name: string;
  version: number;
  node: GraphNode;
  /** The run nodes upstream of it. */
  attempts: GraphNode[];
  /** Nodes whose result reads its verdict (its analysis, its looks, gates and exports downstream): producing or reusing one binds the version. */
  observers: GraphNode[];
  freeze: Freeze;
}

/** The nodes downstream of `node` (and it) whose kind observes a verdict, and its own interim looks. */
function observersOf(node: GraphNode): GraphNode[] {
  const out = new Set<GraphNode>();
  const seen = new Set<GraphNode>();
  const stack = [node];
  while (stack.length) {
    const n = stack.pop()!;
    if (seen.has(n)) continue;
    seen.add(n);
    if (n.kind.observes) out.add(n);
    stack.push(...n.downstream);
  }
  // Its interim looks are checkpoints of its own step, upstream of it.
  for (const u of withUpstream(node.upstream)) if (u.step === node.step && u.kind.observes) out.add(u);
  return [...out];
}

export function cohortsOf(nodes: readonly GraphNode[], inputs: ReadonlyMap<string, ResolvedInput[]>, env: HostEnv): Cohort[] {
  return nodes
    .filter((n) => n.kind === analyzeStep)
    .map((node) => ({
      name: node.step.name,
      version: specOf(node.step, 'analyze').version ?? 1,
      node,
      attempts: withUpstream(node.upstream).filter((n) => n.kind === runStep),
      observers: observersOf(node),
      freeze: freezeOf(node, inputs, env),
    }));
}

export function registryOf(ctx: EngineContext): Registry {
  return new Registry(ctx.store);
}

/** What an attempt's or an observation's record names: the store it was made in, and each cohort version it was made under. */
interface Provenance {
  store: string;
  cohorts: { cohort: string; version: number; registration: string }[];
}

function provenanceIn(record: ActionRecord): Provenance | undefined {
  const p = record.provenance as Partial<Provenance> | undefined;
  return p && typeof p.store === 'string' && Array.isArray(p.cohorts) ? (p as Provenance) : undefined;
}

/** The registrations this store's own records of the cohort's nodes name (their latest builds), with how many records name each. */
function storedRegistrations(ctx: EngineContext, c: Cohort): Map<string, { version: number; records: number }> {
  const out = new Map<string, { version: number; records: number }>();
  const id = ctx.store.id();
  // An observer of a cohort none of whose attempts has a record here (every task rejected by
  // certify) observed nothing: it binds nothing either.
  const observed = c.attempts.some((a) => ctx.store.nodes.get(a.id)?.latest);
  for (const n of observed ? [...c.attempts, ...c.observers] : c.attempts) {
    const latest = ctx.store.nodes.get(n.id)?.latest;
    if (!latest) continue;
    const found = ctx.store.actions.get(latest.key);
    const p = found.status === 'hit' ? provenanceIn(found.record) : undefined;
    if (p?.store !== id) continue; // made in another store (read from a remote cache), or before records named their store
    for (const l of p.cohorts) {
      if (l.cohort !== c.name || typeof l.registration !== 'string') continue;
      const had = out.get(l.registration);
      out.set(l.registration, { version: l.version, records: (had?.records ?? 0) + 1 });
    }
  }
  return out;
}

export interface Admission {
  refusals: string[];
  notes: string[];
  /** Cohort -> the registration its version runs under. */
  registrations: Map<string, string>;
  /** Cohorts whose version is bound already (no bind entry to write). */
  bound: Set<string>;
}

/** Records of registrations the log does not hold (it was moved, cut short or rewritten), unless a reset was acknowledged for them. */
function orphansOf(record: CohortRecord, stored: Map<string, { version: number; records: number }>): ResetRecord['orphans'] {
  const known = new Set([...record.versions.flatMap((v) => v.registrations), ...record.resets.flatMap((r) => r.orphans.map((o) => o.registration))]);
  return [...stored].filter(([reg]) => !known.has(reg)).map(([registration, s]) => ({ version: s.version, registration, records: s.records }));
}

function orphanRefusal(registry: Registry, c: Cohort, orphans: ResetRecord['orphans']): string {
  const total = orphans.reduce((n, o) => n + o.records, 0);
  return (
    `cohort ${c.name}: ${total} stored record(s) of its attempts and observations were made under ` +
    orphans.map((o) => `version ${o.version} (registry entry ${o.registration.slice(0, 12)})`).join(', ') +
    `, which the registry ${registry.pathOf(c.name)} does not hold: it was moved, cut short or rewritten since.\n` +
    `  restore it from a copy (a CI cache, a backup) and run again;\n` +
    `  or start from scratch in a new store (--store DIR; its bundles say "first registration in this store");\n` +
    `  or go on in this store with the gap on record: pairbench freeze ${c.name} --acknowledge-reset (every later bundle of ${c.name} says so)`
  );
}

/**
 * Before a run: each cohort's log must chain, the store's records must name only registrations
 * it holds, and a bound version must still have the same freeze. Registers what is new;
 * returns the refusals, in words.
 */
export async function admitCohorts(
  ctx: EngineContext,
  cohorts: readonly Cohort[],
  /** lock.stores: read-only stores (a pull request's base store) whose record may hold what the lock anchors. */
  options: { acknowledgeReset?: boolean; lock?: { path: string; lock: RecordLock; stores?: readonly Store[] } } = {},
): Promise<Admission> {
  const registry = registryOf(ctx);
  const out: Admission = { refusals: [], notes: [], registrations: new Map(), bound: new Set() };
  for (const c of cohorts) {
    // Anchored outside the machine: the store's record must begin with what the committed lock names.
    // On a pull request the base's record, in the base's store read beside a fresh one, is the anchored one.
    const locked = options.lock?.lock.cohorts[c.name];
    if (locked) {
      const holders = [ctx.store, ...(options.lock!.stores ?? [])].map((st) => st.logs.read(c.name));
      const disagreements = holders.map((read) => (read.ok ? lockDisagreement(options.lock!.path, c.name, locked, read.entries) : undefined));
      if (disagreements.every((d) => d !== undefined)) {
        out.refusals.push(disagreements[0]!);
        continue;
      }
    }
    const stored = storedRegistrations(ctx, c);
    // Judged and registered in one locked step: two runs starting together register once. The
    // judgement may be asked twice (first without the lock): what the last one said is kept.
    let said = { refusals: [] as string[], notes: [] as string[], bound: false };
    const r = await registry.append(c.name, (record) => {
      said = { refusals: [], notes: [], bound: false };
      const entries: CohortEntry[] = [];
      const orphans = orphansOf(record, stored);
      if (orphans.length) {
        if (!options.acknowledgeReset) {
          said.refusals.push(orphanRefusal(registry, c, orphans));
          return [];
        }
        entries.push({ type: 'acknowledge-reset', data: { orphans } });
        said.notes.push(
          `cohort ${c.name}: registry reset acknowledged (${orphans.map((o) => `${o.records} record(s) of version ${o.version}`).join(', ')}); it is on record`,
        );
      }
      const v = record.versions.find((x) => x.version === c.version);
      const boundByRecords = [...stored].some(([reg, s]) => s.version === c.version && Boolean(v?.registrations.includes(reg)));
      const check = checkFreeze(record, c.version, c.freeze, boundByRecords);
      const register: CohortEntry = {
        type: 'register',
        data: { version: c.version, freeze_digest: c.freeze.digest, fields: c.freeze.fields, format: FREEZE_FORMAT },
      };
      switch (check.status) {
        case 'refused':
          said.refusals.push(
            `cohort ${c.name} version ${c.version} is frozen (bound ${check.record.bound_at ? `${check.record.bound_at} by ${check.record.bound_by}` : 'by the records in this store'}); these frozen fields changed:\n` +
              check.changes.map((x) => `  - ${x}`).join('\n') +
              `\n  to run the changed cohort, bump \`version\` in steps.${c.name} (version ${c.version} stays in the record; 'pairbench history ${c.name}' lists every version),` +
              ` or start it afresh in a new store (--store DIR)`,
          );
          return entries;
        case 'changed-before-binding':
          entries.push(register);
          said.notes.push(`cohort ${c.name} version ${c.version} had no observation yet: re-frozen (${check.changes.length} field(s) changed)`);
          break;
        case 'new': {
          // A version number the store's records used under a registration the registry lost is retired.
          const lost = [...record.resets.flatMap((x) => x.orphans), ...(orphans.length ? orphans : [])];
          const highest = Math.max(0, ...lost.map((o) => o.version));
          if (c.version <= highest) {
            said.refusals.push(
              `cohort ${c.name} version ${c.version}: the store holds records made under version ${highest} or earlier with a registration its registry lost (a reset is on record): ` +
                `bump \`version\` in steps.${c.name} to ${highest + 1} or more, so no two freezes share a version number`,
            );
            return entries;
          }
          entries.push(register);
          said.notes.push(
            `cohort ${c.name} version ${c.version} registered (freeze ${c.freeze.digest.slice(0, 12)})${record.versions.length ? '' : ': its first registration in this store'}`,
          );
          break;
        }
        case 'same':
          if (check.record.bound_at || boundByRecords) said.bound = true;
          break;
      }
      return entries;
    });
    if (!r.ok) {
      out.refusals.push(
        `cohort ${c.name}: its registry log is broken: ${r.problem}.\n  restore ${registry.pathOf(c.name)} from a copy (a CI cache, a backup), or start from scratch in a new store (--store DIR)`,
      );
      continue;
    }
    out.refusals.push(...said.refusals);
    out.notes.push(...said.notes);
    if (said.bound) out.bound.add(c.name);
    const v = r.record.versions.find((x) => x.version === c.version);
    if (v && !out.refusals.length) out.registrations.set(c.name, v.registration);
  }
  return out;
}

/** The provenance a run gives the records it makes: each attempt and observation names this store and the registration of each cohort version it belongs to. */
export function provenanceFor(ctx: EngineContext, cohorts: readonly Cohort[], admission: Admission): (node: GraphNode) => Json | undefined {
  const byNode = new Map<GraphNode, Provenance['cohorts']>();
  for (const c of cohorts) {
    const registration = admission.registrations.get(c.name);
    if (!registration) continue;
    for (const n of new Set([...c.attempts, ...c.observers])) byNode.set(n, [...(byNode.get(n) ?? []), { cohort: c.name, version: c.version, registration }]);
  }
  const store = ctx.store.id();
  return (node) => {
    const cohorts = byNode.get(node);
    return cohorts ? ({ store, cohorts } satisfies Provenance) : undefined;
  };
}

/**
 * Whether a certify node's stored result rejected its task (certify results are not verdicts: a
 * rejection observes nothing). Asked when an attempt under it starts: by then the engine has made
 * the certify outputs local (a record read lazily from a remote cache holds no blobs before). One
 * that still cannot be read counts as certified: the attempt binds, the safe side.
 */
function certifyRejected(ctx: EngineContext, node: GraphNode, key: CacheKey): boolean {
  const found = ctx.store.actions.get(key);
  if (found.status !== 'hit') return false;
  try {
    const read = readJsonArtifact(CERTIFICATION_VERDICT, found.record.outputs, (d) => ctx.store.cas.read(d), node.id);
    return read?.ok === true && read.value.verdict !== 'certified';
  } catch (e) {
    if (e instanceof CorruptBlobError) return false;
    throw e;
  }
}

/**
 * Binds each cohort version at its first observation: an attempt that starts, or an analysis,
 * look, gate or export that starts or is reused once some attempt of the cohort has run (here
 * or before). An attempt of a task certify rejected starts no agent and binds nothing; nor does
 * an analysis of a cohort whose every task was rejected: it observed nothing, so its certify
 * policy can still change without a new version. Written when it happens (a run that crashes
 * afterwards has still bound it); `settled` waits for the writes.
 */
export function observationBinder(
  ctx: EngineContext,
  cohorts: readonly Cohort[],
  admission: Admission,
): { event(e: EngineEvent): void; settled(): Promise<void> } {
  const registry = registryOf(ctx);
  const byNode = new Map<string, { cohort: Cohort; as: 'attempt' | 'observation' }[]>();
  for (const c of cohorts) {
    if (admission.bound.has(c.name) || !admission.registrations.has(c.name)) continue;
    for (const a of c.attempts) byNode.set(a.id, [...(byNode.get(a.id) ?? []), { cohort: c, as: 'attempt' }]);
    for (const o of c.observers) byNode.set(o.id, [...(byNode.get(o.id) ?? []), { cohort: c, as: 'observation' }]);
  }
  const bound = new Set<string>();
  const writes: Promise<unknown>[] = [];
  /** Certify nodes as they settle (before their attempts start), with their keys. */
  const certified = new Map<string, CacheKey>();
  const underRejection = (attempt: string) =>
    ctx.graph.byId.get(attempt)?.upstream.some((u) => certified.has(u.id) && certifyRejected(ctx, u, certified.get(u.id)!)) ?? false;
  /** Cohorts with an attempt that started here, or was reused (it ran before). */
  const drawn = new Set<string>();
  return {
    event(e) {
      if (e.type === 'cached' || e.type === 'done') {
        if (ctx.graph.byId.get(e.node)?.kind === certifyStep) certified.set(e.node, e.key);
      }
      if (e.type !== 'running' && e.type !== 'cached') return;
      for (const { cohort: c, as } of byNode.get(e.node) ?? []) {
        if (as === 'attempt') {
          if (e.type === 'running' && underRejection(e.node)) continue;
          drawn.add(c.name);
          // A reused attempt by itself observes nothing; an attempt that starts binds.
          if (e.type !== 'running') continue;
        } else if (!drawn.has(c.name)) continue;
        if (bound.has(c.name)) continue;
        bound.add(c.name);
        writes.push(
          registry.append(c.name, (record) => {
            const v = record.versions.find((x) => x.version === c.version);
            return v && !v.bound_at ? [{ type: 'bind', data: { version: c.version, by: `${as} ${e.node}` } }] : [];
          }),
        );
      }
    },
    async settled() {
      await Promise.all(writes);
    },
  };
}

/** The verdicts of an analysis output, each checked as it is read. */
function verdictsIn(ctx: EngineContext, record: ActionRecord): Record<string, string> {
  const out: Record<string, string> = {};
  const read = readJsonArtifact(ANALYSIS, record.outputs, (d) => ctx.store.cas.read(d), record.node);
  if (!read?.ok) return out; // none, or not an analysis: no verdict is recorded from it
  for (const c of read.value.comparisons) out[`${c.treatment} vs ${c.control}`] = c.verdict;
  return out;
}

/** A gate's decision, from its output, or from its failure when it closed. */
function gateDecision(ctx: EngineContext, s: NodeState): { pass: boolean; because: string } | undefined {
  if (s.status === 'failed') return s.failure.reason === 'refused' ? { pass: false, because: s.failure.message } : undefined;
  if (s.status !== 'executed' && s.status !== 'cached') return undefined;
  const read = readJsonArtifact(GATE_DECISION, s.record.outputs, (d) => ctx.store.cas.read(d), s.record.node);
  return read?.ok ? { pass: read.value.pass, because: read.value.because } : undefined;
}

/**
 * After a run: which attempts each version executed, and every new observation (an analysis,
 * a look, a gate or an export whose output differs from that node's last observation of the
 * version), with which attempts it reused from which version. Returns the lines to print.
 */
export async function recordCohorts(ctx: EngineContext, cohorts: readonly Cohort[], states: ReadonlyMap<string, NodeState>): Promise<string[]> {
  const registry = registryOf(ctx);
  const lines: string[] = [];
  for (const c of cohorts) {
    const executed: string[] = [];
    const reached: string[] = [];
    for (const a of c.attempts) {
      const s = states.get(a.id);
      if (!s || (s.status !== 'executed' && s.status !== 'cached')) continue;
      reached.push(s.record.key);
      if (s.status === 'executed') executed.push(s.record.key);
    }
    const result = await registry.append(c.name, (record) => {
      const v = record.versions.find((x) => x.version === c.version);
      if (!v) return [];
      const entries: CohortEntry[] = [];
      // What this version executed is on record as its draws (drawKeeper): a result not cached (an
      // infrastructure fault, retried by the next run) is no draw.
      const mine = new Set([...v.executed, ...executed]);
      const redrawn = executed.filter((k) => v.draws.some((d) => d.key === k && d.n > 1)).length;
      const reused: Record<string, number> = {};
      for (const key of reached) {
        if (mine.has(key)) continue;
        const first = record.versions.find((x) => x.version !== c.version && x.executed.includes(key));
        if (first) reused[String(first.version)] = (reused[String(first.version)] ?? 0) + 1;
      }
      for (const o of c.observers) {
        const s = states.get(o.id);
        if (!s) continue;
        const gate = o.kind === gateStep ? gateDecision(ctx, s) : undefined;
        const produced = s.status === 'executed' || s.status === 'cached' ? s.record : undefined;
        if (!produced && !gate) continue;
        const digest = produced?.outputs_digest ?? null;
        const last = [...v.observations].reverse().find((x) => x.by === o.id);
        if (last && last.digest === digest && last.gate?.because === gate?.because) continue;
        entries.push({
          type: 'observe',
          data: {
            version: c.version,
            by: o.id,
            what: o.kind.title.one,
            digest,
            attempts: reached.length,
            verdicts: o === c.node && produced ? verdictsIn(ctx, produced) : {},
            reused,
            ...(gate ? { gate } : {}),
            ...(redrawn ? { redrawn } : {}),
            ...(v.observations.length && executed.length > redrawn ? { reran: executed.length - redrawn } : {}),
            // What the analysis read: another cohort analysing some of them later is told it came after.
            ...(o === c.node && produced ? { keys: reached } : {}),
          },
        });
      }
      return entries;
    });
    if (!result.ok) {
      lines.push(`cohort ${c.name}: this run's observations could not be recorded: ${result.problem}`);
      continue;
    }
    // Every attempt a registered version executed stays in the store: gc keeps this root.
    ctx.store.setRoot(
      `cohort ${c.name}`,
      result.record.versions.flatMap((v) => v.executed),
      { kind: 'cohort', cohort: c.name },
    );
    const reused = new Map<string, number>();
    for (const key of reached) {
      const first = result.record.versions.find((x) => x.executed.includes(key));
      if (first && first.version !== c.version) reused.set(String(first.version), (reused.get(String(first.version)) ?? 0) + 1);
    }
    for (const [version, n] of reused) lines.push(`cohort ${c.name} version ${c.version}: reused ${n} attempt(s) first produced by version ${version}`);
  }
  return lines;
}

/** Where each key was first drawn, across every cohort's record in the store. */
interface FirstDraw {
  cohort: string;
  version: number;
  draw: Draw;
}

/** A stored draw's record, when it and every blob of its outputs are intact (each blob hashed again). */
function restorable(ctx: EngineContext, draw: Draw): ActionRecord | undefined {
  if (!draw.record) return undefined;
  try {
    const record = JSON.parse(ctx.store.cas.read(draw.record as Sha256).toString('utf8')) as ActionRecord;
    if (record.key !== draw.key || record.outputs_digest !== draw.outputs) return undefined;
    for (const entry of Object.values(record.outputs)) for (const d of ctx.store.cas.closure(entry)) if (ctx.store.cas.hashOnDisk(d) !== d) return undefined;
    return record;
  } catch {
    return undefined; // gone, corrupt, or a tree that cannot be read: not restorable
  }
}

/**
 * Every draw counts. Each execution of a node whose kind draws (an agent attempt, a verifier
 * run) under a registered cohort version is appended to the cohort's record with its stored
 * record. A key drawn before (under any cohort of this store) is not drawn again: its first
 * draw is restored, so deleting records re-rolls nothing. When the first draw cannot be
 * restored (its blobs are gone), the node is refused, unless `redraw` is given or the engine
 * found the record corrupt: then it is drawn again, and the draw is on record as a re-draw.
 */
export function drawKeeper(
  ctx: EngineContext,
  cohorts: readonly Cohort[],
  admission: Admission,
  options: { redraw?: boolean } = {},
): { recall: NonNullable<RunOptions['recall']>; event(e: EngineEvent): void; settled(): Promise<string[]> } {
  const registry = registryOf(ctx);
  // Read when a node is about to execute, never on a run that executes nothing (a no-op reads no log).
  let firstDraws: Map<string, FirstDraw> | undefined;
  const firstOf = (key: string): FirstDraw | undefined => {
    if (!firstDraws) {
      firstDraws = new Map();
      for (const record of registry.all())
        for (const v of record.versions)
          for (const d of v.draws) {
            const had = firstDraws.get(d.key);
            if (!had || (d.record && (!had.draw.record || d.at < had.draw.at))) firstDraws.set(d.key, { cohort: record.cohort, version: v.version, draw: d });
          }
    }
    return firstDraws.get(key);
  };
  const byNode = new Map<string, Cohort[]>();
  for (const c of cohorts) {
    if (!admission.registrations.has(c.name)) continue;
    for (const n of withUpstream([c.node])) if (n.kind.draws) byNode.set(n.id, [...(byNode.get(n.id) ?? []), c]);
  }
  /** Keys allowed to draw again, with why. */
  const because = new Map<string, string>();
  const pending = new Map<string, { version: number; draws: DrawData[] }>();
  let writing: Promise<unknown> | undefined;
  /** Draws that could not be put on record (a log that broke during the run), in words. */
  const problems: string[] = [];
  // One append per cohort at a time: draws that finish while one is written go in the next.
  const flush = () => {
    if (writing || !pending.size) return;
    const batch = [...pending];
    pending.clear();
    writing = Promise.all(
      batch.map(async ([cohort, { version, draws }]) => {
        const r = await registry.append(cohort, () => [{ type: 'draw', data: { version, draws } }]);
        if (!r.ok) problems.push(`cohort ${cohort}: ${draws.length} draw(s) of this run could not be put on record: ${r.problem}`);
      }),
    ).finally(() => {
      writing = undefined;
      flush();
    });
  };
  return {
    recall(node, key, why) {
      if (!byNode.has(node.id)) return undefined;
      const f = firstOf(key);
      if (!f) return undefined;
      const restored = restorable(ctx, f.draw);
      const made = `cohort ${f.cohort} version ${f.version}, ${f.draw.at}`;
      if (restored)
        return {
          restore: restored,
          note: `its record was gone: draw ${f.draw.n} of this key (${made}) is restored from the cohort's record, not drawn again`,
        };
      if (why === 'corrupt') because.set(key, `the outputs of draw ${f.draw.n} (${made}) were found corrupt`);
      else if (options.redraw) because.set(key, `draw ${f.draw.n} (${made}) could not be restored (--redraw)`);
      else
        return {
          refuse:
            `${node.id} was drawn before under this key (${made}) and that draw cannot be restored from this store (its record or outputs are gone): ` +
            `drawing it again would let deleted records re-roll a verdict.\n` +
            `  restore the store from a copy (a CI cache, a backup, the remote cache) and run again;\n` +
            `  or draw again on record: pairbench run --redraw (the bundle lists every re-draw);\n` +
            `  or bump the cohort's \`version\` (the earlier version stays in the record)`,
        };
      return undefined;
    },
    event(e) {
      if (e.type !== 'done' || !e.recorded) return;
      const owners = byNode.get(e.node);
      if (!owners) return;
      const found = ctx.store.actions.get(e.key);
      if (found.status !== 'hit') return;
      const record = ctx.store.cas.putBytes(Buffer.from(canonicalJson(plainRecord(found.record) as unknown as Json)));
      // The first draws were read at this node's recall, before anything of this run was on record.
      const why = because.get(e.key) ?? (firstDraws?.has(e.key) ? 'drawn again' : undefined);
      const draw: DrawData = {
        node: e.node,
        key: e.key,
        record,
        outputs: found.record.outputs_digest,
        ...(why ? { because: why } : {}),
        ...(ctx.graph.byId.get(e.node)?.kind === runStep ? { attempt: true } : {}),
      };
      for (const c of owners) {
        const p = pending.get(c.name) ?? { version: c.version, draws: [] };
        p.draws.push(draw);
        pending.set(c.name, p);
      }
      flush();
    },
    async settled() {
      flush();
      while (writing) await writing;
      return problems;
    },
  };
}

/**
 * The nodes whose annotation tells the record (an export's freeze and history) and changed with
 * what this run recorded (a re-draw, an analysis another cohort made first): annotated again
 * here, so a second pass builds their bundle with it. Others keep theirs.
 */
export async function staleAnnotations(
  ctx: EngineContext,
  nodes: readonly GraphNode[],
  inputs: ReadonlyMap<string, ResolvedInput[]>,
  env: HostEnv,
): Promise<GraphNode[]> {
  const told = nodes.filter((n) => n.kind.annotate && withUpstream(n.upstream).some((u) => u.kind === analyzeStep));
  const before = new Map(told.map((n) => [n, canonicalJson((n.annotation ?? null) as Json)]));
  await annotateNodes(told, { env, store: ctx.store, inputs, configFile: ctx.config.configFile });
  return told.filter((n) => canonicalJson((n.annotation ?? null) as Json) !== before.get(n));
}

/**
 * A look at an outcome outside a run (`show` of an attempt, a verifier's verdict, an audit or an
 * analysis) goes on the record of every registered cohort version whose analysis reads that
 * node: looks before the first analysis make optional stopping visible in history and the bundle.
 */
export async function recordPeek(ctx: EngineContext, node: GraphNode, by: string): Promise<void> {
  if (!node.kind.draws && !node.kind.observes && node.kind !== auditStep) return;
  const registry = registryOf(ctx);
  for (const analysis of ctx.graph.nodes) {
    if (analysis.kind !== analyzeStep || (analysis !== node && !withUpstream(analysis.upstream).includes(node))) continue;
    const version = specOf(analysis.step, 'analyze').version ?? 1;
    await registry.append(analysis.step.name, (record) =>
      record.versions.some((v) => v.version === version) ? [{ type: 'peek', data: { version, node: node.id, by } }] : [],
    );
  }
}
