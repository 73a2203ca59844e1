/**
 * An environment step's Dockerfile template (`template:`), for tasks that bring no Dockerfile
 * of their own (SWE-bench records): `{{name}}` placeholders filled from the instance's
 * environment fields and the step's `base_image`. Only those names exist, so a template cannot
 * put an instance's answer (its gold patch, hidden tests) into the image an agent runs in.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Diagnostic } from '../pipeline/diagnostic.js';
import { err, errorMessage, ok, type Result } from '../pipeline/result.js';
import type { StepConfig } from '../pipeline/config/load.js';
import { specOf } from './step-spec.js';
import type { Task } from './task.js';
import { ENVIRONMENT_FIELDS } from './task-sources/swebench.js';

const PLACEHOLDER = /\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g;
/** Every name a template may use. */
export const TEMPLATE_NAMES: readonly string[] = ['base_image', ...ENVIRONMENT_FIELDS];

export interface EnvironmentTemplate {
  /** As written in the config, relative to it (the file input). */
  path: string;
  text: string;
  baseImage: string | null;
}

/**
 * The step's template, when it has one: read (or `staged`, the bytes its node's key holds), and
 * its placeholders checked (each unknown one named at its line).
 */
export function stepTemplate(step: StepConfig, staged?: string): Result<EnvironmentTemplate | null, Diagnostic[]> {
  const spec = specOf(step, 'environment');
  if (!spec.template) return ok(null);
  const field = `steps.${step.name}.template`;
  const location = step.source.locate([...step.path, 'template']);
  let text: string;
  try {
    text = staged ?? readFileSync(resolve(step.rootDir, spec.template), 'utf8');
  } catch (e) {
    return err([{ field, location, message: `cannot read the Dockerfile template ${spec.template}: ${errorMessage(e)}` }]);
  }
  const problems: Diagnostic[] = [];
  text.split('\n').forEach((line, i) => {
    for (const m of line.matchAll(PLACEHOLDER)) {
      const name = m[1]!;
      if (!TEMPLATE_NAMES.includes(name))
        problems.push({
          field,
          location,
          message: `${spec.template}:${i + 1}: {{${name}}} is not a name a template may use`,
          hint: `use one of ${TEMPLATE_NAMES.map((n) => `{{${n}}}`).join(', ')}`,
        });
      else if (name === 'base_image' && !spec.base_image)
        problems.push({
          field,
          location,
          message: `${spec.template}:${i + 1}: {{base_image}} is used, but the step sets no base_image`,
          hint: 'set base_image: the image (in the local engine) to build over',
        });
    }
  });
  return problems.length ? err(problems) : ok({ path: spec.template, text, baseImage: spec.base_image ?? null });
}

/** The Dockerfile a template gives a task, or why it cannot (a field the instance lacks). */
export function renderTemplate(template: EnvironmentTemplate, task: Task): Result<string, string> {
  const values: Record<string, string | undefined> = { ...task.environmentFields, base_image: template.baseImage ?? undefined };
  const missing = new Set<string>();
  const text = template.text.replace(PLACEHOLDER, (_, name: string) => values[name] ?? (missing.add(name), ''));
  return missing.size
    ? err(
        `task ${task.id}: the Dockerfile template ${template.path} uses ${[...missing].map((n) => `{{${n}}}`).join(', ')}, which ${task.origin} does not give`,
      )
    : ok(text);
}
