import { cohortsOf, type Cohort } from '../cohorts.js';
import { fail, type ProjectInvocation } from '../command.js';

/** The cohorts the operands name (all of them when none is named), or the error naming the unknown ones. */
export function chosenCohorts({ io, json, operands, project }: ProjectInvocation): { cohorts: Cohort[] } | { code: number } {
  const all = cohortsOf(project.graph.nodes, project.inputs, io.env);
  const missing = operands.filter((p) => !all.some((c) => c.name === p));
  if (missing.length)
    return {
      code: fail(
        io,
        json,
        missing.map((m) => ({ message: `no cohort "${m}" (a cohort is an analyze step; these are: ${all.map((c) => c.name).join(', ') || 'none'})` })),
      ),
    };
  return { cohorts: operands.length ? all.filter((c) => operands.includes(c.name)) : all };
}
