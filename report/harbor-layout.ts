/**
 * A bundle as a Harbor job directory (`pairbench export --harbor-layout`), the layout
 * Harbor's viewer (`harbor view`) scans: `<job>/config.json` (JobConfig), `<job>/result.json`
 * (JobResult with its JobStats), and per attempt a trial directory with `config.json`
 * (TrialConfig), `result.json` (TrialResult), `agent/trajectory.json` (ATIF) and
 * `verifier/test-stdout.txt` (+ `reward.txt` or `reward.json`, as the Harbor task wrote it). Shapes follow Harbor's
 * pydantic models (models/job, models/trial); every value comes from the bundle.
 *
 * Where pairbench's notions differ: a trial's `source` (Harbor's dataset) is the arm, so
 * Harbor's per-eval stats keep the arms apart; an excluded attempt (no verdict) has no
 * verifier_result and, for an infrastructure fault, an exception_info; rewards are the
 * admitted score (a forged or out-of-bounds pass is 0), or the task's own reward dict when
 * that is what was admitted. `metadata.pairbench` on each agent result carries admission,
 * reason and explanation; the full bundle sits beside the trials in `pairbench/`.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createHash } from 'node:crypto';
import type { AttemptRecord } from '../stats/types.js';
import { attemptSpan } from '../stats/attempt-span.js';
import { err, ok, type Result } from '../pipeline/result.js';
import { parseJsonArtifact, type Artifact, type JsonArtifact } from '../pipeline/artifact.js';

/** Where the pairbench bundle goes inside the job directory (no result.json: the viewer does not list it as a trial). */
export const BUNDLE_SUBDIR = 'pairbench';

interface BundleResults {
  cohort: string;
  version: number | null;
  config_digest: string;
  attempts: AttemptRecord[];
}

/** What the job reads of a verify node's verdict. */
interface Verdict {
  pass: boolean | null;
  reward: Record<string, number> | null;
  /** Absent in verdicts from before it was recorded: those export reward.json. */
  reward_file?: 'reward.txt' | 'reward.json' | null;
}

/**
 * The bundle's files the job is made of, by the descriptors of the kinds that wrote them (the
 * export command passes steps/bundle-layout.ts: this library imports no step). Each JSON file is
 * checked by its descriptor: a bundle may come from anyone.
 */
export interface HarborSources {
  results: JsonArtifact<BundleResults>;
  verdict: JsonArtifact<Verdict>;
  certification: JsonArtifact<{ surfaces: Record<string, string> }>;
  /** Copied into the trial as Harbor's agent/trajectory.json: checked first, as Harbor will believe it. */
  trajectory: JsonArtifact<unknown>;
  verifierLog: Artifact;
  /** The path of a node's output inside the bundle, and the directory of the nodes. */
  path: (node: string, output: Artifact) => string;
  nodes: string;
}

/** The job's directory name: the cohort and its registered version. */
export function harborJobName(bundleDir: string, sources: HarborSources): Result<string, string> {
  const results = readResults(bundleDir, sources);
  if (!results.ok) return results;
  const name = `${results.value.cohort}${results.value.version ? `-v${results.value.version}` : ''}`.replace(/[^A-Za-z0-9._-]+/g, '_');
  return ok(name);
}

/**
 * Writes the Harbor job for the bundle at bundleDir into jobDir; finalDir is where the job
 * will live (its paths are recorded: trial_uri, trials_dir) when jobDir is a staging copy.
 */
export function writeHarborJob(bundleDir: string, sources: HarborSources, jobDir: string, finalDir = jobDir): Result<{ trials: number }, string> {
  const results = readResults(bundleDir, sources);
  if (!results.ok) return results;
  const { attempts, cohort, config_digest } = results.value;
  const jobName = harborJobName(bundleDir, sources);
  if (!jobName.ok) return jobName;
  const jobId = uuidOf(`job ${cohort} ${config_digest}`);
  const write = (path: string, data: string) => {
    mkdirSync(dirname(join(jobDir, path)), { recursive: true });
    writeFileSync(join(jobDir, path), data);
  };
  const json = (v: unknown) => JSON.stringify(v, null, 2) + '\n';
  const fileOf = (node: string, output: Artifact) => join(bundleDir, sources.path(node, output));
  const readNode = (node: string | null, output: Artifact): string | null => (node ? textOf(fileOf(node, output)) : null);
  const checkedNode = <T>(node: string | null, output: JsonArtifact<T>): Result<T, string> | null =>
    node ? checkedFile(fileOf(node, output), output, node) : null;
  const certified = certificationDigests(bundleDir, attempts, sources);
  if (!certified.ok) return certified;

  const trials: TrialResult[] = [];
  for (const a of attempts) {
    const run = a.sources?.run ?? null;
    const verifyNode = a.sources?.verify ?? null;
    const trialName = `${a.task}__${a.arm}__${a.rep}`.replace(/[^A-Za-z0-9._-]+/g, '_');
    const trialDir = resolve(finalDir, trialName);
    const read = checkedNode(verifyNode, sources.verdict);
    if (read && !read.ok) return read;
    const verdict = read?.value ?? null;
    const agentConfig = { name: a.agent.adapter, model_name: a.agent.model };
    const config = { task: { path: a.task, source: a.arm }, trial_name: trialName, trials_dir: resolve(finalDir), agent: agentConfig, job_id: jobId };
    const rewards = a.pass === null ? null : verdict?.reward && verdict.pass === a.pass ? verdict.reward : { reward: a.pass ? 1 : 0 };
    const usage = a.usage;
    const result: TrialResult = {
      id: uuidOf(`trial ${a.node}`),
      task_name: a.task,
      trial_name: trialName,
      trial_uri: pathToFileURL(trialDir).href,
      task_id: { path: a.task },
      source: a.arm,
      task_checksum: certified.value.get(a.task) ?? createHash('sha256').update(`${a.task}\n${config_digest}`).digest('hex'),
      config,
      agent_info: { name: a.agent.adapter, version: a.agent.version, model_info: { name: a.agent.model, provider: a.agent.provider } },
      // Harbor's n_input_tokens counts every input token, cached or not (as ATIF's prompt tokens do).
      agent_result: {
        n_input_tokens: usage ? usage.input_tokens + usage.cache_write_tokens + usage.cache_read_tokens : null,
        n_cache_tokens: usage ? usage.cache_read_tokens : null,
        n_output_tokens: usage ? usage.output_tokens : null,
        cost_usd: a.cost_usd,
        metadata: {
          pairbench: {
            admission: a.admission,
            reason_code: a.reason_code,
            explanation: a.explanation,
            arm: a.arm,
            rep: a.rep,
            exit_reason: a.exit_reason,
            node: a.node,
          },
        },
      },
      verifier_result: rewards ? { rewards } : null,
      exception_info: a.infra_error
        ? {
            exception_type: a.reason_code,
            exception_message: a.explanation,
            exception_traceback: '',
            occurred_at: a.ended_at ?? a.started_at ?? new Date(0).toISOString(),
          }
        : null,
      started_at: a.started_at,
      finished_at: a.ended_at,
      agent_execution: { started_at: a.started_at, finished_at: a.ended_at },
    };
    trials.push(result);
    write(`${trialName}/config.json`, json(config));
    write(`${trialName}/result.json`, json(result));
    // Copied as it is (Harbor reads it), once it is checked to be ATIF.
    const trajectory = readNode(run, sources.trajectory);
    const atif = trajectory === null ? null : checkedText(fileOf(run!, sources.trajectory), trajectory, sources.trajectory, run!);
    if (atif && !atif.ok) return atif;
    if (trajectory !== null) write(`${trialName}/agent/trajectory.json`, trajectory);
    const verifierLog = readNode(verifyNode, sources.verifierLog);
    if (verifierLog !== null) write(`${trialName}/verifier/test-stdout.txt`, verifierLog);
    // The reward as the task's verifier wrote it: reward.txt (one number) or reward.json.
    if (verdict?.reward) {
      if (verdict.reward_file === 'reward.txt' && verdict.reward['reward'] !== undefined)
        write(`${trialName}/verifier/reward.txt`, `${verdict.reward['reward']}\n`);
      else write(`${trialName}/verifier/reward.json`, json(verdict.reward));
    }
    if (result.exception_info) write(`${trialName}/exception.txt`, `${result.exception_info.exception_type}: ${result.exception_info.exception_message}\n`);
  }

  const span = attemptSpan(attempts);
  const agents = [...new Map(attempts.map((a) => [`${a.agent.adapter} ${a.agent.model}`, { name: a.agent.adapter, model_name: a.agent.model }])).values()];
  write(
    'config.json',
    json({
      job_name: jobName.value,
      jobs_dir: resolve(finalDir, '..'),
      n_attempts: Math.max(1, ...attempts.map((a) => a.rep)),
      agents,
      tasks: [...new Set(attempts.map((a) => a.task))].sort().map((t) => ({ path: t })),
    }),
  );
  write(
    'result.json',
    json({
      id: jobId,
      started_at: span.first ?? new Date(0).toISOString(),
      updated_at: span.last,
      finished_at: span.last,
      n_total_trials: trials.length,
      stats: jobStats(trials),
    }),
  );
  return ok({ trials: trials.length });
}

interface TrialResult {
  id: string;
  task_name: string;
  trial_name: string;
  trial_uri: string;
  task_id: { path: string };
  source: string;
  task_checksum: string;
  config: Record<string, unknown>;
  agent_info: { name: string; version: string; model_info: { name: string; provider: string } };
  agent_result: {
    n_input_tokens: number | null;
    n_cache_tokens: number | null;
    n_output_tokens: number | null;
    cost_usd: number | null;
    metadata: Record<string, unknown>;
  };
  verifier_result: { rewards: Record<string, number> } | null;
  exception_info: { exception_type: string; exception_message: string; exception_traceback: string; occurred_at: string } | null;
  started_at: string | null;
  finished_at: string | null;
  agent_execution: { started_at: string | null; finished_at: string | null };
}

/** Harbor's JobStats over the trials, as its JobStats.increment adds them up. */
function jobStats(trials: TrialResult[]) {
  const evals: Record<
    string,
    {
      n_trials: number;
      n_errors: number;
      metrics: unknown[];
      pass_at_k: Record<string, number>;
      reward_stats: Record<string, Record<string, string[]>>;
      exception_stats: Record<string, string[]>;
    }
  > = {};
  const sum = (xs: (number | null)[]) => (xs.some((x) => x !== null) ? xs.reduce<number>((s, x) => s + (x ?? 0), 0) : null);
  let errored = 0;
  for (const t of trials) {
    const key = `${t.agent_info.name}__${t.agent_info.model_info.name}__${t.source}`;
    const e = (evals[key] ??= { n_trials: 0, n_errors: 0, metrics: [], pass_at_k: {}, reward_stats: {}, exception_stats: {} });
    if (t.verifier_result) {
      e.n_trials++;
      for (const [k, v] of Object.entries(t.verifier_result.rewards)) ((e.reward_stats[k] ??= {})[String(v)] ??= []).push(t.trial_name);
    }
    if (t.exception_info) {
      (e.exception_stats[t.exception_info.exception_type] ??= []).push(t.trial_name);
      e.n_errors++;
      errored++;
    }
  }
  return {
    n_completed_trials: trials.length,
    n_errored_trials: errored,
    n_running_trials: 0,
    n_pending_trials: 0,
    n_cancelled_trials: 0,
    n_retries: 0,
    evals,
    n_input_tokens: sum(trials.map((t) => t.agent_result.n_input_tokens)),
    n_cache_tokens: sum(trials.map((t) => t.agent_result.n_cache_tokens)),
    n_output_tokens: sum(trials.map((t) => t.agent_result.n_output_tokens)),
    cost_usd: sum(trials.map((t) => t.agent_result.cost_usd)),
  };
}

function readResults(bundleDir: string, sources: HarborSources): Result<BundleResults, string> {
  const file = join(bundleDir, sources.results.name);
  return checkedFile(file, sources.results, 'the bundle') ?? err(`${file} cannot be read: is ${bundleDir} a pairbench bundle?`);
}

/**
 * The bundle's JSON file at `file` (`whose` output), checked by its descriptor:
 * null when there is no such file, an error naming the file when it is not that type.
 */
function checkedFile<T>(file: string, a: JsonArtifact<T>, whose: string): Result<T, string> | null {
  const text = textOf(file);
  return text === null ? null : checkedText(file, text, a, whose);
}

/** The text of the bundle's `file`, checked by its descriptor (an error names the file). */
function checkedText<T>(file: string, text: string, a: JsonArtifact<T>, whose: string): Result<T, string> {
  const read = parseJsonArtifact(a, text, whose);
  return read.ok ? read : err(`${file}: ${read.error}`);
}

function textOf(file: string): string | null {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return null;
  }
}

/** A task's checksum: the digest of its certified tree where the bundle has its certification (`nodes/<certify step>/<task>/`). */
function certificationDigests(bundleDir: string, attempts: AttemptRecord[], sources: HarborSources): Result<Map<string, string>, string> {
  const out = new Map<string, string>();
  const nodes = join(bundleDir, sources.nodes);
  if (!existsSync(nodes)) return ok(out);
  for (const task of new Set(attempts.map((a) => a.task))) {
    for (const step of safeDirs(nodes)) {
      const read = checkedFile(join(bundleDir, sources.path(`${step}/${task}`, sources.certification)), sources.certification, `${step}/${task}`);
      if (!read) continue;
      if (!read.ok) return read;
      const tree = read.value.surfaces['tree'];
      if (tree) out.set(task, tree.replace(/^sha256:/, ''));
    }
  }
  return ok(out);
}

function safeDirs(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/** A stable UUID (RFC 9562 version 8) from a name: the same bundle gives the same ids. */
function uuidOf(name: string): string {
  const h = createHash('sha256').update(name).digest('hex').slice(0, 32).split('');
  h[12] = '8';
  h[16] = ((parseInt(h[16]!, 16) & 0x3) | 0x8).toString(16);
  const s = h.join('');
  return `${s.slice(0, 8)}-${s.slice(8, 12)}-${s.slice(12, 16)}-${s.slice(16, 20)}-${s.slice(20)}`;
}
