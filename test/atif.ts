/**
 * Test helper: validates a trajectory against ATIF v1.7 as Harbor's pydantic models define
 * it: schemas/atif-v1.7.schema.json (every model, every field, extra fields forbidden) plus
 * the models' validators JSON Schema cannot say. Returns every problem found ([] = valid).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv, type ValidateFunction } from 'ajv';

let validate: ValidateFunction | undefined;

function schemaValidator(): ValidateFunction {
  if (!validate) {
    const ajv = new Ajv({ allErrors: true, strict: true, strictRequired: false, allowUnionTypes: true });
    validate = ajv.compile(JSON.parse(readFileSync(join(import.meta.dirname, '..', 'schemas', 'atif-v1.7.schema.json'), 'utf8')));
  }
  return validate;
}

/** Fields Harbor's Step validator allows only when source is "agent". */
const AGENT_ONLY = ['model_name', 'reasoning_effort', 'reasoning_content', 'tool_calls', 'metrics'] as const;

interface Step {
  step_id: number;
  source: string;
  tool_calls?: { tool_call_id: string }[] | null;
  observation?: { results: { source_call_id?: string | null }[] } | null;
  metrics?: unknown;
  reasoning_content?: string | null;
  llm_call_count?: number | null;
  [k: string]: unknown;
}

interface Trajectory {
  trajectory_id?: string | null;
  steps: Step[];
  subagent_trajectories?: Trajectory[] | null;
}

export function atifProblems(trajectory: unknown): string[] {
  const v = schemaValidator();
  if (!v(trajectory)) return (v.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message ?? 'is invalid'}`);
  return modelRules(trajectory as Trajectory, '');
}

function modelRules(t: Trajectory, at: string): string[] {
  const problems: string[] = [];
  t.steps.forEach((step, i) => {
    const where = `${at}/steps/${i}`;
    if (step.step_id !== i + 1) problems.push(`${where}/step_id is ${step.step_id}; steps are numbered from 1 in order (expected ${i + 1})`);
    if (step.source !== 'agent') {
      for (const f of AGENT_ONLY)
        if (step[f] !== undefined && step[f] !== null) problems.push(`${where}/${f} is set on a ${step.source} step; only agent steps carry it`);
    }
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
  const subs = t.subagent_trajectories ?? [];
  const seen = new Set<string>();
  subs.forEach((s, i) => {
    if (!s.trajectory_id) problems.push(`${at}/subagent_trajectories/${i} has no trajectory_id (required on embedded subagent trajectories)`);
    else if (seen.has(s.trajectory_id)) problems.push(`${at}/subagent_trajectories/${i}/trajectory_id ${s.trajectory_id} is not unique`);
    else seen.add(s.trajectory_id);
    problems.push(...modelRules(s, `${at}/subagent_trajectories/${i}`));
  });
  return problems;
}

/** ATIF's prompt tokens from a result's gateway usage: every input token, uncached, cache-written or cache-read. */
export function promptTokens(usage: { input_tokens: number; cache_write_tokens?: number; cache_read_tokens?: number }): number {
  return usage.input_tokens + (usage.cache_write_tokens ?? 0) + (usage.cache_read_tokens ?? 0);
}
