import { addAnnotation } from '../pipeline/annotate.js';
import type { Json } from '../pipeline/canonical-json.js';
import { withUpstream } from '../pipeline/dag.js';
import { describeFreezeChange, freezeOf } from '../pipeline/freeze.js';
import type { AnnotationContext, GraphNode } from '../pipeline/step-kind.js';
import { analyzeStep } from './analyze-step.js';
import { peeksBefore, priorAnalyses, Registry, type FreezeAnnotation } from './preregistration.js';
import { specOf } from './step-spec.js';
import { basename } from 'node:path';
import { readLock, type LockRead } from './record-lock.js';

/**
 * Gives each export node the freeze of the cohort it exports and the cohort's record before
 * this version (earlier versions, their freezes, what each observed and which attempts each
 * executed), so its bundle and report tell the whole history. Part of the export node's key.
 */
export async function annotateExports(nodes: readonly GraphNode[], { inputs, env, store, configFile }: AnnotationContext): Promise<void> {
  const lock = configFile ? readLock(configFile) : undefined;
  const registry = new Registry(store);
  for (const node of nodes) {
    const named = specOf(node.step, 'export').cohort;
    const analyses = withUpstream(node.upstream).filter((n) => n.kind === analyzeStep);
    const analyze = analyses.find((n) => n.step.name === named) ?? analyses[0];
    if (!analyze) continue;
    const freeze = freezeOf(analyze, inputs, env);
    const version = specOf(analyze.step, 'analyze').version ?? 1;
    const read = registry.read(analyze.step.name);
    const versions = read.ok ? read.record.versions : [];
    // Earlier: every other version registered before this one first was (all of them while it is not yet).
    const own = versions.find((v) => v.version === version);
    const firstOwn = own ? (own.refrozen.length ? [own.frozen_at, ...own.refrozen.map((r) => r.at)].sort()[0]! : own.frozen_at) : undefined;
    const earlier = versions.filter((v) => v.version !== version && (!firstOwn || v.frozen_at <= firstOwn));
    const annotation: FreezeAnnotation = {
      cohort: analyze.step.name,
      version,
      freeze_digest: freeze.digest,
      fields: freeze.fields,
      history: {
        first_registration_in_store: earlier.length === 0,
        earlier: earlier.map((v, i) => ({
          version: v.version,
          freeze_digest: v.freeze_digest,
          frozen_at: v.frozen_at,
          bound_at: v.bound_at,
          changes_to_next: describeFreezeChange(v.fields, (earlier[i + 1] ?? { fields: freeze.fields }).fields),
          observations: v.observations,
          executed: v.executed,
        })),
        resets: read.ok ? read.record.resets : [],
        registry_problem: read.ok ? null : read.problem,
        redraws: (own?.draws ?? [])
          .filter((d) => d.n > 1)
          .map(({ at, node, key, n, because, attempt }) => ({ at, node, key, n, ...(because ? { because } : {}), ...(attempt ? { attempt } : {}) })),
        prior_analyses: own ? priorAnalyses(registry.all(), analyze.step.name, version) : [],
        anchor: anchorOf(lock, analyze.step.name),
        peeks: own ? peeksBefore(own) : [],
      },
    };
    addAnnotation(node, 'freeze', annotation as unknown as Json);
  }
}

/** The lock's anchor of a cohort, as the bundle names it (the file's name, not where it is on this machine). */
function anchorOf(lock: LockRead | undefined, cohort: string): FreezeAnnotation['history']['anchor'] {
  const c = lock?.ok ? lock.lock?.cohorts[cohort] : undefined;
  return c && lock?.ok ? { lock: basename(lock.path), version: c.version, entries: c.entries, head: c.head } : null;
}
