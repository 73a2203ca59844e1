import { dirname, join, relative } from 'node:path';
import type { JsonEncodable } from '../pipeline/canonical-json.js';
import { err, errorMessage, ok } from '../pipeline/result.js';
import type { ExecutionContext, FileInputSpec, GraphNode, StepKind } from '../pipeline/step-kind.js';
import { taskOf } from './agent-step-config.js';
import { applySolution, CANARY, calibrationsOf, writeCanaries } from './canary-calibration.js';
import { ENVIRONMENT_OUTPUTS, environmentStep, inEnvironment, startingPoint, verifierPhase } from './environment.js';
import { sandboxFor, sandboxOf } from './run.js';
import { TREE } from './materialize.js';
import { specOf } from './step-spec.js';
import type { CanaryCalibrations } from './verifier-canary.js';
import { describeVerifierFault, runVerifier, scoringOf, verifierSandbox } from './verifier-run.js';
import { annotateVerifierEnvironment } from './host-paths.js';

/**
 * `calibrate` (per task, a checkpoint a verify step adds for the tasks no certify step covers):
 * the canaries of the task's verifier calibrated on the reference solution, so verify's trust in
 * a pass never depends on a `needs:` line. Its node's step is the verify step (its sandbox, its
 * scoring); its output is what certify's canary.json is.
 */
const verifySpec = (node: GraphNode) => specOf(node.step, 'verify');

export const calibrateStep: StepKind = {
  name: 'calibrate',
  title: { one: 'canary calibration', many: 'canary calibrations' },
  outputs: () => [CANARY],
  sandboxed: true,
  // Its sandbox is its verify step's: the image a per-task template names is part of the key.
  annotate: annotateVerifierEnvironment,
  version: 1,
  keyConfig(node): JsonEncodable {
    const task = taskOf(node);
    const s = verifySpec(node);
    return {
      solution: { patch: task.solution.patch, script: task.solution.script ? relative(node.step.rootDir, task.solution.script) : null },
      verifier: {
        command: task.verifier.command,
        fail_to_pass: task.verifier.failToPass,
        patch: task.verifier.patch,
        result: task.verifier.result,
        timeout: task.verifier.timeoutSec,
        runner: task.verifier.runner ?? null,
      },
      scoring: scoringOf(s),
      ...(s.strict_verifier ? { strict_verifier: true } : {}),
      ...(task.environment ? { environment: task.environment } : {}),
      ...(task.workdir ? { workdir: task.workdir } : {}),
      sandbox: sandboxOf(s),
    };
  },
  fileInputs(node): FileInputSpec[] {
    const task = taskOf(node);
    const out: FileInputSpec[] = [];
    if (task.verifier.filesDir) out.push({ pattern: relative(node.step.rootDir, task.verifier.filesDir), field: ['tasks'] });
    if (task.solution.script) out.push({ pattern: relative(node.step.rootDir, dirname(task.solution.script)), field: ['tasks'] });
    return out;
  },
  selectUpstream: (_node, upstream) => (upstream.kind === environmentStep ? ENVIRONMENT_OUTPUTS : [TREE.name]),

  async execute(ctx: ExecutionContext) {
    const task = taskOf(ctx.node);
    const s = verifySpec(ctx.node);
    const start = startingPoint(ctx);
    if (!start.ok) return start;
    const point = start.value;
    const configured = sandboxFor(ctx.node, s);
    if (!configured.ok) return err({ reason: 'infra', message: configured.error });
    const settings = inEnvironment(configured.value, point.environment, task);
    const verifierSettings = verifierPhase(configured.value, point.environment, task, s.strict_verifier === true);
    const untrusted = (note: string): CanaryCalibrations =>
      Object.fromEntries(Object.keys(task.verifier.failToPass).map((name) => [name, { targets: [], calibrated: false, note }]));
    const ws = join(ctx.workDir, 'ws');
    ctx.artifacts.materialize(point.tree, ws);
    const applied = await applySolution(task, ws, settings);
    if (!applied.ok) {
      ctx.log(`no calibration: ${applied.error}`);
      return ok(writeCanaries(ctx, task.id, untrusted(`the canary could not be calibrated: ${applied.error}`)));
    }
    let verifierDir: string | null = null;
    const staged = task.verifier.filesDir ? ctx.files.find((f) => f.path === relative(ctx.node.step.rootDir, task.verifier.filesDir!)) : undefined;
    if (staged) {
      verifierDir = join(ctx.workDir, 'verifier');
      ctx.artifacts.materialize(staged.entry, verifierDir);
    }
    try {
      const outcome = await runVerifier({
        task,
        workspace: ws,
        verifierFiles: verifierDir,
        scratch: ctx.workDir,
        sandbox: verifierSandbox(verifierSettings),
        signal: ctx.signal,
        node: ctx.node.id,
        canary: { mode: 'calibrate' },
        scoring: scoringOf(s),
      });
      if (!outcome.ok) return err({ reason: 'infra', message: `infrastructure: ${describeVerifierFault(outcome.error)}` });
      const tests = calibrationsOf(outcome.value);
      for (const [name, c] of Object.entries(tests)) ctx.log(`canary for ${name}: ${c.calibrated ? 'calibrated' : `not usable (${c.note})`}`);
      return ok(writeCanaries(ctx, task.id, tests));
    } catch (e) {
      return err({ reason: 'infra', message: `calibration could not run: ${errorMessage(e)}` });
    }
  },
};
