import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { baseImages } from '../sandboxes/dockerfile.js';
import { loadStepTask } from '../steps/agent-step-config.js';
import type { GraphNode, HostEnv } from '../pipeline/step-kind.js';
import { anySpecOf } from '../steps/step-spec.js';
import { environmentStep } from '../steps/environment.js';

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
