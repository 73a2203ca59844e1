import type { Json } from '../pipeline/canonical-json.js';
import { describeFreezeChange, type Freeze } from '../pipeline/freeze.js';
import type { ChainEntry, ChainRead, NewEntry } from '../pipeline/store/chained-log.js';
import type { Store } from '../pipeline/store/store.js';

/**
 * Preregistration. A cohort is an analyze step; its freeze (pipeline/freeze.ts) is derived
 * from the graph upstream of it. A version is bound to its freeze at its first observation (an
 * attempt executed, or an analysis, look, gate or export produced or reused); after that a
 * change is refused until `version` is bumped. The record is a hash-chained, append-only log
 * per cohort in the store (every registration and every observation kept); each record an
 * attempt or an observation leaves names the registration it was made under, so a registry
 * that was moved, cut short or rewritten is found from the store itself.
 */

/** How freezes are computed; a version frozen in another format cannot be compared with this one. */
export const FREEZE_FORMAT = 2;

export interface Observation {
  at: string;
  /** The node that observed (the analysis, a look, a gate, an export). */
  by: string;
  /** What it is, in a word (its kind's title: "paired analysis", "bundle", ...). */
  what?: string;
  /** Digest of what it produced (its outputs), null when it produced nothing to read. */
  digest: string | null;
  attempts: number;
  /** Comparison -> verdict. */
  verdicts: Record<string, string>;
  /** How many of the attempts each earlier version had executed (reused here). */
  reused: Record<string, number>;
  /** A gate's decision. */
  gate?: { pass: boolean; because: string };
  /** Attempts that ran under a new key with an unchanged freeze (an upstream produced different bytes). */
  reran?: number;
  /** Attempts drawn again under a key already drawn (their first draw's record was lost). */
  redrawn?: number;
}

/**
 * One execution of a node whose outcome is a random draw (StepKind.draws: an agent attempt, a
 * verifier run): every one is on record, in order. The analysis uses each key's first draw (a
 * later run restores it from `record`); a later draw is a re-draw, reported, never substituted
 * unless the first could not be restored.
 */
export interface Draw {
  at: string;
  node: string;
  key: string;
  /** Digest of the stored action record of this draw (what restores it), null when not kept. */
  record: string | null;
  /** Digest of its outputs. */
  outputs: string;
  /** 1 for the first draw of this key in this cohort's record, 2 for the next, ... */
  n: number;
  /** Why a later draw was made (the first draw's record was lost, or corrupt). */
  because?: string;
  /** One of the cohort's agent attempts (not a verifier's or a judge's draw). */
  attempt?: boolean;
}

/** A look at an outcome outside a run: which node, by what, when. */
export interface Peek {
  at: string;
  node: string;
  by: string;
}

/** A draw as an entry carries it (the fold numbers them). */
export type DrawData = Omit<Draw, 'at' | 'n'>;

export interface VersionRecord {
  version: number;
  freeze_digest: string;
  fields: Record<string, string>;
  format: number;
  frozen_at: string;
  /** Hash of the registry entry that registered the freeze in force. */
  registration: string;
  /** Every registration of this version (re-frozen before its first observation). */
  registrations: string[];
  refrozen: { at: string; changes: string[] }[];
  bound_at: string | null;
  /** What bound it ("attempt run/...", "observation analyze/..."). */
  bound_by: string | null;
  /** Keys of the attempts this version executed (its attempt draws, each once). */
  executed: string[];
  /** Every draw made under this version, in order (first draws and re-draws). */
  draws: Draw[];
  /** Keys of the attempts its analyses read (reused ones too): what another cohort's earlier analysis may have seen. */
  analysed: string[];
  /** Outcomes looked at outside a run (`show` of an attempt, a verdict, an audit): each look, in order. */
  peeks: Peek[];
  observations: Observation[];
}

export interface ResetRecord {
  at: string;
  entry: string;
  orphans: { version: number; registration: string; records: number }[];
}

export interface CohortRecord {
  cohort: string;
  versions: VersionRecord[];
  /** Registry resets the user acknowledged (stored records named entries the registry had lost). */
  resets: ResetRecord[];
  /** The registry entries, verified: how many, and the hash of the last. */
  entries: number;
  head: string | null;
  /** Versions carried over from a registry document written before the log (their freeze is of an older format). */
  imported: boolean;
}

/** The entries of a cohort's log, as written. */
export type CohortEntry =
  | { type: 'register'; data: { version: number; freeze_digest: string; fields: Record<string, string>; format: number } }
  | { type: 'bind'; data: { version: number; by: string } }
  | { type: 'executed'; data: { version: number; keys: string[] } }
  | { type: 'draw'; data: { version: number; draws: DrawData[] } }
  | { type: 'observe'; data: { version: number; keys?: string[] } & Omit<Observation, 'at'> }
  | { type: 'peek'; data: { version: number; node: string; by: string } }
  | { type: 'acknowledge-reset'; data: { orphans: ResetRecord['orphans'] } }
  | { type: 'import'; data: { versions: LegacyVersion[] } };

/** A version as the registry document before the log kept it (registry/<cohort>.json). */
interface LegacyVersion {
  version: number;
  freeze_digest: string;
  fields: Record<string, string>;
  frozen_at: string;
  first_attempt_at: string | null;
  executed: string[];
  observed: { at: string; attempts: number; verdicts: Record<string, string> } | null;
}

function emptyRecord(cohort: string): CohortRecord {
  return { cohort, versions: [], resets: [], entries: 0, head: null, imported: false };
}

/** A version as registered: nothing bound, drawn, analysed, peeked at or observed unless given. */
function versionRecord(
  v: Pick<VersionRecord, 'version' | 'freeze_digest' | 'fields' | 'format' | 'frozen_at' | 'registration'> & Partial<VersionRecord>,
): VersionRecord {
  // In the order the log's readers have always seen its fields.
  return {
    version: v.version,
    freeze_digest: v.freeze_digest,
    fields: v.fields,
    format: v.format,
    frozen_at: v.frozen_at,
    registration: v.registration,
    registrations: v.registrations ?? [v.registration],
    refrozen: v.refrozen ?? [],
    bound_at: v.bound_at ?? null,
    bound_by: v.bound_by ?? null,
    executed: v.executed ?? [],
    draws: v.draws ?? [],
    analysed: v.analysed ?? [],
    peeks: v.peeks ?? [],
    observations: v.observations ?? [],
  };
}

/** A version recorded before the log (imported whole): its attempts each a first draw, its observation if any. */
function legacyVersion(l: LegacyVersion, registration: string): VersionRecord {
  return versionRecord({
    version: l.version,
    freeze_digest: l.freeze_digest,
    fields: l.fields,
    format: 1,
    frozen_at: l.frozen_at,
    registration,
    bound_at: l.first_attempt_at,
    bound_by: l.first_attempt_at ? 'first attempt (recorded before the log)' : null,
    draws: l.executed.map((key) => ({ at: l.first_attempt_at ?? l.frozen_at, node: '', key, record: null, outputs: '', n: 1, attempt: true })),
    observations: l.observed
      ? [{ at: l.observed.at, by: '(recorded before the log)', digest: null, attempts: l.observed.attempts, verdicts: l.observed.verdicts, reused: {} }]
      : [],
  });
}

/** The cohort's record, from its verified log. */
export function foldRecord(cohort: string, entries: readonly ChainEntry[]): CohortRecord {
  const r = emptyRecord(cohort);
  const find = (v: number) => r.versions.find((x) => x.version === v);
  /** Draws of each key so far, across versions. */
  const drawn = new Map<string, number>();
  for (const raw of entries) {
    const e = raw as unknown as CohortEntry & { at: string; hash: string };
    switch (e.type) {
      case 'register': {
        const v = find(e.data.version);
        if (v) {
          v.refrozen.push({ at: raw.at, changes: describeFreezeChange(v.fields, e.data.fields) });
          Object.assign(v, { freeze_digest: e.data.freeze_digest, fields: e.data.fields, format: e.data.format, frozen_at: raw.at, registration: raw.hash });
          v.registrations.push(raw.hash);
        } else
          r.versions.push(
            versionRecord({
              version: e.data.version,
              freeze_digest: e.data.freeze_digest,
              fields: e.data.fields,
              format: e.data.format,
              frozen_at: raw.at,
              registration: raw.hash,
            }),
          );
        break;
      }
      case 'bind': {
        const v = find(e.data.version);
        if (v && !v.bound_at) Object.assign(v, { bound_at: raw.at, bound_by: e.data.by });
        break;
      }
      case 'executed': {
        // Written before draws were: each key a first draw whose record was not kept.
        const v = find(e.data.version);
        if (!v) break;
        for (const key of e.data.keys)
          if (!drawn.has(key)) {
            drawn.set(key, 1);
            v.draws.push({ at: raw.at, node: '', key, record: null, outputs: '', n: 1, attempt: true });
          }
        break;
      }
      case 'draw': {
        const v = find(e.data.version);
        if (!v) break;
        for (const d of e.data.draws) {
          drawn.set(d.key, (drawn.get(d.key) ?? 0) + 1);
          v.draws.push({ at: raw.at, ...d, n: drawn.get(d.key)! });
        }
        break;
      }
      case 'observe': {
        const { version, keys, ...o } = e.data;
        const v = find(version);
        if (!v) break;
        v.observations.push({ at: raw.at, ...o });
        if (keys) v.analysed = [...new Set([...v.analysed, ...keys])];
        break;
      }
      case 'peek': {
        const v = find(e.data.version);
        if (v) v.peeks.push({ at: raw.at, node: e.data.node, by: e.data.by });
        break;
      }
      case 'acknowledge-reset':
        r.resets.push({ at: raw.at, entry: raw.hash, orphans: e.data.orphans });
        break;
      case 'import':
        r.imported = true;
        for (const l of e.data.versions) {
          for (const key of l.executed) drawn.set(key, 1);
          r.versions.push(legacyVersion(l, raw.hash));
        }
        break;
      default:
        break; // an entry a later pairbench wrote: not read here
    }
  }
  // What each version executed: its agent attempts' keys, from its draws.
  for (const v of r.versions) v.executed = [...new Set(v.draws.filter((d) => d.attempt).map((d) => d.key))];
  r.entries = entries.length;
  r.head = entries[entries.length - 1]?.hash ?? null;
  return r;
}

/** The registry of every cohort in a store: one verified log per cohort. */
export class Registry {
  constructor(private readonly store: Store) {}

  /** Where the cohort's log is (for messages). */
  pathOf(cohort: string): string {
    return this.store.logs.pathOf(cohort);
  }

  /** The cohort's record; a log whose chain is broken is a problem, in words. */
  read(cohort: string): { ok: true; record: CohortRecord } | { ok: false; problem: string } {
    const r = this.store.logs.read(cohort);
    if (!r.ok) return { ok: false, problem: r.problem };
    if (!r.entries.length) {
      const legacy = this.legacy(cohort);
      if (legacy) return { ok: true, record: foldRecord(cohort, [importEntry(legacy)]) };
    }
    return { ok: true, record: foldRecord(cohort, r.entries) };
  }

  /** Every cohort's record that can be read (for what one cohort's record says of another's). */
  all(): CohortRecord[] {
    return this.store.logs.names().flatMap((name) => {
      const r = this.read(name);
      return r.ok ? [r.record] : [];
    });
  }

  /** The record, or an empty one when the log cannot be read (for views that only show it). */
  get(cohort: string): CohortRecord {
    const r = this.read(cohort);
    return r.ok ? r.record : emptyRecord(cohort);
  }

  /** Appends what `make` decides on the current record, under the log's lock. */
  async append(cohort: string, make: (record: CohortRecord) => CohortEntry[]): Promise<{ ok: true; record: CohortRecord } | { ok: false; problem: string }> {
    const legacy = this.store.logs.exists(cohort) ? undefined : this.legacy(cohort);
    const r: ChainRead = await this.store.logs.append(cohort, (entries) => {
      const before = entries.length ? [] : legacy ? [importEntry(legacy)] : [];
      const record = foldRecord(cohort, [...entries, ...before]);
      const fresh = make(record);
      return fresh.length ? [...before.map(({ type, data }) => ({ type, data })), ...(fresh as unknown as NewEntry[])] : [];
    });
    return r.ok ? { ok: true, record: foldRecord(cohort, r.entries) } : { ok: false, problem: r.problem };
  }

  private legacy(cohort: string): LegacyVersion[] | undefined {
    try {
      return this.store.readDocument<{ versions: LegacyVersion[] }>(cohort)?.versions;
    } catch {
      return undefined;
    }
  }
}

/** A legacy document as the log's first entry (not yet written: the first append writes it). */
function importEntry(versions: LegacyVersion[]): ChainEntry {
  return {
    seq: 1,
    at: versions[0]?.frozen_at ?? new Date(0).toISOString(),
    prev: null,
    type: 'import',
    data: { versions } as unknown as Json,
    hash: 'import' as ChainEntry['hash'],
  };
}

export type FreezeCheck =
  | { status: 'new' }
  | { status: 'same'; record: VersionRecord }
  | { status: 'changed-before-binding'; record: VersionRecord; changes: string[] }
  | { status: 'refused'; record: VersionRecord; changes: string[] };

/**
 * Whether `version` may run with this freeze. `boundByRecords`: the store holds records made
 * under this version (so it was bound, whatever the log says).
 */
export function checkFreeze(record: CohortRecord, version: number, freeze: Freeze, boundByRecords = false): FreezeCheck {
  const v = record.versions.find((x) => x.version === version);
  if (!v) return { status: 'new' };
  if (v.freeze_digest === freeze.digest && v.format === FREEZE_FORMAT) return { status: 'same', record: v };
  const changes =
    v.format !== FREEZE_FORMAT
      ? [`its freeze was recorded by an earlier pairbench (freeze format ${v.format}, now ${FREEZE_FORMAT}) and cannot be compared with this one`]
      : describeFreezeChange(v.fields, freeze.fields);
  if (!changes.length)
    changes.push(`the graph's wiring changed (no frozen field differs): freeze ${v.freeze_digest.slice(0, 12)} -> ${freeze.digest.slice(0, 12)}`);
  return v.bound_at || boundByRecords ? { status: 'refused', record: v, changes } : { status: 'changed-before-binding', record: v, changes };
}

/** `pairbench history`: every version, every observation. */
export function historyLines(record: CohortRecord): string[] {
  if (!record.versions.length) return [`cohort ${record.cohort}: no version registered yet`];
  const lines = [`cohort ${record.cohort}`];
  for (const v of record.versions) {
    lines.push(
      `  version ${v.version}  freeze ${v.freeze_digest.slice(0, 12)}  frozen ${v.frozen_at}  bound ${v.bound_at ? `${v.bound_at} by ${v.bound_by}` : '(not yet)'}  attempts executed ${v.executed.length}`,
    );
    for (const r of v.refrozen) lines.push(`    re-frozen at ${r.at} before any observation: ${r.changes.length} field(s) changed`);
    for (const d of v.draws.filter((x) => x.n > 1)) lines.push(`    ${redrawWords(d)}`);
    for (const p of peeksBefore(v)) lines.push(`    peeked at ${p.at}: ${p.by} ${p.node} (before the version's first analysis)`);
    if (!v.observations.length) lines.push('    no observation yet');
    for (const o of v.observations) lines.push(`    observed at ${o.at} by ${o.by}: ${observationWords(o)}`);
  }
  for (const r of record.resets)
    lines.push(
      `  registry reset acknowledged at ${r.at}: ${r.orphans.map((o) => `${o.records} record(s) of version ${o.version} (entry ${o.registration.slice(0, 12)})`).join(', ')} predate this log`,
    );
  lines.push(
    `  registry: ${record.entries} entries${record.head ? `, head ${record.head.slice(0, 12)}` : ''}${record.imported ? ' (the first carried over from a registry written before the log)' : ''}`,
  );
  return lines;
}

/** An observation in words. */
export function observationWords(o: Observation): string {
  const parts: string[] = [];
  if (o.gate) parts.push(`gate ${o.gate.pass ? 'open' : 'closed'}: ${o.gate.because}`);
  else {
    const verdicts = Object.entries(o.verdicts).map(([k, x]) => `${k}: ${x}`);
    parts.push(`${o.what && !verdicts.length ? `${o.what} of ` : ''}${o.attempts} attempts`);
    if (verdicts.length) parts.push(verdicts.join(', '));
  }
  const reused = Object.entries(o.reused).map(([v, n]) => `${n} reused from version ${v}`);
  if (reused.length) parts.push(reused.join(', '));
  if (o.redrawn) parts.push(`${o.redrawn} re-drawn (an attempt's first draw was lost and it ran again: see its draws)`);
  if (o.reran) parts.push(`${o.reran} attempt(s) ran under a new key with the same freeze (an upstream produced different bytes)`);
  return parts.join('; ');
}

/** The looks at outcomes made before the version's first observation (all of them while it has none). */
export function peeksBefore(v: Pick<VersionRecord, 'peeks' | 'observations'>): Peek[] {
  const first = v.observations[0]?.at;
  return v.peeks.filter((p) => !first || p.at < first);
}

/** A later draw in words: "re-draw 2 of run/t1/ctx/1 at T: its first draw's record was lost". */
export function redrawWords(d: Pick<Draw, 'n' | 'node' | 'key' | 'at' | 'because'>): string {
  return `re-draw: draw ${d.n} of ${d.node || d.key.slice(0, 19)} at ${d.at}${d.because ? `: ${d.because}` : ''}`;
}

/** Another cohort's analysis that read some of this version's attempts before this version was registered. */
export interface PriorAnalysis {
  cohort: string;
  version: number;
  at: string;
  /** How many of this version's analysed attempts it read, how many it read in all, and how many this version read. */
  shared: number;
  of: number;
  total: number;
  verdicts: Record<string, string>;
}

/** A prior analysis in words: "11 of these attempts were analysed first by cohort wide version 1 (50 attempts, at T: ...)". */
export function priorAnalysisWords(p: PriorAnalysis): string {
  const verdicts = Object.entries(p.verdicts).map(([k, v]) => `${k}: ${v}`);
  return (
    `${p.shared} of these ${p.total} attempts were analysed before, by cohort ${p.cohort} version ${p.version} at ${p.at} (an analysis of ${p.of}` +
    `${verdicts.length ? `; ${verdicts.join(', ')}` : ''}): this cohort may have been chosen after seeing them`
  );
}

/**
 * Analyses by other cohorts (any version) that read attempts this version analysed, made before
 * this version was registered (its freeze as it is): a selection chosen after a look.
 */
export function priorAnalyses(records: readonly CohortRecord[], cohort: string, version: number): PriorAnalysis[] {
  const own = records.find((r) => r.cohort === cohort)?.versions.find((v) => v.version === version);
  if (!own?.analysed.length) return [];
  const mine = new Set(own.analysed);
  // Chosen after a look: registered (or re-frozen) after the other analysis was made. Two cohorts
  // registered before either analysed (analyses of one run) looked at nothing first.
  const since = own.frozen_at;
  const out: PriorAnalysis[] = [];
  for (const r of records) {
    if (r.cohort === cohort) continue;
    for (const v of r.versions) {
      const shared = v.analysed.filter((k) => mine.has(k)).length;
      const first = v.observations.find((o) => Object.keys(o.verdicts).length);
      if (!shared || !first || first.at >= since) continue;
      out.push({ cohort: r.cohort, version: v.version, at: first.at, shared, of: v.analysed.length, total: own.analysed.length, verdicts: first.verdicts });
    }
  }
  return out;
}

/** What an export node carries of its cohort's record: the freeze and the history before this version (part of its key). */
export interface FreezeAnnotation {
  cohort: string;
  version: number;
  freeze_digest: string;
  fields: Record<string, string>;
  history: {
    /** No earlier version of this cohort in this store (another store may hold one). */
    first_registration_in_store: boolean;
    earlier: {
      version: number;
      freeze_digest: string;
      frozen_at: string;
      bound_at: string | null;
      /** What changed from it to the version after it. */
      changes_to_next: string[];
      observations: Observation[];
      executed: string[];
    }[];
    resets: ResetRecord[];
    registry_problem: string | null;
    /** This version's later draws (each key's first draw is the one analysed). */
    redraws: Omit<Draw, 'record' | 'outputs'>[];
    /** Other cohorts' analyses of some of these attempts, made before this version was registered. */
    prior_analyses: PriorAnalysis[];
    /** Outcomes looked at outside a run before this version's first analysis (optional stopping is visible). */
    peeks: Peek[];
    /** The committed lock that anchors this cohort's record outside the store, when there is one (its file name, entries and head). */
    anchor: { lock: string; version: number; entries: number; head: string } | null;
  };
}
