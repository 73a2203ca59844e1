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
  /** Attempts that re-ran with an unchanged freeze (an upstream produced different bytes). */
  reran?: number;
}

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
  /** Keys of the attempts this version executed. */
  executed: string[];
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
  | { type: 'observe'; data: { version: number } & Omit<Observation, 'at'> }
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

/** The cohort's record, from its verified log. */
export function foldRecord(cohort: string, entries: readonly ChainEntry[]): CohortRecord {
  const r = emptyRecord(cohort);
  const find = (v: number) => r.versions.find((x) => x.version === v);
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
          r.versions.push({
            version: e.data.version,
            freeze_digest: e.data.freeze_digest,
            fields: e.data.fields,
            format: e.data.format,
            frozen_at: raw.at,
            registration: raw.hash,
            registrations: [raw.hash],
            refrozen: [],
            bound_at: null,
            bound_by: null,
            executed: [],
            observations: [],
          });
        break;
      }
      case 'bind': {
        const v = find(e.data.version);
        if (v && !v.bound_at) Object.assign(v, { bound_at: raw.at, bound_by: e.data.by });
        break;
      }
      case 'executed': {
        const v = find(e.data.version);
        if (v) v.executed = [...new Set([...v.executed, ...e.data.keys])];
        break;
      }
      case 'observe': {
        const { version, ...o } = e.data;
        const v = find(version);
        if (v) v.observations.push({ at: raw.at, ...o });
        break;
      }
      case 'acknowledge-reset':
        r.resets.push({ at: raw.at, entry: raw.hash, orphans: e.data.orphans });
        break;
      case 'import':
        r.imported = true;
        for (const l of e.data.versions)
          r.versions.push({
            version: l.version,
            freeze_digest: l.freeze_digest,
            fields: l.fields,
            format: 1,
            frozen_at: l.frozen_at,
            registration: raw.hash,
            registrations: [raw.hash],
            refrozen: [],
            bound_at: l.first_attempt_at,
            bound_by: l.first_attempt_at ? 'first attempt (recorded before the log)' : null,
            executed: l.executed,
            observations: l.observed
              ? [{ at: l.observed.at, by: '(recorded before the log)', digest: null, attempts: l.observed.attempts, verdicts: l.observed.verdicts, reused: {} }]
              : [],
          });
        break;
      default:
        break; // an entry a later pairbench wrote: not read here
    }
  }
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
  if (o.reran) parts.push(`${o.reran} attempt(s) re-ran with the same freeze (an upstream produced different bytes)`);
  return parts.join('; ');
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
  };
}
