import { existsSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { isAbsolute, join, relative } from 'node:path';
import { foldLine, lineDigest } from '../gateway/markers.js';
import type { AnalysisResult, AuditedAttempt } from '../stats/types.js';
import type { ResultsFile } from '../report/results-file.js';
import { parseJsonArtifact, type Artifact, type JsonArtifact } from '../pipeline/artifact.js';
import type { Result } from '../pipeline/result.js';
import { BUNDLED, bundledPath, RESULTS_FILE } from '../steps/bundle-layout.js';
import { totalTokens, type AttemptView, type CohortView, type TaskRow } from './view-types.js';
import { comparisonMeaning, comparisonTitle, interval, pp, pValue, verdictWord } from '../report/report-format.js';

/**
 * One exported bundle, read for the viewer: read-only, and never outside its directory (a
 * path from a URL or from a record is resolved and refused if it leaves the bundle).
 */
export class BundleReader {
  private readonly root: string;
  private results: ResultsFile | undefined;

  constructor(private readonly dir: string) {
    this.root = realpathSync(dir);
  }

  /** The bytes of `path` inside the bundle, or undefined (missing, not a file, or, links resolved, outside it). */
  file(path: string): Buffer | undefined {
    const full = join(this.root, path);
    if (!existsSync(full)) return undefined;
    const real = realpathSync(full);
    const rel = relative(this.root, real);
    if (rel.startsWith('..') || isAbsolute(rel) || !statSync(real).isFile()) return undefined;
    return readFileSync(real);
  }

  text(path: string): string | null {
    return this.file(path)?.toString('utf8') ?? null;
  }

  /** A JSON file shown as it is (nothing is believed of it), or null. */
  json(path: string): unknown {
    const t = this.text(path);
    if (t === null) return null;
    try {
      return JSON.parse(t) as unknown;
    } catch {
      return null;
    }
  }

  /** A JSON file of the bundle (`whose`: the node that wrote it, in errors), checked by its descriptor; null when it is missing. */
  checked<T>(path: string, descriptor: JsonArtifact<T>, whose: string): Result<T, string> | null {
    const t = this.text(path);
    return t === null ? null : parseJsonArtifact(descriptor, t, whose);
  }

  resultsFile(): ResultsFile {
    if (this.results) return this.results;
    const read = this.checked(RESULTS_FILE.name, RESULTS_FILE, 'the bundle');
    if (!read) throw new Error(`${this.dir} is not a pairbench bundle: it has no readable ${RESULTS_FILE.name}`);
    if (!read.ok) throw new Error(`${this.dir} is not a pairbench bundle: ${read.error}`);
    this.results = read.value;
    return this.results;
  }

  /** The cohort page's facts: its verdicts in the report's words, what it ran on, how it was frozen. */
  cohort(): Omit<CohortView, 'history'> {
    const r = this.resultsFile();
    return {
      cohort: r.cohort,
      version: r.version,
      freeze_digest: r.freeze_digest,
      config_digest: r.config_digest,
      verdicts: r.analysis.comparisons.map((c) => ({
        title: comparisonTitle(c),
        control: c.control,
        treatment: c.treatment,
        verdict: verdictWord(c.verdict),
        effect: pp(c.delta),
        interval: interval(c.ci),
        p: c.test ? pValue(c.test.p_holm) : null,
        n_tasks: c.n_tasks,
        meaning: comparisonMeaning(c),
      })),
      warnings: r.analysis.warnings.map((w) => w.message),
      status: statusOf(r),
      freeze: this.json('config/freeze.json'),
      tasks: tasksOf(r),
      has_report: this.file('report.html') !== undefined,
    };
  }

  /** One attempt with what it left: its diff, the verifier's output, its delivery evidence, its trajectory and gateway exchanges. */
  attempt(node: string): AttemptView<AuditedAttempt> | undefined {
    const record = this.resultsFile().attempts.find((a) => a.node === node);
    if (!record) return undefined;
    const run = record.sources?.run ?? null;
    const verify = record.sources?.verify ?? null;
    const at = (id: string | null, output: Artifact) => (id ? this.text(bundledPath(id, output)) : null);
    // A trajectory that is not ATIF is not shown (the bundle's other files still are).
    const trajectory = run ? this.checked(bundledPath(run, BUNDLED.trajectory), BUNDLED.trajectory, run) : null;
    const gateway = (at(run, BUNDLED.gatewayLog) ?? '')
      .split('\n')
      .filter((l) => l.trim())
      .map((l): unknown => {
        try {
          return JSON.parse(l);
        } catch {
          return l;
        }
      });
    return {
      record,
      diff: at(run, BUNDLED.diff),
      verifier: at(verify, BUNDLED.verifierLog) ?? at(verify, BUNDLED.verdict),
      agent_log: at(run, BUNDLED.agentLog),
      trajectory: trajectory?.ok ? trajectory.value : null,
      gateway,
      delivered_at: deliveredAt(record.delivery?.marker_lines ?? [], gateway),
    };
  }
}

/** Every string inside a parsed JSON value. */
function strings(v: unknown, out: string[] = []): string[] {
  if (typeof v === 'string') out.push(v);
  else if (Array.isArray(v)) for (const x of v) strings(x, out);
  else if (v && typeof v === 'object') for (const x of Object.values(v)) strings(x, out);
  return out;
}

/** The gateway exchanges carrying a marker line (recorded as digests: the record holds no text of the treatment). */
function deliveredAt(markerDigests: readonly string[], exchanges: readonly unknown[]): { exchange: number; line: string }[] {
  const wanted = new Set(markerDigests);
  const found: { exchange: number; line: string }[] = [];
  if (!wanted.size) return found;
  exchanges.forEach((x, i) => {
    const seen = new Set<string>();
    for (const text of strings(x))
      for (const line of text.split('\n')) {
        const folded = foldLine(line);
        if (folded.length && !seen.has(folded) && wanted.has(lineDigest(folded))) {
          seen.add(folded);
          found.push({ exchange: i + 1, line: folded });
        }
      }
  });
  return found;
}

/**
 * The status bar: what every attempt recorded (each distinct value, when attempts differ), and
 * egress as enforced only when it was in every attempt, as the report counts it.
 */
function statusOf(r: ResultsFile): Record<string, string> | null {
  const attempts = r.attempts;
  if (!attempts.length) return null;
  const each = (f: (a: AuditedAttempt) => string) => [...new Set(attempts.map(f))].join(', ');
  const enforced = attempts.filter((a) => a.sandbox.egress_enforced).length;
  const egress =
    enforced === attempts.length
      ? 'enforced'
      : enforced === 0
        ? 'NOT enforced'
        : `NOT enforced in ${attempts.length - enforced} of ${attempts.length} attempts`;
  return {
    agent: each((a) => `${a.agent.adapter} ${a.agent.version}`),
    model: each((a) => a.agent.model),
    provider: each((a) => a.agent.provider),
    sandbox: each((a) => a.sandbox.backend),
    isolation: each((a) => a.sandbox.isolation),
    image: each((a) => a.sandbox.image_id ?? 'none'),
    egress: `${each((a) => a.sandbox.egress_mode)} (${egress})`,
    design: designOf(r.analysis),
  };
}

function designOf(a: AnalysisResult): string {
  const arms = a.arms.map((x) => x.arm).join(', ');
  return `${a.arms.length} arms (${arms}); ${a.factorial ? 'factorial; ' : ''}${a.sequential ? 'sequential looks; ' : ''}paired by task`;
}

function tasksOf(r: ResultsFile): TaskRow[] {
  const rows = new Map<string, TaskRow>();
  for (const a of r.attempts) {
    const row = rows.get(a.task) ?? { task: a.task, family: a.family, category: a.category, outcomes: {}, attempts: [] };
    row.attempts.push({
      node: a.node,
      arm: a.arm,
      rep: a.rep,
      admission: a.admission,
      reason_code: a.reason_code,
      pass: a.pass,
      exit_reason: a.exit_reason,
      tokens: totalTokens(a.usage),
      cost_usd: a.cost_usd,
      wall_ms: a.wall_ms,
    });
    rows.set(a.task, row);
  }
  for (const c of r.analysis.comparisons)
    for (const t of c.outcomes?.tasks ?? []) {
      const row = rows.get(t.task);
      if (row) row.outcomes[`${c.treatment} vs ${c.control}`] = t.class;
    }
  return [...rows.values()];
}
