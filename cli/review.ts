/**
 * `pairbench review`: a pull request's cohort as the base decides it. The base branch's checkout
 * becomes the review tree: its config and every file it reads stay the base's, except the
 * treatment under review -- the entries of the arms that are not an analysis' control, and the
 * files those entries name -- which are taken from the pull request. Whatever else the pull
 * request changed in what is frozen (tasks, arms, reps, agent, model, limits, the analysis, the
 * gate) is not run: it is listed field by field, from the freezes of the review tree and of the
 * pull request's own config, and the check fails on it until it lands on the base branch.
 *
 * A treatment file must be only that. It is taken only if no other input of any node covers it
 * (a verifier directory, a fake model's script, a task's files), and only if nothing the config
 * derives from it at load time moves when its bytes do: the review tree is loaded a second time
 * with every taken file's bytes replaced, and any frozen field other than that file's own digest
 * that moves refuses the treatment (a "CLAUDE.md" that is really a task's prompt or a script the
 * config loads).
 */
import { randomBytes } from 'node:crypto';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { parseDocument } from 'yaml';
import picomatch from 'picomatch';
import { canonicalJson } from '../pipeline/canonical-json.js';
import type { StepConfig } from '../pipeline/config/load.js';
import { formatDiagnostic } from '../pipeline/diagnostic.js';
import { describeFreezeChange } from '../pipeline/freeze.js';
import type { HostEnv } from '../pipeline/step-kind.js';
import { armsUnderReview } from '../steps/treatment-files.js';
import { cohortsOf } from './cohorts.js';
import type { LoadedConfig } from './command-context.js';
import { loadProject } from './project.js';

export interface ReviewReport {
  schema_version: 1;
  /** The base's config, now the review tree's. */
  base: string;
  /** The pull request's config. */
  head: string;
  /** The arms whose treatment the pull request may change, by run step. */
  arms: { step: string; arm: string }[];
  treatment: {
    /** Arm entries taken from the pull request (`steps.attempts.arms.claude-md`). */
    entries: string[];
    /** Files taken from the pull request (relative to the config's directory). */
    files: string[];
    /** What the treatment changed, per cohort, in the freeze's words (base -> review). */
    changes: Record<string, string[]>;
  };
  /** What else the pull request changed in what is frozen, per cohort (review -> pull request). */
  protocol: Record<string, string[]>;
  /** Why the treatment was not taken (the review tree is then the base itself). */
  refused: string[];
}

type Loaded = LoadedConfig;

/** A config loaded with a throwaway store (the review reads freezes, never records). */
async function load(configFile: string, env: HostEnv): Promise<{ ok: true; value: Loaded } | { ok: false; error: string }> {
  const store = mkdtempSync(join(tmpdir(), 'pairbench-review-'));
  try {
    const r = await loadProject(configFile, store, env);
    return r.ok ? r : { ok: false, error: r.error.map((d) => formatDiagnostic(d)).join('\n') };
  } finally {
    rmSync(store, { recursive: true, force: true });
  }
}

/** Each cohort's frozen fields. */
function freezes(p: Loaded, env: HostEnv): Map<string, Record<string, string>> {
  return new Map(cohortsOf(p.graph.nodes, p.inputs, env).map((c) => [c.name, c.freeze.fields]));
}

/** `before` -> `after`, cohort by cohort (a cohort on one side only is named). */
function freezeChanges(before: Map<string, Record<string, string>>, after: Map<string, Record<string, string>>): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const name of [...new Set([...before.keys(), ...after.keys()])].sort()) {
    const b = before.get(name);
    const a = after.get(name);
    const lines = !b ? ['cohort added by the pull request'] : !a ? ['cohort removed by the pull request'] : describeFreezeChange(b, a);
    if (lines.length) out[name] = lines;
  }
  return out;
}

/** Each step's matrix values, by dimension (repetitions by their count). */
function matrixValues(p: Loaded): Map<string, Map<string, Set<string>>> {
  const out = new Map<string, Map<string, Set<string>>>();
  for (const n of p.graph.nodes) {
    const dims = out.get(n.step.name) ?? new Map<string, Set<string>>();
    out.set(n.step.name, dims);
    for (const d of n.step.matrix)
      if (!d.repetition && n.matrix[d.name] !== undefined) dims.set(d.name, (dims.get(d.name) ?? new Set()).add(n.matrix[d.name]!));
  }
  return out;
}

/**
 * The protocol changes as a reviewer reads them: a matrix value the pull request removes or adds
 * is named once (\`attempts: matrix task: removes csv-amount, is-amount\`), and the fields of its
 * nodes that come and go with it are counted, not listed one by one.
 */
function condense(changes: Record<string, string[]>, before: Loaded, after: Loaded): Record<string, string[]> {
  const was = matrixValues(before);
  const now = matrixValues(after);
  const gone = new Map<string, Set<string>>();
  const named: string[] = [];
  for (const step of new Set([...was.keys(), ...now.keys()])) {
    for (const dim of new Set([...(was.get(step)?.keys() ?? []), ...(now.get(step)?.keys() ?? [])])) {
      const a = was.get(step)?.get(dim) ?? new Set<string>();
      const b = now.get(step)?.get(dim) ?? new Set<string>();
      const removed = [...a].filter((v) => !b.has(v)).sort();
      const added = [...b].filter((v) => !a.has(v)).sort();
      if (!removed.length && !added.length) continue;
      gone.set(dim, new Set([...(gone.get(dim) ?? []), ...removed, ...added]));
      named.push(
        `${step}: matrix ${dim}: ${[removed.length ? `removes ${removed.join(', ')}` : '', added.length ? `adds ${added.join(', ')}` : ''].filter(Boolean).join('; ')}`,
      );
    }
  }
  if (!gone.size) return changes;
  const values = new Set([...gone.values()].flatMap((v) => [...v]));
  const out: Record<string, string[]> = {};
  for (const [cohort, lines] of Object.entries(changes)) {
    let folded = 0;
    const kept = lines.filter((line) => {
      const group = line.slice(0, line.indexOf(': '));
      const field = line.slice(group.length + 2);
      const dim = /\[([^=\]]+)=([^\]]+)\]/.exec(group);
      const byDim = dim !== null && gone.get(dim[1]!)?.has(dim[2]!);
      const byNode = group.includes('/') && group.split('/').some((segment) => values.has(segment));
      const isMatrix = /^matrix \S+: /.test(field) && gone.has(field.split(' ')[1]!.replace(/:$/, ''));
      const drop = byDim || byNode || isMatrix;
      if (drop && !isMatrix) folded++;
      return !drop;
    });
    out[cohort] = [...named, ...kept, ...(folded ? [`and ${folded} frozen field(s) of the matrix values it removes or adds`] : [])];
  }
  return out;
}

/** Every regular file under `path` (itself when it is one), relative to `path`; a symbolic link is refused. */
function filesUnder(path: string, problems: string[], shown: string): string[] {
  const st = lstatSync(path);
  if (st.isSymbolicLink()) {
    problems.push(`${shown} is a symbolic link: a treatment file must be a regular file or a directory of them`);
    return [];
  }
  if (st.isFile()) return [''];
  if (!st.isDirectory()) {
    problems.push(`${shown} is not a regular file or directory`);
    return [];
  }
  return readdirSync(path)
    .sort()
    .flatMap((name) => filesUnder(join(path, name), problems, `${shown}/${name}`).map((f) => (f ? `${name}/${f}` : name)));
}

const inside = (root: string, p: string) => {
  const rel = relative(root, p);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
};

/** Whether a declared input `pattern` (relative to `root`) covers the file `rel`, or a file under it. */
function covers(root: string, pattern: string, rel: string): boolean {
  if (picomatch.scan(pattern).isGlob) return picomatch(pattern, { dot: true })(rel);
  const p = relative(root, resolve(root, pattern)).split(sep).join('/');
  return p === rel || rel.startsWith(`${p}/`) || p === '' || p.startsWith(`${rel}/`);
}

/** The first symbolic link on the way from `root` to `rel` (itself included), if any. */
function linkOnTheWay(root: string, rel: string): string | undefined {
  const parts = rel.split('/');
  for (let i = 1; i <= parts.length; i++) {
    const at = parts.slice(0, i).join('/');
    const st = lstatSync(join(root, at), { throwIfNoEntry: false });
    if (!st) return undefined;
    if (st.isSymbolicLink()) return at;
  }
  return undefined;
}

/** The YAML file a step was written in. */
const fileOf = (step: StepConfig) => resolve(step.source.displayPath);

export async function review(baseConfig: string, headConfig: string, env: HostEnv): Promise<{ ok: true; report: ReviewReport } | { ok: false; error: string }> {
  const baseLoaded = await load(baseConfig, env);
  if (!baseLoaded.ok) return { ok: false, error: `the base's config does not load (so the base decides nothing):\n${baseLoaded.error}` };
  const base = baseLoaded.value;
  const baseRoot = base.config.rootDir;
  const scope = armsUnderReview(base.config.steps);
  const report: ReviewReport = {
    schema_version: 1,
    base: resolve(baseConfig),
    head: resolve(headConfig),
    arms: [...scope].flatMap(([step, arms]) => [...arms].map((arm) => ({ step, arm }))),
    treatment: { entries: [], files: [], changes: {} },
    protocol: {},
    refused: [],
  };
  const baseFreezes = freezes(base, env);
  const headLoaded = await load(headConfig, env);
  if (!headLoaded.ok) {
    report.protocol['(config)'] = [`the pull request's config does not load:\n${headLoaded.error}`];
    report.refused.push("the pull request's config does not load: nothing of it is taken");
    return { ok: true, report };
  }
  const head = headLoaded.value;
  const headRoot = head.config.rootDir;
  const headSteps = new Map(head.config.steps.map((s) => [s.name, s]));

  // The arm entries that differ, and the treatment files they name.
  const entries: { step: StepConfig; arm: string; value: unknown }[] = [];
  const wanted = new Set<string>();
  const problems: string[] = [];
  for (const step of base.config.steps) {
    const arms = scope.get(step.name);
    const theirs = headSteps.get(step.name);
    if (!arms || !theirs || theirs.kind !== step.kind) continue;
    const mine = (step.spec['arms'] ?? {}) as Record<string, unknown>;
    const their = (theirs.spec['arms'] ?? {}) as Record<string, unknown>;
    for (const arm of arms) {
      if (their[arm] === undefined) continue; // removed: the protocol diff names it
      if (canonicalJson(their[arm] as never) !== canonicalJson(mine[arm] as never)) entries.push({ step, arm, value: their[arm] });
    }
    for (const node of head.graph.nodes.filter((n) => n.step === theirs)) {
      for (const spec of node.kind.fileInputs(node)) {
        if (!spec.treatment || spec.treatment.step !== step.name || !arms.has(spec.treatment.arm)) continue;
        if (picomatch.scan(spec.pattern).isGlob) {
          problems.push(`${step.name}: arm ${spec.treatment.arm} names "${spec.pattern}", a pattern: a treatment file is a path`);
          continue;
        }
        const abs = resolve(theirs.rootDir, spec.pattern);
        if (!existsSync(abs)) continue; // the pull request's run would fail on it: the base's stays
        if (!inside(headRoot, realpathSync(abs)) || !inside(headRoot, abs)) {
          problems.push(`${step.name}: arm ${spec.treatment.arm} takes ${spec.pattern}, which is outside the pull request's project: not taken`);
          continue;
        }
        wanted.add(relative(headRoot, abs).split(sep).join('/'));
      }
    }
  }
  // The files that differ from the base's (a directory file by file), each written where the base's tree has no link on the way.
  const overlay: string[] = [];
  for (const rel of [...wanted].sort()) {
    for (const f of filesUnder(join(headRoot, rel), problems, rel)) {
      const file = f ? `${rel}/${f}` : rel;
      const there = join(baseRoot, file);
      const link = linkOnTheWay(baseRoot, file);
      if (link) {
        problems.push(`${file}: the base's tree has a symbolic link at ${link}: a treatment file is written only inside the review tree`);
        continue;
      }
      const differs = !existsSync(there) || !statSync(there).isFile() || !readFileSync(there).equals(readFileSync(join(headRoot, file)));
      if (differs) overlay.push(file);
    }
  }
  // No other input may read a treatment file: a verifier, a script, a task's files are the base's.
  for (const node of base.graph.nodes) {
    for (const spec of node.kind.fileInputs(node)) {
      const asTreatment = spec.treatment && scope.get(spec.treatment.step)?.has(spec.treatment.arm);
      if (asTreatment) continue;
      const root = node.step.rootDir;
      for (const file of overlay) {
        if (covers(root, spec.pattern, relative(root, join(baseRoot, file)).split(sep).join('/')))
          problems.push(`${file} is a treatment file of the pull request, but ${node.step.name} also reads it (${spec.pattern}): only the base may change it`);
      }
    }
  }
  if (problems.length) {
    report.refused.push(...new Set(problems));
    report.protocol = condense(freezeChanges(baseFreezes, freezes(head, env)), base, head);
    return { ok: true, report };
  }

  // Apply: the files, then the entries (each in the file its step was written in). Every change is undone on a refusal.
  const undo: (() => void)[] = [];
  const put = (path: string, bytes: Buffer | string) => {
    const before = existsSync(path) ? readFileSync(path) : null;
    undo.push(() => (before === null ? rmSync(path, { force: true }) : writeFileSync(path, before)));
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, bytes);
  };
  const revert = () => {
    for (const u of undo.reverse()) u();
  };
  for (const file of overlay) put(join(baseRoot, file), readFileSync(join(headRoot, file)));
  const byFile = new Map<string, typeof entries>();
  for (const e of entries) byFile.set(fileOf(e.step), [...(byFile.get(fileOf(e.step)) ?? []), e]);
  for (const [file, edits] of byFile) {
    const doc = parseDocument(readFileSync(file, 'utf8'));
    try {
      for (const e of edits) doc.setIn([...e.step.path, 'arms', e.arm], doc.createNode(e.value));
    } catch (err) {
      revert();
      report.refused.push(`the arm entries could not be written into ${relative(baseRoot, file)}: ${(err as Error).message}`);
      report.protocol = condense(freezeChanges(baseFreezes, freezes(head, env)), base, head);
      return { ok: true, report };
    }
    put(file, doc.toString());
  }
  const reviewed = await load(baseConfig, env);
  if (!reviewed.ok) {
    revert();
    report.refused.push(`with the pull request's treatment the base's config does not load:\n${reviewed.error}`);
    report.protocol = condense(freezeChanges(baseFreezes, freezes(head, env)), base, head);
    return { ok: true, report };
  }
  const reviewFreezes = freezes(reviewed.value, env);
  // The bytes of every taken file replaced: only those files' own digests may move.
  if (overlay.length) {
    const kept = overlay.map((f) => ({ path: join(baseRoot, f), bytes: readFileSync(join(baseRoot, f)) }));
    for (const k of kept) writeFileSync(k.path, `pairbench review probe ${randomBytes(16).toString('hex')}\n`);
    const probe = await load(baseConfig, env);
    for (const k of kept) writeFileSync(k.path, k.bytes);
    const moved = !probe.ok
      ? [`a treatment file is read when the config loads (with other bytes it does not load: ${probe.error.split('\n')[0]})`]
      : Object.entries(freezeChanges(reviewFreezes, freezes(probe.value, env))).flatMap(([cohort, lines]) =>
          lines
            .filter((l) => !/^[^:]+: input /.test(l))
            .map((l) => `cohort ${cohort}: "${l}" moves with the bytes of a treatment file: the file is not only a treatment`),
        );
    if (moved.length) {
      revert();
      report.refused.push(...moved);
      report.protocol = condense(freezeChanges(baseFreezes, freezes(head, env)), base, head);
      return { ok: true, report };
    }
  }
  report.treatment = {
    entries: entries.map((e) => `steps.${e.step.name}.arms.${e.arm}`),
    files: overlay,
    changes: freezeChanges(baseFreezes, reviewFreezes),
  };
  report.protocol = condense(freezeChanges(reviewFreezes, freezes(head, env)), reviewed.value, head);
  return { ok: true, report };
}
