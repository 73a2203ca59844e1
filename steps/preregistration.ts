import { canonicalJson } from '../pipeline/canonical-json.js';
import { sha256 } from '../pipeline/digest.js';
import type { ResolvedInput } from '../pipeline/inputs.js';
import { withUpstream } from '../pipeline/dag.js';
import type { GraphNode, HostEnv } from '../pipeline/step-kind.js';
import { specOf } from './step-spec.js';

/**
 * Preregistration. A cohort is an analyze step; its frozen fields (what the seeds
 * say must not change after observing a run: prompts and allowed paths, repo
 * commits, verifier bytes, treatments, agent and model, image and resources,
 * caps, sample size and order, validity floor and analysis) hash to its freeze
 * digest. A version is bound to that digest at its first executed attempt; after
 * that, a change is refused until `version` is bumped. Every version stays in the
 * record with when it was frozen and what it had observed.
 */
export interface Freeze {
  digest: string;
  /** Field (in words) -> value or digest. */
  fields: Record<string, string>;
}

export interface VersionRecord {
  version: number;
  freeze_digest: string;
  fields: Record<string, string>;
  frozen_at: string;
  first_attempt_at: string | null;
  /** Keys of the attempts this version executed (to report reuse by later versions). */
  executed: string[];
  observed: { at: string; attempts: number; verdicts: Record<string, string> } | null;
}

export interface CohortRecord {
  cohort: string;
  versions: VersionRecord[];
}

const FROZEN_KINDS = new Set(['materialize', 'certify', 'run', 'verify', 'analyze', 'context', 'judge', 'gate']);

function digestOf(v: unknown): string {
  return sha256(canonicalJson(v)).slice(0, 12);
}

/** Everything upstream of the cohort's analyze node that the protocol freezes. */
export function computeFreeze(analyze: GraphNode, inputs: ReadonlyMap<string, ResolvedInput[]>, hostEnv: HostEnv): Freeze {
  const fields: Record<string, string> = {};
  const reps = new Map<string, number>();
  const gates: string[] = [];
  for (const n of withUpstream([analyze])) {
    if (!FROZEN_KINDS.has(n.kind.name)) continue;
    const cfg = n.kind.keyConfig(n, hostEnv) as Record<string, unknown>;
    const files = Object.fromEntries((inputs.get(n.id) ?? []).map((i) => [i.path, i.digest]));
    const task = n.matrix['task'];
    const arm = n.matrix['arm'];
    switch (n.kind.name) {
      case 'materialize':
        fields[`task ${task}: repo commit`] = String(cfg['commit']);
        fields[`task ${task}: starting tree (setup patch, redaction policy)`] = digestOf({ ...cfg, commit: undefined });
        break;
      case 'certify':
        fields[`task ${task}: certification policy`] = digestOf(cfg['policy']);
        break;
      case 'verify':
        fields[`task ${task}: verifier`] = digestOf({ cfg, files });
        break;
      case 'run': {
        const { task: t, arm: a, agent, limits, sandbox, model, ...rest } = cfg;
        fields[`task ${task}: prompt and allowed paths`] = digestOf(t);
        fields[`arm ${arm}: treatment`] = digestOf({ a, files });
        fields['agent (adapter, version, model, flags)'] = digestOf(agent);
        fields['limits (turns, wall time, tokens, cost)'] = canonicalJson(limits);
        fields['sandbox (backend, egress, image, resources)'] = digestOf(sandbox);
        fields['model upstream'] = digestOf({ model, rest });
        fields['attempt order seed'] = String(specOf(n.step, 'run').order_seed ?? 0);
        reps.set(`${task}/${arm}`, (reps.get(`${task}/${arm}`) ?? 0) + 1);
        break;
      }
      case 'context':
        fields[`context ${n.step.name}: generation prompt, repository and model`] = digestOf({ cfg, files });
        break;
      case 'judge':
        fields[`judge ${n.step.name}: rubric and model`] = digestOf({ cfg: { ...cfg, task: undefined }, files });
        break;
      case 'gate':
        fields[`stage gate ${n.step.name}`] = canonicalJson(cfg);
        gates.push(n.step.name);
        break;
      case 'analyze': {
        const { version: _v, ...spec } = specOf(n.step, 'analyze');
        fields['analysis (arms, metrics, weights, bootstrap, validity floor, thresholds)'] = digestOf({
          cfg,
          spec: { ...spec, needs: undefined, description: undefined },
        });
        break;
      }
    }
  }
  const sizes = [...new Set(reps.values())];
  fields['sample size (tasks x arms x reps)'] =
    `${new Set([...reps.keys()].map((k) => k.split('/')[0])).size} tasks x ${new Set([...reps.keys()].map((k) => k.split('/')[1])).size} arms x ${sizes.length === 1 ? sizes[0] : sizes.join('/')} reps`;
  const stopping = specOf(analyze.step, 'analyze').stopping;
  // Sequential stopping: the rule, and the families of each look in their preregistered order.
  fields['stopping rule'] = stopping
    ? `${stopping.rule} ${canonicalJson(stopping)}, looks over families ${digestOf((analyze.kind.keyConfig(analyze, hostEnv) as { spec: { stopping?: { schedule?: unknown } } }).spec.stopping?.schedule ?? null)}`
    : gates.length
      ? `fixed-N per stage, gated by ${gates.sort().join(', ')}`
      : 'fixed-N';
  return { digest: sha256(canonicalJson(fields)), fields };
}

/** The changed frozen fields, in words: `task t7: verifier 3f2a9c -> 9c1d04`. */
export function describeFreezeChange(before: Record<string, string>, after: Record<string, string>): string[] {
  const out: string[] = [];
  for (const k of [...new Set([...Object.keys(before), ...Object.keys(after)])].sort()) {
    if (before[k] === after[k]) continue;
    if (before[k] === undefined) out.push(`${k}: added (${after[k]})`);
    else if (after[k] === undefined) out.push(`${k}: removed (was ${before[k]})`);
    else out.push(`${k}: ${before[k]} -> ${after[k]}`);
  }
  return out;
}

/** Where cohort records live: the store's registry documents (read-modify-write under a lock). */
export interface RegistryStore {
  readDocument<T>(name: string): T | undefined;
  updateDocument<T>(name: string, change: (current: T | undefined) => T): Promise<T>;
}

/** The append-only record of a cohort's versions, in the store. */
export class Registry {
  constructor(private readonly store: RegistryStore) {}

  get(cohort: string): CohortRecord {
    return this.store.readDocument<CohortRecord>(cohort) ?? { cohort, versions: [] };
  }

  /** Changes a cohort's record under the registry lock: concurrent runs never lose an update. */
  update(cohort: string, change: (record: CohortRecord) => void): Promise<CohortRecord> {
    return this.store.updateDocument<CohortRecord>(cohort, (current) => {
      const record = current ?? { cohort, versions: [] };
      change(record);
      return record;
    });
  }
}

export type FreezeCheck =
  | { status: 'new' }
  | { status: 'same'; record: VersionRecord }
  | { status: 'changed-before-attempts'; record: VersionRecord; changes: string[] }
  | { status: 'refused'; record: VersionRecord; changes: string[] };

/** Whether `version` may run with this freeze. */
export function checkFreeze(record: CohortRecord, version: number, freeze: Freeze): FreezeCheck {
  const v = record.versions.find((x) => x.version === version);
  if (!v) return { status: 'new' };
  if (v.freeze_digest === freeze.digest) return { status: 'same', record: v };
  const changes = describeFreezeChange(v.fields, freeze.fields);
  return v.first_attempt_at ? { status: 'refused', record: v, changes } : { status: 'changed-before-attempts', record: v, changes };
}
