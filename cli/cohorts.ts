import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { EngineContext, NodeState } from '../pipeline/engine.js';
import { baseImages } from '../sandboxes/dockerfile.js';
import { loadStepTask } from '../steps/agent-step-config.js';
import type { ResolvedInput } from '../pipeline/inputs.js';
import { withUpstream } from '../pipeline/dag.js';
import type { GraphNode, HostEnv } from '../pipeline/step-kind.js';
import { checkFreeze, computeFreeze, Registry, type CohortRecord, type Freeze } from '../steps/preregistration.js';
import { anySpecOf, specOf } from '../steps/step-spec.js';
import { analyzeStep } from '../steps/analyze-step.js';
import { environmentStep } from '../steps/environment.js';
import { exportStep } from '../steps/export-step.js';
import { runStep } from '../steps/run.js';

/** A cohort: an analyze node, its version, and its attempts (the run nodes upstream of it). */
export interface Cohort {
  name: string;
  version: number;
  node: GraphNode;
  attempts: GraphNode[];
  freeze: Freeze;
}

export function cohortsOf(ctx: EngineContext, nodes: readonly GraphNode[], inputs: ReadonlyMap<string, ResolvedInput[]>, env: HostEnv): Cohort[] {
  return nodes
    .filter((n) => n.kind === analyzeStep)
    .map((node) => ({
      name: node.step.name,
      version: specOf(node.step, 'analyze').version ?? 1,
      node,
      attempts: withUpstream(node.upstream).filter((n) => n.kind === runStep),
      freeze: computeFreeze(node, inputs, env),
    }));
}

/**
 * Gives each export node the freeze record of the cohort it exports (name, version,
 * freeze digest, frozen fields), so its bundle and report carry the registered freeze
 * rather than a digest of the config file. Part of the export node's key.
 */
export function annotateExports(nodes: readonly GraphNode[], inputs: ReadonlyMap<string, ResolvedInput[]>, env: HostEnv): void {
  for (const node of nodes) {
    if (node.kind !== exportStep) continue;
    const named = specOf(node.step, 'export').cohort;
    const analyses = withUpstream(node.upstream).filter((n) => n.kind === analyzeStep);
    const analyze = analyses.find((n) => n.step.name === named) ?? analyses[0];
    if (!analyze) continue;
    const freeze = computeFreeze(analyze, inputs, env);
    node.annotation = {
      ...asObject(node.annotation),
      freeze: {
        cohort: analyze.step.name,
        version: specOf(analyze.step, 'analyze').version ?? 1,
        freeze_digest: freeze.digest,
        fields: freeze.fields,
      },
    };
  }
}

export function registryOf(ctx: EngineContext): Registry {
  return new Registry(ctx.store);
}

/**
 * Before a run: a version that has executed attempts must still have the same
 * frozen fields. Returns the refusals (in words) or registers what is new.
 */
export async function admitCohorts(ctx: EngineContext, cohorts: Cohort[], now = new Date()): Promise<{ refusals: string[]; notes: string[] }> {
  const registry = registryOf(ctx);
  const refusals: string[] = [];
  const notes: string[] = [];
  for (const c of cohorts) {
    // Judged and registered in one locked step: two runs starting together register once.
    await registry.update(c.name, (record) => {
      const check = checkFreeze(record, c.version, c.freeze);
      switch (check.status) {
        case 'refused':
          refusals.push(
            `cohort ${c.name} version ${c.version} is frozen (first attempt ${check.record.first_attempt_at}); these frozen fields changed:\n` +
              check.changes.map((x) => `  - ${x}`).join('\n') +
              `\n  bump \`version\` in steps.${c.name} to register a new version (version ${c.version} stays in the record; 'pairbench history ${c.name}' lists them)`,
          );
          break;
        case 'changed-before-attempts':
          Object.assign(check.record, { freeze_digest: c.freeze.digest, fields: c.freeze.fields, frozen_at: now.toISOString() });
          notes.push(`cohort ${c.name} version ${c.version} had no attempts yet: re-frozen (${check.changes.length} field(s) changed)`);
          break;
        case 'new':
          record.versions.push({
            version: c.version,
            freeze_digest: c.freeze.digest,
            fields: c.freeze.fields,
            frozen_at: now.toISOString(),
            first_attempt_at: null,
            executed: [],
            observed: null,
          });
          notes.push(`cohort ${c.name} version ${c.version} registered (freeze ${c.freeze.digest.slice(0, 12)})`);
          break;
        case 'same':
          break;
      }
    });
  }
  return { refusals, notes };
}

/**
 * The registry binds a cohort version when its first attempt starts, not when the run
 * ends: a run that crashes after some attempts has still bound its version. Call
 * `started` for every node the engine starts; `settled` waits for the registry writes.
 */
export function firstAttemptBinder(ctx: EngineContext, cohorts: readonly Cohort[]): { started(node: string, at: Date): void; settled(): Promise<void> } {
  const registry = registryOf(ctx);
  const byAttempt = new Map<string, Cohort[]>();
  for (const c of cohorts) for (const a of c.attempts) byAttempt.set(a.id, [...(byAttempt.get(a.id) ?? []), c]);
  const bound = new Set<string>();
  const writes: Promise<unknown>[] = [];
  return {
    started(node, at) {
      for (const c of byAttempt.get(node) ?? []) {
        if (bound.has(c.name)) continue;
        bound.add(c.name);
        writes.push(
          registry.update(c.name, (record) => {
            const v = record.versions.find((x) => x.version === c.version);
            if (v && !v.first_attempt_at) v.first_attempt_at = at.toISOString();
          }),
        );
      }
    },
    async settled() {
      await Promise.all(writes);
    },
  };
}

/** After a run: the first attempt binds the version; reused attempts are reported with the version that made them. */
export async function recordCohorts(ctx: EngineContext, cohorts: Cohort[], states: ReadonlyMap<string, NodeState>, now = new Date()): Promise<string[]> {
  const registry = registryOf(ctx);
  const lines: string[] = [];
  for (const c of cohorts) {
    const executed: string[] = [];
    const reached: string[] = [];
    let firstStart: string | undefined;
    let done = 0;
    for (const a of c.attempts) {
      const s = states.get(a.id);
      if (!s || (s.status !== 'executed' && s.status !== 'cached')) continue;
      done++;
      reached.push(s.record.key);
      if (s.status === 'executed') {
        executed.push(s.record.key);
        if (!firstStart || s.record.started_at < firstStart) firstStart = s.record.started_at;
      }
    }
    const analysis = states.get(c.node.id);
    let verdicts: Record<string, string> | null = null;
    if (analysis && (analysis.status === 'executed' || analysis.status === 'cached')) {
      const entry = analysis.record.outputs['analysis.json'];
      verdicts = {};
      if (entry) {
        const result = JSON.parse(ctx.store.cas.read(entry.digest).toString('utf8')) as {
          comparisons: { control: string; treatment: string; verdict: string }[];
        };
        for (const cmp of result.comparisons) verdicts[`${cmp.treatment} vs ${cmp.control}`] = cmp.verdict;
      }
    }
    const record = await registry.update(c.name, (record) => {
      const v = record.versions.find((x) => x.version === c.version);
      if (!v) return;
      if (executed.length && !v.first_attempt_at) v.first_attempt_at = firstStart ?? now.toISOString();
      v.executed = [...new Set([...v.executed, ...executed])];
      if (verdicts) v.observed = { at: now.toISOString(), attempts: done, verdicts };
    });
    // Every attempt a registered version executed stays in the store: gc keeps this root.
    ctx.store.setRoot(
      `cohort ${c.name}`,
      record.versions.flatMap((v) => v.executed),
      { kind: 'cohort', cohort: c.name },
    );
    const reusedBy = new Map<number, number>();
    for (const key of reached) {
      if (executed.includes(key)) continue;
      const first = record.versions.find((x) => x.executed.includes(key));
      if (first && first.version !== c.version) reusedBy.set(first.version, (reusedBy.get(first.version) ?? 0) + 1);
    }
    for (const [version, n] of reusedBy) lines.push(`cohort ${c.name} version ${c.version}: reused ${n} attempt(s) first produced by version ${version}`);
  }
  return lines;
}

export function historyLines(record: CohortRecord): string[] {
  if (!record.versions.length) return [`cohort ${record.cohort}: no version registered yet`];
  const lines = [`cohort ${record.cohort}`];
  for (const v of record.versions) {
    lines.push(
      `  version ${v.version}  freeze ${v.freeze_digest.slice(0, 12)}  frozen ${v.frozen_at}  first attempt ${v.first_attempt_at ?? '(none yet)'}  attempts executed ${v.executed.length}`,
    );
    if (v.observed)
      lines.push(
        `    observed at ${v.observed.at}: ${v.observed.attempts} attempts; ${
          Object.entries(v.observed.verdicts)
            .map(([k, x]) => `${k}: ${x}`)
            .join(', ') || 'no analysis yet'
        }`,
      );
  }
  return lines;
}

/**
 * Gives each environment node the IDs of the base images its Dockerfile builds FROM, as
 * the engine has them now (one `docker image inspect` for all): they are part of its key,
 * so a base image that moved is a new key, never a silently stale image. Without an
 * engine the names map to null (the node fails with the reason when it runs).
 */
export function annotateEnvironments(nodes: readonly GraphNode[], env: HostEnv): void {
  const targets = nodes.filter((n) => n.kind === environmentStep);
  if (!targets.length) return;
  const bases = new Map<GraphNode, string[]>();
  for (const node of targets) {
    const task = loadStepTask(node.step, node.matrix['task'] ?? '');
    if (!task.ok || !task.value.environment) continue;
    let dockerfile: string;
    try {
      dockerfile = readFileSync(join(task.value.dir, 'environment', task.value.environment.dockerfile), 'utf8');
    } catch {
      continue; // the node says what is missing when it runs
    }
    bases.set(node, baseImages(dockerfile));
  }
  const ids = inspectImages([...new Set([...bases.values()].flat())], env);
  for (const [node, list] of bases)
    node.annotation = { ...asObject(node.annotation), base_images: Object.fromEntries(list.map((n) => [n, ids.get(n) ?? null])) };
}

/**
 * Resolves a per-task image template (`sandbox.image: sweb.eval.x86_64.{instance_id}`) to
 * each node's local image ID, with one `docker image inspect` for all of them: the ID is
 * part of the node's key (GraphNode.annotation) and what the sandbox runs; a name the
 * engine does not have maps to null, and the node fails saying so.
 */
export function annotateImageTemplates(nodes: readonly GraphNode[], env: HostEnv): void {
  const named = new Map<GraphNode, string>();
  for (const node of nodes) {
    const spec = anySpecOf(node.step);
    const template = 'sandbox' in spec ? spec.sandbox?.image : undefined;
    if (!template || !template.includes('{') || node.matrix['task'] === undefined) continue;
    const task = template.includes('{image}') ? loadStepTask(node.step, node.matrix['task']) : undefined;
    named.set(node, imageName(template, node.matrix['task'], task?.ok ? task.value.image : undefined));
  }
  const ids = inspectImages([...new Set(named.values())], env);
  for (const [node, name] of named) node.annotation = { ...asObject(node.annotation), image: { name, id: ids.get(name) ?? null } };
}

/** The image name a template gives a task: its id for {instance_id} / {task}, the instance's own `image` field for {image}. */
export function imageName(template: string, task: string, image?: string): string {
  return template
    .replaceAll('{instance_id}', task)
    .replaceAll('{task}', task)
    .replaceAll('{image}', image ?? `(instance ${task} has no image field)`);
}

/** Image IDs by name, as the engine has them now (names it lacks are absent). */
function inspectImages(names: readonly string[], env: HostEnv): Map<string, string> {
  const ids = new Map<string, string>();
  if (!names.length) return ids;
  const denv = { PATH: env['PATH'] ?? '/usr/bin:/bin', ...(env['DOCKER_HOST'] ? { DOCKER_HOST: env['DOCKER_HOST'] } : {}) };
  const all = spawnSync('docker', ['image', 'inspect', '--format', '{{.Id}}', ...names], { encoding: 'utf8', env: denv, timeout: 60_000 });
  const lines = (all.stdout ?? '').trim().split('\n');
  if (all.status === 0 && lines.length === names.length) names.forEach((n, i) => ids.set(n, lines[i]!));
  else {
    // Some name is missing: ask one by one (the rest still resolve).
    for (const n of names) {
      const one = spawnSync('docker', ['image', 'inspect', '--format', '{{.Id}}', n], { encoding: 'utf8', env: denv, timeout: 30_000 });
      if (one.status === 0) ids.set(n, one.stdout.trim());
    }
  }
  return ids;
}

function asObject(a: unknown): Record<string, unknown> {
  return a && typeof a === 'object' && !Array.isArray(a) ? (a as Record<string, unknown>) : {};
}
