import { discrimination } from './certify/discrimination.js';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { canonicalJson, type JsonEncodable } from '../pipeline/canonical-json.js';
import type { StepConfig } from '../pipeline/config/load.js';
import { sha256 } from '../pipeline/digest.js';
import { err, errorMessage, ok } from '../pipeline/result.js';
import type { ExecutionContext, FileInputSpec, GraphNode, StepKind } from '../pipeline/step-kind.js';
import type { OutputEntry } from '../pipeline/store/cas.js';
import { checkTasks, taskMatrixSource, taskOf } from './agent-step-config.js';
import { allowEntriesFor, allowedBy, bySeverity, failingFindings, policyFromSpec, type AllowEntry, type CertifyPolicy } from './certify/policy.js';
import type { Finding, Surface } from './certify/scan.js';
import { vendoredPackageDir } from './certify/vendored.js';
import { runStep, sandboxFor, sandboxOf, type ArmSpec } from './run.js';
import { fileSources, outputsReadFrom, producerSteps, treatmentEntry } from './treatment-files.js';
import type { CanaryCalibrations } from './verifier-canary.js';
import { describeVerifierFault, runVerifier, scoringOf, verifierSandbox } from './verifier-run.js';
import { ENVIRONMENT_OUTPUTS, environmentStep, inEnvironment, networkNote, startingPoint, verifierPhase } from './environment.js';
import { applySolution, CANARY, calibrationsOf, unusableCanaries } from './canary-calibration.js';
import { verifierOwned } from './verifier-owned.js';
import { diffSnapshots, snapshot } from './workspace.js';
import { specIf, specOf, type SpecByKind } from './step-spec.js';
import { annotateVerifierEnvironment } from './host-paths.js';
import { CERTIFICATION_VERDICT, CERTIFY_KIND, type CertificationVerdict } from './certification.js';
import { artifact, jsonArtifact } from '../pipeline/artifact.js';
import { stepOutputProblems } from './step-output-checks.js';
import { materializeStep, REDACTED, TREE } from './materialize.js';
import type { CanaryRecord } from './verifier-canary.js';

type CertifySpec = SpecByKind['certify'];

const spec = (step: StepConfig): CertifySpec => specOf(step, 'certify');

/** The arms that will run on this task: the treatments of every downstream run step. */
function armsOf(node: GraphNode): Record<string, ArmSpec> {
  const arms: Record<string, ArmSpec> = {};
  const seen = new Set<string>();
  for (const d of node.downstream) {
    if (d.kind !== runStep || seen.has(d.step.name)) continue;
    seen.add(d.step.name);
    for (const [name, arm] of Object.entries(specIf(d.step, 'run')?.arms ?? {})) arms[`${d.step.name}:${name}`] = arm;
  }
  return arms;
}

export interface CertificationReceipt {
  schema_version: 1;
  task: string;
  verdict: 'certified' | 'rejected';
  /** The paths attempts may write, and where they came from (an import derives them). */
  allowed_paths: { paths: string[]; from: string };
  ignored_task_fields: { field: string; reason: string }[];
  solution_outside_workspace: string[];
  reasons: string[];
  surfaces: Record<string, string>;
  findings_count: Record<string, number>;
  /** Every finding, most severe first (solution and verifier leaks, then canary, instructions, words). */
  findings: Finding[];
  allowed: (Finding & { allowed_by: AllowEntry })[];
  checks: { nop: boolean[]; oracle: boolean[]; repeats: number; discriminating: boolean; flaky: string[] };
  /** Per deciding test: the canary planted beside it, and whether it failed with the reference solution as it must. */
  canaries: CanaryCalibrations;
  policy: CertifyPolicy;
  policy_digest: string;
  receipt_digest: string;
}

/** The verifier's logs on the starting tree and with the solution (a directory). */
const VERIFIER_LOGS = artifact('verifier-logs', "the verifier's logs on the starting tree and with the solution");
/** The certification receipt: what the export bundles, and what a bundle's readers (the Harbor job's task checksum) check it by. */
export const CERTIFICATION = jsonArtifact<CertificationReceipt, 'certification.json'>(
  'certification.json',
  "the certification: each check's result and the reasons",
  stepOutputProblems('CertificationReceipt'),
);

/** A leak found in a vendored copy of the repository's own code is named as such, with the fix. */
function vendoredNote(f: Finding): string {
  const dir = f.class === 'solution-leak' || f.class === 'verifier-leak' ? vendoredPackageDir(f.path) : null;
  if (!dir) return '';
  return (
    ` -- a vendored copy (under ${dir}) of the repository's own code: it holds the answer. ` +
    `Remove it in the task's setup patch, or redact it (materialize redact: [..., "${dir}**"]), or, if it is not the code under test, allow it (policy.allow with a reason)`
  );
}

function listed(paths: string[]): string {
  return paths.slice(0, 5).join(', ') + (paths.length > 5 ? ` and ${paths.length - 5} more` : '');
}

/**
 * `certify` (per task), before any attempt: a static scan of every agent-visible
 * surface (prompt, tree, each arm's treatment) for solution and verifier leakage,
 * benchmark awareness, the canary and surviving instruction files; then the
 * discrimination check, repeated: the verifier must FAIL on the untouched tree
 * (nop) and PASS with the reference solution (oracle), every time. A rejected task
 * is never run: the run step refuses it with these reasons.
 */
export const certifyStep: StepKind = {
  name: CERTIFY_KIND,
  matrixSource: taskMatrixSource,
  title: { one: 'task certification', many: 'task certifications' },
  outputs: () => [CERTIFICATION, CERTIFICATION_VERDICT, CANARY, VERIFIER_LOGS],
  sandboxed: true,
  // The image a per-task template names is part of the key (as the engine has it now).
  annotate: annotateVerifierEnvironment,
  // 5: third-party code (node_modules, vendor/, site-packages) is searched for copies of the answer and the canary
  //    only; a solution line the tree carries in two files or more is its idiom; rejections say the allow entries.
  // 4: a task whose canary passes even with the reference solution is rejected (no pass of it could be trusted).
  // 3: test runners; findings by severity, an allowlist with reasons, vendored copies named; verifier logs kept.
  // 2: canaries, every arm surface (directories, env, MCP servers), encodings normalised and decoded.
  version: 5,
  check(step, steps) {
    const problems = checkTasks(step, { hostPaths: true });
    // Generated treatment files are scanned like any other surface, so certify must read them.
    for (const run of steps.values()) {
      if (run.kind !== runStep.name || !run.needs.includes(step.name)) continue;
      for (const producer of producerSteps(Object.values(specIf(run, 'run')?.arms ?? {}))) {
        if (!step.needs.includes(producer)) {
          problems.push({
            field: `steps.${step.name}.needs`,
            message: `an arm of step ${run.name} receives files step "${producer}" generates; certify scans every surface an arm adds, so it must read them`,
            hint: `add ${producer} to steps.${step.name}.needs`,
            location: step.source.locate([...step.path, 'needs']),
          });
        }
      }
    }
    return problems;
  },
  keyConfig(node): JsonEncodable {
    const task = taskOf(node);
    const arms = armsOf(node);
    return {
      prompt: task.prompt,
      allowed_paths: task.allowedPaths,
      canary: task.canary,
      solution: task.solution.patch,
      verifier: {
        command: task.verifier.command,
        fail_to_pass: task.verifier.failToPass,
        pass_to_pass: task.verifier.passToPass,
        patch: task.verifier.patch,
        result: task.verifier.result,
        timeout: task.verifier.timeoutSec,
        runner: task.verifier.runner ?? null,
      },
      arms: Object.fromEntries(
        Object.entries(arms).map(([k, a]) => [
          k,
          {
            files: a.files ?? {},
            ...(a.restore ? { restore: a.restore } : {}),
            prompt_append: a.prompt_append ?? null,
            env: a.env ?? {},
            mcp_servers: Object.fromEntries(
              Object.entries(a.mcp_servers ?? {}).map(([s, m]) => [s, { command: m.command, args: m.args ?? [], env: m.env ?? {} }]),
            ),
          },
        ]),
      ),
      policy: policyFromSpec(spec(node.step).policy),
      scoring: scoringOf(spec(node.step)),
      ...(spec(node.step).strict_verifier ? { strict_verifier: true } : {}),
      ...(task.facts?.length ? { facts: task.facts, memory_arms: spec(node.step).memory_arms ?? [] } : {}),
      ...(task.environment ? { environment: task.environment } : {}),
      sandbox: sandboxOf(spec(node.step)),
    };
  },
  fileInputs(node): FileInputSpec[] {
    const task = taskOf(node);
    const out: FileInputSpec[] = [];
    if (task.verifier.filesDir) out.push({ pattern: relative(node.step.rootDir, task.verifier.filesDir), field: ['tasks'] });
    if (task.solution.script) out.push({ pattern: relative(node.step.rootDir, dirname(task.solution.script)), field: ['tasks'] });
    for (const [name, arm] of Object.entries(armsOf(node))) {
      const [step, armName] = [name.slice(0, name.indexOf(':')), name.slice(name.indexOf(':') + 1)];
      for (const [, src] of fileSources(arm.files)) out.push({ pattern: src, field: ['tasks'], treatment: { step, arm: armName } });
    }
    return out;
  },
  selectUpstream(node, upstream) {
    // An arm that restores the repository's own instruction files adds them as a surface.
    if (upstream.kind === materializeStep) return Object.values(armsOf(node)).some((a) => a.restore) ? [TREE.name, REDACTED.name] : [TREE.name];
    if (upstream.kind === environmentStep) return ENVIRONMENT_OUTPUTS;
    // A step that generates an arm's files (a context step): the generated files are a surface to scan.
    const arms = Object.values(armsOf(node));
    return producerSteps(arms).has(upstream.step.name) ? outputsReadFrom(arms, upstream.step.name) : undefined;
  },
  describeConfigField: (path) => path.join('.'),

  // eslint-disable-next-line max-lines-per-function -- 216 lines, to be split into named phases (issue 63)
  async execute(ctx: ExecutionContext) {
    const task = taskOf(ctx.node);
    const policy = policyFromSpec(spec(ctx.node.step).policy);
    // A task with its own environment is certified in its image, on the tree an attempt starts from.
    const start = startingPoint(ctx);
    if (!start.ok) return start;
    const point = start.value;
    const tree = point.tree;
    const configured = sandboxFor(ctx.node, spec(ctx.node.step));
    if (!configured.ok) return err({ reason: 'infra', message: configured.error });
    // The reference solution runs as an attempt does; the verifier as the task's verifier phase says.
    const settings = inEnvironment(configured.value, point.environment, task);
    const verifierSettings = verifierPhase(configured.value, point.environment, task, spec(ctx.node.step).strict_verifier === true);
    if (point.environment && settings.backend !== 'docker') {
      return err({
        reason: 'refused',
        message: `task ${task.id} runs in the image its environment step built: give step ${ctx.node.step.name} sandbox: { backend: docker }`,
      });
    }
    const staged = (path: string): OutputEntry | undefined => ctx.files.find((f) => f.path === path)?.entry;
    const root = join(ctx.workDir, 'surfaces');
    const { installedAnchors, scanSurfacesInterruptibly, surfaceFromDir, surfaceFromStoredTree } = await import('./certify/scan.js');

    // 1. The static scan of every surface the agent can see.
    const surfaces: Surface[] = [{ kind: 'prompt', name: 'prompt', files: [{ path: 'prompt', text: task.prompt }] }];
    // Every surface an arm adds: its files and directories (recursively), prompt additions,
    // environment values, and its MCP servers' commands, arguments and environment.
    for (const [name, arm] of Object.entries(armsOf(ctx.node))) {
      const files: { path: string; text: string }[] = [];
      for (const [dest, src] of Object.entries(arm.files ?? {})) {
        const e = treatmentEntry(src, ctx.node, ctx.files, ctx.upstream);
        if (e?.type === 'file') files.push({ path: dest, text: ctx.artifacts.read(e.digest).toString('utf8') });
        else if (e?.type === 'dir') {
          const dir = join(ctx.workDir, 'treatments', name.replace(/[^A-Za-z0-9_.-]/g, '_'), dest);
          ctx.artifacts.materialize(e, dir);
          for (const f of surfaceFromDir('treatment', name, dir).files) files.push({ path: `${dest}/${f.path}`, text: f.text });
        }
      }
      const redacted = arm.restore ? ctx.upstream.find((u) => u.outputs[REDACTED.name])?.outputs[REDACTED.name] : undefined;
      if (redacted) {
        const dir = join(ctx.workDir, 'restored', name.replace(/[^A-Za-z0-9_.-]/g, '_'));
        ctx.artifacts.materialize(redacted, dir);
        files.push(...surfaceFromDir('treatment', name, dir).files);
      }
      if (arm.prompt_append) files.push({ path: 'prompt_append', text: arm.prompt_append });
      for (const [k, v] of Object.entries(arm.env ?? {})) files.push({ path: `env ${k}`, text: v });
      for (const [server, m] of Object.entries(arm.mcp_servers ?? {})) {
        files.push({
          path: `mcp_servers.${server}`,
          text: [m.command, ...(m.args ?? []), ...Object.entries(m.env ?? {}).map(([k, v]) => `${k}=${v}`)].join('\n'),
        });
      }
      if (files.length) surfaces.push({ kind: 'treatment', name: `treatment:${name}`, files });
    }
    let verifierDir: string | null = null;
    if (task.verifier.filesDir) {
      const e = staged(relative(ctx.node.step.rootDir, task.verifier.filesDir));
      if (e) {
        verifierDir = join(ctx.workDir, 'verifier');
        ctx.artifacts.materialize(e, verifierDir);
      }
    }
    const verifierFiles = verifierDir ? surfaceFromDir('tree', 'verifier', verifierDir).files : [];
    // The tree is read from the store, not written out; of its installed dependencies only a file
    // holding an anchor of a needle is kept, to be read as text.
    const interrupted = (e: unknown) => (ctx.signal.aborted ? err({ reason: 'killed' as const, message: 'interrupted' }) : Promise.reject(e));
    let findings: Finding[];
    try {
      const anchors = installedAnchors(task, verifierFiles);
      surfaces.splice(1, 0, await surfaceFromStoredTree('tree', tree.digest, ctx.artifacts, { anchors, signal: ctx.signal }));
      findings = await scanSurfacesInterruptibly({ task, surfaces, extraWords: policy.words, verifierFiles }, ctx.signal);
    } catch (e) {
      return interrupted(e);
    }
    const failing = failingFindings(findings, policy);
    const { factProblems } = await import('./certify/facts.js');
    const memoryReasons = factProblems(task.facts ?? [], surfaces, spec(ctx.node.step).memory_arms ?? []);

    // 2. The discrimination check, `repeats` times, through the same verifier path as verify.
    const checks = { nop: [] as boolean[], oracle: [] as boolean[] };
    // Every check's full verifier output (nop-1.log, oracle-1.log, ...): why a task was rejected is readable.
    const verifierLogs = join(ctx.workDir, VERIFIER_LOGS.name);
    mkdirSync(verifierLogs, { recursive: true });
    let oracleOutput = '';
    // The tests that failed with the reference solution (first check), named in the reason.
    let oracleFailing: string[] = [];
    const reasons: string[] = [];
    const canaries: CanaryCalibrations = {};
    let solutionWritesOwned = false;
    // What the reference solution changed outside the workspace: verify carries the workspace only.
    let solutionOutside: string[] = [];
    // The static scan rejects a task at once: the discrimination check (minutes of verifier runs) is not run for it.
    const scanRejects = failing.length > 0;
    // The pristine tree the verifier restores what it owns from: written out only for the check.
    const treeDir = join(root, 'tree');
    try {
      if (!scanRejects) await ctx.artifacts.materializeAsync(tree, treeDir, ctx.signal);
      for (let i = 0; i < (scanRejects ? 0 : policy.repeats); i++) {
        for (const agent of ['nop', 'oracle'] as const) {
          const scratch = join(ctx.workDir, `check-${agent}-${i}`);
          const ws = join(scratch, 'ws');
          await ctx.artifacts.materializeAsync(tree, ws, ctx.signal);
          if (agent === 'oracle') {
            const before = i === 0 ? await snapshot(ws) : undefined;
            const applied = await applySolution(task, ws, settings);
            if (!applied.ok) {
              reasons.push(`oracle: ${applied.error}`);
              checks.oracle.push(false);
              continue;
            }
            if (i === 0) solutionOutside = applied.value;
            // Verify keeps the verifier's own files pristine: a solution that needs to change them cannot pass there.
            if (before) {
              const changed = diffSnapshots(before, await snapshot(ws));
              const owned = [...Object.keys(changed.written), ...changed.deleted].filter(verifierOwned(task));
              if (owned.length) {
                solutionWritesOwned = true;
                reasons.push(
                  `the reference solution writes files the verifier owns (${owned.slice(0, 5).join(', ')}): verify uses the pristine ones; list them in allowed_paths (explicitly, not **) if attempts may write them`,
                );
              }
            }
          }
          // The first run with the reference solution also calibrates the canaries: each must fail there.
          const calibrate = agent === 'oracle' && i === 0;
          const outcome = await runVerifier({
            task,
            workspace: ws,
            verifierFiles: verifierDir,
            scratch,
            sandbox: verifierSandbox(verifierSettings),
            signal: ctx.signal,
            node: ctx.node.id,
            canary: calibrate ? { mode: 'calibrate' } : undefined,
            scoring: scoringOf(spec(ctx.node.step)),
            pristine: treeDir,
          });
          if (!outcome.ok) return err({ reason: 'infra', message: `infrastructure: ${describeVerifierFault(outcome.error)}` });
          if (calibrate) Object.assign(canaries, calibrationsOf(outcome.value));
          // No verdict (e.g. no reward written) is not a pass, with the reason said.
          checks[agent].push(outcome.value.pass === true);
          if (outcome.value.pass === null) reasons.push(`${agent} check ${i + 1}: the verifier gave no verdict: ${outcome.value.error ?? 'unknown'}`);
          writeFileSync(join(verifierLogs, `${agent}-${i + 1}.log`), outcome.value.transcript);
          if (agent === 'oracle') oracleOutput += outcome.value.transcript;
          if (agent === 'oracle' && i === 0)
            oracleFailing = outcome.value.evidence
              .filter((e) => e.status === 'fail' || e.status === 'timeout')
              .map((e) => `${e.kind} ${e.name}${e.status === 'timeout' ? ' (timed out)' : e.reported === null ? " (not in the runner's report)" : ''}`);
          ctx.log(
            `check ${i + 1}/${policy.repeats} ${agent}: verifier ${outcome.value.pass ? 'passes' : 'fails'} (${outcome.value.evidence.map((e) => `${e.name}=${e.status}`).join(', ')})`,
          );
        }
      }
    } catch (e) {
      if (ctx.signal.aborted) return err({ reason: 'killed', message: 'interrupted' });
      return err({ reason: 'infra', message: `certification could not run: ${errorMessage(e)}` });
    }
    const { nopPasses, oraclePasses, flaky, discriminating } = discrimination(checks.nop, checks.oracle, policy.repeats);
    if (!scanRejects && nopPasses === policy.repeats) reasons.push('non-discriminating: the verifier passes on the untouched tree');
    if (!scanRejects && oraclePasses === 0 && !reasons.some((r) => r.startsWith('oracle:'))) {
      const note = networkNote(task, verifierSettings.egress, oracleOutput);
      const outside = solutionOutside.length
        ? `the reference solution also changed ${listed(solutionOutside)} outside the workspace, which a fresh verifier container does not have: a verifier that depends on state made outside the workspace cannot score attempts (build that state into the image, or have the tests make it)`
        : null;
      const failedTests = oracleFailing.length ? `: ${oracleFailing.length} failed (${listed(oracleFailing)})` : '';
      reasons.push(
        `the verifier fails with the reference solution${failedTests}${note ? ` -- ${note}` : ''}${outside ? ` -- ${outside}` : ''} (its output: pairbench show ${ctx.node.id} ${VERIFIER_LOGS.name}/oracle-1.log)`,
      );
    }
    reasons.push(...flaky);
    reasons.push(...memoryReasons);
    // A test whose canary passes even with the reference solution can never have a pass trusted (verify excludes them all).
    const unusable = discriminating ? unusableCanaries(canaries) : [];
    for (const u of unusable)
      reasons.push(
        `canary-unusable: ${u}; no pass of this test could be trusted (the code under test could force its exit code), so verify would exclude every one: end the test without an explicit exit 0`,
      );
    for (const f of failing.slice(0, 20)) reasons.push(`${f.class} in ${f.surface} ${f.path}:${f.line}: ${f.detail}${vendoredNote(f)}`);
    if (failing.length > 20) reasons.push(`... and ${failing.length - 20} more findings (every finding is in certification.json, most severe first)`);
    // What a person who judged the findings harmless pastes: the allow entries that accept exactly these.
    if (failing.length)
      reasons.push(
        `to accept these findings, paste under steps.${ctx.node.step.name}.policy.allow (and write each reason):\n${allowEntriesFor(failing).join('\n')}`,
      );
    if (scanRejects) reasons.push('the discrimination check was not run: the static scan rejects the task first');

    const count: Record<string, number> = {};
    for (const f of findings) count[f.class] = (count[f.class] ?? 0) + 1;
    const body = {
      schema_version: 1 as const,
      task: task.id,
      verdict: (discriminating && failing.length === 0 && memoryReasons.length === 0 && !solutionWritesOwned && unusable.length === 0
        ? 'certified'
        : 'rejected') as 'certified' | 'rejected',
      allowed_paths: { paths: task.allowedPaths, from: task.allowedPathsFrom ?? 'the task file' },
      // task.toml fields this task sets that pairbench does not carry out, each with why.
      ignored_task_fields: task.environment?.ignored ?? [],
      // Where the solution wrote outside the workspace (verification never sees these paths).
      solution_outside_workspace: solutionOutside,
      reasons,
      // A surface's files (its installed ones by path and digest).
      surfaces: Object.fromEntries(
        surfaces.map((s) => [
          s.name,
          sha256(canonicalJson(s.installed?.length ? { files: s.files, installed: s.installed.map((f) => [f.path, f.digest]) } : s.files)),
        ]),
      ),
      findings_count: count,
      findings: bySeverity(findings),
      // Findings an allow entry accepted, each with the entry and its reason.
      allowed: bySeverity(findings)
        .map((f) => ({ f, by: allowedBy(f, policy) }))
        .filter((x): x is { f: Finding; by: AllowEntry } => x.by !== undefined)
        .map(({ f, by }) => ({ ...f, allowed_by: by })),
      checks: { ...checks, repeats: policy.repeats, discriminating, flaky },
      canaries,
      policy,
      policy_digest: sha256(canonicalJson(policy)),
    };
    const receipt: CertificationReceipt = { ...body, receipt_digest: sha256(canonicalJson(body)) };
    const out = join(ctx.workDir, 'out');
    mkdirSync(out, { recursive: true });
    writeFileSync(join(out, CERTIFICATION.name), JSON.stringify(receipt, null, 2) + '\n');
    // What run keys on: the verdict alone, so another arm's surfaces or the policy's
    // repeats do not re-run attempts whose admission did not change.
    const verdict: CertificationVerdict = { task: task.id, verdict: receipt.verdict, reasons };
    writeFileSync(join(out, CERTIFICATION_VERDICT.name), JSON.stringify(verdict, null, 2) + '\n');
    // What verify keys on: which canaries it may trust.
    const canaryRecord: CanaryRecord = { schema_version: 1, task: task.id, tests: canaries };
    writeFileSync(join(out, CANARY.name), JSON.stringify(canaryRecord, null, 2) + '\n');
    for (const [name, c] of Object.entries(canaries)) if (!c.calibrated) ctx.log(`canary for ${name}: not usable (${c.note})`);
    ctx.log(`${task.id}: ${receipt.verdict}${reasons.length ? ': ' + reasons.join('; ') : ''}`);
    if (receipt.verdict === 'rejected')
      ctx.outcome?.(
        'rejected',
        `${reasons.slice(0, 2).join('; ')}${reasons.length > 2 ? `; ... (${reasons.length - 2} more: pairbench show ${ctx.node.id} certification.json)` : ''}`,
      );
    return ok({
      [CERTIFICATION.name]: ctx.artifacts.putPath(join(out, CERTIFICATION.name)),
      [CERTIFICATION_VERDICT.name]: ctx.artifacts.putPath(join(out, CERTIFICATION_VERDICT.name)),
      [CANARY.name]: ctx.artifacts.putPath(join(out, CANARY.name)),
      [VERIFIER_LOGS.name]: ctx.artifacts.putPath(verifierLogs),
    });
  },
};
