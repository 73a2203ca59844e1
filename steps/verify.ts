import { mkdirSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import type { Json } from '../pipeline/canonical-json.js';
import type { StepConfig } from '../pipeline/config/load.js';
import { err, errorMessage, ok } from '../pipeline/result.js';
import type { ExecutionContext, FileInputSpec, StepKind } from '../pipeline/step-kind.js';
import { sandboxBackend } from '../sandboxes/index.js';
import type { ExecResult, Sandbox } from '../sandboxes/sandbox.js';
import { checkTasks, taskOf } from './agent-step-config.js';
import { sandboxOf, type SandboxSettings } from './run.js';
import { applyChanges, openForSandbox, type WorkspaceChanges } from './workspace.js';

interface VerifySpec {
  sandbox?: SandboxSettings;
}

const spec = (step: StepConfig) => step.spec as unknown as VerifySpec;
const VERIFIER_INSIDE = '/verifier';

export interface TestEvidence {
  name: string;
  kind: 'command' | 'fail_to_pass' | 'pass_to_pass';
  status: 'pass' | 'fail' | 'timeout';
  exit_code: number | null;
  duration_ms: number;
  output_tail: string;
}

function tail(s: string, n = 40): string {
  return s.trimEnd().split('\n').slice(-n).join('\n');
}

/**
 * `verify` (task x arm x rep): the attempt's changes applied to a fresh copy of the
 * tree, in a fresh sandbox the agent never saw, with the hidden verifier files added.
 * The verdict comes from exit codes only (never from text the agent could forge);
 * FAIL_TO_PASS and PASS_TO_PASS must both hold.
 */
export const verifyStep: StepKind = {
  name: 'verify',
  version: 1,
  check: (step) => checkTasks(step),
  keyConfig(node): Json {
    const task = taskOf(node);
    return {
      command: task.verifier.command,
      fail_to_pass: task.verifier.failToPass,
      pass_to_pass: task.verifier.passToPass,
      timeout: task.verifier.timeoutSec,
      sandbox: sandboxOf(spec(node.step)),
    } as unknown as Json;
  },
  fileInputs(node): FileInputSpec[] {
    const task = taskOf(node);
    if (!task.verifier.filesDir) return [];
    return [{ pattern: relative(node.step.rootDir, task.verifier.filesDir), field: ['tasks'] }];
  },
  selectUpstream: (_node, upstream) => (upstream.kind.name === 'materialize' ? ['tree'] : upstream.kind.name === 'run' ? ['changes.json', 'changed'] : undefined),
  describeConfigField: (path) => (path[0] === 'command' || path[0] === 'fail_to_pass' || path[0] === 'pass_to_pass' ? `verifier ${path.join('.')}` : path.join('.')),

  async execute(ctx: ExecutionContext) {
    const task = taskOf(ctx.node);
    const settings = sandboxOf(spec(ctx.node.step));
    const tree = ctx.upstream.find((u) => u.outputs['tree'])?.outputs['tree'];
    const run = ctx.upstream.find((u) => u.outputs['changes.json']);
    if (!tree || !run) return err({ reason: 'internal', message: 'verify needs a materialize upstream (tree) and a run upstream (changes)' });
    const ws = join(ctx.workDir, 'ws');
    ctx.artifacts.materialize(tree, ws);
    const changes = JSON.parse(ctx.artifacts.read(run.outputs['changes.json']!.digest).toString('utf8')) as WorkspaceChanges;
    const changedDir = join(ctx.workDir, 'changed');
    ctx.artifacts.materialize(run.outputs['changed']!, changedDir);
    applyChanges(changes, changedDir, ws);
    openForSandbox(ws);

    const staged = ctx.files[0];
    const sandboxed = settings.backend !== 'local';
    let verifierHost: string | undefined;
    if (staged) {
      verifierHost = join(ctx.workDir, 'verifier');
      ctx.artifacts.materialize(staged.entry, verifierHost);
      openForSandbox(verifierHost);
    }
    const verifierDir = verifierHost ? (sandboxed ? VERIFIER_INSIDE : verifierHost) : '';
    let sandbox: Sandbox | undefined;
    try {
      const backend = await sandboxBackend(settings.backend);
      const created = await backend.create({
        workspace: ws,
        mounts: verifierHost && sandboxed ? [{ host: verifierHost, target: VERIFIER_INSIDE, readOnly: true }] : [],
        ...(settings.image ? { image: settings.image } : {}),
        egress: { mode: settings.egress },
        env: { PATH: '/usr/local/bin:/usr/bin:/bin', LANG: 'C.UTF-8', VERIFIER_DIR: verifierDir, HOME: sandboxed ? '/tmp' : ctx.workDir },
        labels: { 'pairbench.node': ctx.node.id },
      });
      if (!created.ok) return err({ reason: 'infra', message: `infrastructure: verifier sandbox: ${created.error.message}` });
      sandbox = created.value;
      const tests: [TestEvidence['kind'], string, string][] = [
        ...(task.verifier.command ? [['command', 'verifier', task.verifier.command] as [TestEvidence['kind'], string, string]] : []),
        ...Object.entries(task.verifier.failToPass).map(([n, c]) => ['fail_to_pass', n, c] as [TestEvidence['kind'], string, string]),
        ...Object.entries(task.verifier.passToPass).map(([n, c]) => ['pass_to_pass', n, c] as [TestEvidence['kind'], string, string]),
      ];
      const evidence: TestEvidence[] = [];
      for (const [kind, name, command] of tests) {
        const r: ExecResult = await sandbox.exec(['sh', '-c', command], { timeoutMs: task.verifier.timeoutSec * 1000, signal: ctx.signal });
        evidence.push({
          name,
          kind,
          status: r.timedOut ? 'timeout' : r.exitCode === 0 ? 'pass' : 'fail',
          exit_code: r.exitCode,
          duration_ms: r.durationMs,
          output_tail: tail(`${r.stdout}\n${r.stderr}`),
        });
      }
      const pass = evidence.length > 0 && evidence.every((e) => e.status === 'pass');
      const outDir = join(ctx.workDir, 'out');
      mkdirSync(outDir, { recursive: true });
      const verdict = {
        schema_version: 1,
        task: task.id,
        node: ctx.node.id,
        pass,
        fail_to_pass: Object.fromEntries(evidence.filter((e) => e.kind === 'fail_to_pass').map((e) => [e.name, e.status])),
        pass_to_pass: Object.fromEntries(evidence.filter((e) => e.kind === 'pass_to_pass').map((e) => [e.name, e.status])),
        command: evidence.find((e) => e.kind === 'command')?.status ?? null,
        sandbox: { backend: sandbox.receipt().backend, isolation: sandbox.receipt().isolation, image_id: sandbox.receipt().image_id },
      };
      writeFileSync(join(outDir, 'verdict.json'), JSON.stringify(verdict, null, 2) + '\n');
      writeFileSync(join(outDir, 'evidence.json'), JSON.stringify(evidence, null, 2) + '\n');
      writeFileSync(ctx.logFile, `${ctx.node.id}: ${pass ? 'PASS' : 'FAIL'} (${evidence.map((e) => `${e.name}=${e.status}`).join(', ')})\n`, { flag: 'a' });
      return ok({ 'verdict.json': ctx.artifacts.putPath(join(outDir, 'verdict.json')), 'evidence.json': ctx.artifacts.putPath(join(outDir, 'evidence.json')) });
    } catch (e) {
      return err({ reason: 'infra', message: `verifier could not run: ${errorMessage(e)}` });
    } finally {
      await sandbox?.close();
    }
  },
};
