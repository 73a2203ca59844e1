import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { addAnnotation } from '../pipeline/annotate.js';
import type { AnnotationContext, GraphNode, HostEnv } from '../pipeline/step-kind.js';
import { baseImages } from '../sandboxes/dockerfile.js';
import { loadStepTask } from './agent-step-config.js';
import { anySpecOf } from './step-spec.js';
import { renderTemplate, stepTemplate } from './environment-template.js';
import type { StepConfig } from '../pipeline/config/load.js';

/**
 * Gives each environment node the IDs of the base images its Dockerfile (the task's own, or the
 * step's template rendered for the task) builds FROM, as
 * the engine has them now: they are part of its key, so a base image that moved is a new
 * key, never a silently stale image. Without an engine the names map to null (the node
 * fails with the reason when it runs).
 */
export async function annotateBaseImages(nodes: readonly GraphNode[], { env }: AnnotationContext): Promise<void> {
  const bases = new Map<GraphNode, string[]>();
  const templates = new Map<StepConfig, ReturnType<typeof stepTemplate>>();
  for (const node of nodes) {
    const task = loadStepTask(node.step, node.matrix['task'] ?? '');
    if (!task.ok) continue;
    let template = templates.get(node.step);
    if (!template) templates.set(node.step, (template = stepTemplate(node.step)));
    let dockerfile: string;
    if (template.ok && template.value && !task.value.environment) {
      const rendered = renderTemplate(template.value, task.value);
      if (!rendered.ok) continue; // the node says what is missing when it runs
      dockerfile = rendered.value;
    } else if (task.value.environment) {
      try {
        dockerfile = readFileSync(join(task.value.dir, 'environment', task.value.environment.dockerfile), 'utf8');
      } catch {
        continue; // the node says what is missing when it runs
      }
    } else continue;
    bases.set(node, baseImages(dockerfile));
  }
  const ids = await engineImageIds([...new Set([...bases.values()].flat())], env);
  for (const [node, list] of bases) addAnnotation(node, 'base_images', Object.fromEntries(list.map((n) => [n, ids.get(n) ?? null])));
}

/**
 * Resolves a per-task image template (`sandbox.image: sweb.eval.x86_64.{instance_id}`) to
 * each node's local image ID: the ID is part of the node's key (GraphNode.annotation) and
 * what the sandbox runs; a name the engine does not have maps to null, and the node fails
 * saying so.
 */
export async function annotateImageTemplates(nodes: readonly GraphNode[], { env }: AnnotationContext): Promise<void> {
  const named = new Map<GraphNode, string>();
  for (const node of nodes) {
    const spec = anySpecOf(node.step);
    const template = 'sandbox' in spec ? spec.sandbox?.image : undefined;
    if (!template || !template.includes('{') || node.matrix['task'] === undefined) continue;
    const task = template.includes('{image}') ? loadStepTask(node.step, node.matrix['task']) : undefined;
    named.set(node, imageName(template, node.matrix['task'], task?.ok ? task.value.image : undefined));
  }
  const ids = await engineImageIds([...new Set(named.values())], env);
  for (const [node, name] of named) addAnnotation(node, 'image', { name, id: ids.get(name) ?? null });
}

/** The image name a template gives a task: its id for {instance_id} / {task}, the instance's own `image` field for {image}. */
export function imageName(template: string, task: string, image?: string): string {
  return template
    .replaceAll('{instance_id}', task)
    .replaceAll('{task}', task)
    .replaceAll('{image}', image ?? `(instance ${task} has no image field)`);
}

/** Image IDs by name, as the engine DOCKER_HOST names has them now; the client is loaded only when some node names an image. */
async function engineImageIds(names: readonly string[], env: HostEnv): Promise<Map<string, string>> {
  if (!names.length) return new Map();
  const { stampedImageIds } = await import('../sandboxes/docker-client.js');
  return stampedImageIds(env, names);
}
