/**
 * The rules of Harbor's ATIF v1.7 models that a JSON Schema cannot state
 * (schemas/atif-v1.7.schema.json states the rest): steps numbered from 1 in order, fields only
 * agent steps carry, an observation's source_call_id naming a tool call of its step, no metrics
 * on a step that made no model call, ISO 8601 timestamps, and unique ids on embedded subagent
 * trajectories. Checked where a trajectory is written (the run step) and by the tests.
 */

/** Fields Harbor's Step validator allows only when source is "agent". */
const AGENT_ONLY = ['model_name', 'reasoning_effort', 'reasoning_content', 'tool_calls', 'metrics'] as const;

/** An ISO 8601 date-time, as pydantic's datetime reads one from JSON. */
const ISO_DATE_TIME = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$/;

interface Step {
  step_id: number;
  source: string;
  timestamp?: string | null;
  tool_calls?: { tool_call_id: string }[] | null;
  observation?: { results: { source_call_id?: string | null }[] } | null;
  metrics?: unknown;
  reasoning_content?: string | null;
  llm_call_count?: number | null;
  model_name?: unknown;
  reasoning_effort?: unknown;
}

interface Trajectory {
  trajectory_id?: string | null;
  steps: readonly Step[];
  subagent_trajectories?: readonly Trajectory[] | null;
}

/** Every cross-field problem of a trajectory that already has the schema's shape ([] = none). */
export function atifModelProblems(t: Trajectory, at = ''): string[] {
  const problems: string[] = [];
  t.steps.forEach((step, i) => {
    const where = `${at}/steps/${i}`;
    if (step.step_id !== i + 1) problems.push(`${where}/step_id is ${step.step_id}; steps are numbered from 1 in order (expected ${i + 1})`);
    if (step.source !== 'agent') {
      for (const f of AGENT_ONLY)
        if (step[f] !== undefined && step[f] !== null) problems.push(`${where}/${f} is set on a ${step.source} step; only agent steps carry it`);
    }
    if (step.timestamp != null && (!ISO_DATE_TIME.test(step.timestamp) || Number.isNaN(Date.parse(step.timestamp))))
      problems.push(`${where}/timestamp ${JSON.stringify(step.timestamp)} is not an ISO 8601 date-time`);
    if (step.llm_call_count === 0 && (step.metrics != null || step.reasoning_content != null)) {
      problems.push(`${where} has llm_call_count 0 but carries metrics or reasoning_content`);
    }
    const ids = new Set((step.tool_calls ?? []).map((c) => c.tool_call_id));
    for (const [j, r] of (step.observation?.results ?? []).entries()) {
      if (r.source_call_id != null && !ids.has(r.source_call_id)) {
        problems.push(`${where}/observation/results/${j}/source_call_id ${r.source_call_id} names no tool call of this step`);
      }
    }
  });
  const seen = new Set<string>();
  (t.subagent_trajectories ?? []).forEach((s, i) => {
    if (!s.trajectory_id) problems.push(`${at}/subagent_trajectories/${i} has no trajectory_id (required on embedded subagent trajectories)`);
    else if (seen.has(s.trajectory_id)) problems.push(`${at}/subagent_trajectories/${i}/trajectory_id ${s.trajectory_id} is not unique`);
    else seen.add(s.trajectory_id);
    problems.push(...atifModelProblems(s, `${at}/subagent_trajectories/${i}`));
  });
  return problems;
}
