import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Json } from '../pipeline/canonical-json.js';
import { sha256 } from '../pipeline/digest.js';
import { err, ok, type Result } from '../pipeline/result.js';
import type { ExecutionContext, GraphNode, StepFailure, StepKind } from '../pipeline/step-kind.js';
import { artifact, jsonArtifact, readJsonArtifact } from '../pipeline/artifact.js';
import type { OutputEntry } from '../pipeline/store/cas.js';
import { checkTasks, taskMatrixSource, taskOf } from './agent-step-config.js';
import type { SandboxSettings } from './sandbox-settings.js';
import type { Task } from './task.js';
import { annotateBaseImages } from './image-annotations.js';
import { materializeStep, TREE } from './materialize.js';
import { stepOutputProblems } from './step-output-checks.js';

export const IMAGE = jsonArtifact<BuiltEnvironment, 'image.json'>(
  'image.json',
  'the image built for the task: its id and WORKDIR',
  stepOutputProblems('BuiltEnvironment'),
);
/** The image's WORKDIR: what an attempt starts from (materialize's output of the same name and meaning). */
const WORKDIR_TREE = artifact(TREE.name, "the image's WORKDIR, as the task's starting tree");
const BUILD_LOG = artifact('build.log', "the image build's log");

/**
 * `environment` (per task): the image a task's environment/Dockerfile describes, built by
 * the local engine (never pulling), as Harbor runs its tasks. Its key is the build
 * context (the materialized tree), the Dockerfile's settings and the IDs of the base
 * images (resolved by the CLI when it plans: GraphNode.annotation); its outputs are the
 * image ID and WORKDIR (image.json), the contents of WORKDIR in the image (`tree`: what
 * an attempt starts from, mounted back at WORKDIR) and the build log.
 */
export const environmentStep: StepKind = {
  name: 'environment',
  matrixSource: taskMatrixSource,
  title: { one: 'environment image', many: 'environment images' },
  // The IDs of the base images its Dockerfile builds FROM are part of the key.
  annotate: annotateBaseImages,
  outputs: () => [IMAGE, WORKDIR_TREE, BUILD_LOG],
  version: 1,
  check: (step) => checkTasks(step),
  keyConfig(node): Json {
    const env = taskOf(node).environment;
    return { dockerfile: env?.dockerfile ?? null, allow_internet: env?.allowInternet ?? false, build_timeout: env?.buildTimeoutSec ?? null };
  },
  fileInputs: () => [],
  selectUpstream: (_node, upstream) => (upstream.kind === materializeStep ? [TREE.name] : undefined),
  describeConfigField: (path) => path.join('.'),

  async execute(ctx: ExecutionContext) {
    const task = taskOf(ctx.node);
    const env = task.environment;
    if (!env)
      return err({
        reason: 'refused',
        message: `task ${task.id} has no environment/Dockerfile: an environment step builds the image of a Harbor task; remove it from this task's steps`,
      });
    const tree = ctx.upstream.find((u) => u.outputs[TREE.name])?.outputs[TREE.name];
    if (!tree) return err({ reason: 'internal', message: 'environment needs a materialize upstream (tree)' });
    const context = join(ctx.workDir, 'context');
    ctx.artifacts.materialize(tree, context);
    let dockerfile: string;
    try {
      dockerfile = readFileSync(join(context, env.dockerfile), 'utf8');
    } catch {
      return err({ reason: 'refused', message: `task ${task.id}: no ${env.dockerfile} in its environment tree` });
    }
    const log = (line: string) => writeFileSync(ctx.logFile, line + '\n', { flag: 'a' });
    const [{ dockerClient, dockerEndpoint }, { baseImages, buildImage, copyFromImage }] = await Promise.all([
      import('../sandboxes/docker-client.js'),
      import('../sandboxes/docker-build.js'),
    ]);
    const docker = dockerClient(dockerEndpoint(ctx.hostEnv));

    // The base images must be the ones the plan keyed on: a moved tag is a new key, never a silent rebuild.
    const planned = plannedBaseImages(ctx.node);
    const bases: Record<string, string> = {};
    for (const name of baseImages(dockerfile)) {
      let id: string;
      try {
        id = (await docker.getImage(name).inspect()).Id;
      } catch {
        return err({
          reason: 'infra',
          message: `task ${task.id}: base image ${name} is not in the engine; build or load it locally (docker build / docker load / docker import): pairbench never pulls`,
        });
      }
      if (planned && planned[name] !== id) {
        return err({
          reason: 'input-changed',
          input: `base image ${name}`,
          message: `task ${task.id}: base image ${name} is ${id.slice(0, 19)} now, ${planned[name] ? `${planned[name]!.slice(0, 19)} when this run was planned` : 'not resolved when this run was planned'}; run again`,
        });
      }
      bases[name] = id;
    }
    const built = await buildImage(docker, {
      context,
      dockerfile: env.dockerfile,
      network: env.allowInternet ? 'default' : 'none',
      timeoutMs: env.buildTimeoutSec * 1000,
      labels: { 'pairbench.task': task.id },
      signal: ctx.signal,
    });
    if (!built.ok) {
      log(built.error.log);
      const offline = !env.allowInternet && NETWORK_ERROR.test(built.error.log + built.error.message);
      return err({
        reason: 'exit-non-zero',
        exit_code: null,
        signal: null,
        message:
          `task ${task.id}: building environment/${env.dockerfile} failed: ${built.error.message.trim().split('\n').pop()}` +
          (offline
            ? ' -- the build needs the network, which task.toml does not allow (allow_internet = false): build offline (vendor what it downloads) or set allow_internet'
            : ''),
      });
    }
    log(built.value.log);
    const workdirTree = join(ctx.workDir, 'tree');
    const copied = await copyFromImage(docker, built.value.imageId, built.value.workdir, workdirTree);
    if (!copied.ok) return err({ reason: 'infra', message: `task ${task.id}: ${copied.error}` });
    const out = join(ctx.workDir, 'out');
    mkdirSync(out, { recursive: true });
    const image: BuiltEnvironment = {
      image_id: built.value.imageId,
      workdir: built.value.workdir,
      base_images: bases,
      dockerfile_sha256: sha256(dockerfile),
      network: env.allowInternet ? 'default' : 'none',
    };
    writeFileSync(join(out, IMAGE.name), JSON.stringify(image, null, 2) + '\n');
    writeFileSync(join(out, BUILD_LOG.name), built.value.log);
    log(`${task.id}: built ${built.value.imageId} (WORKDIR ${built.value.workdir})`);
    return ok({
      [IMAGE.name]: ctx.artifacts.putPath(join(out, IMAGE.name)),
      [WORKDIR_TREE.name]: ctx.artifacts.putPath(workdirTree),
      [BUILD_LOG.name]: ctx.artifacts.putPath(join(out, BUILD_LOG.name)),
    });
  },
};

/** What an environment step built. */
export interface BuiltEnvironment {
  image_id: string;
  workdir: string;
  base_images: Record<string, string>;
  dockerfile_sha256: string;
  network: 'none' | 'default';
}

/** The engine's words for a build or a test that tried to reach the network without one. */
export const NETWORK_ERROR =
  /could not resolve|bad address|temporary failure in name resolution|network is unreachable|name or service not known|failed to establish a new connection|no route to host|getaddrinfo|ENOTFOUND|EAI_AGAIN|fetch failed/i;

function plannedBaseImages(node: GraphNode): Record<string, string | null> | null {
  const a = node.annotation as { base_images?: Record<string, string | null> } | undefined;
  return a?.base_images ?? null;
}

/** The outputs a step that runs in a task's environment selects from it. */
export const ENVIRONMENT_OUTPUTS = [WORKDIR_TREE.name, IMAGE.name];

/** Where an attempt or a verification starts: a tree, and the image built for it when there is one. */
export interface StartingPoint {
  tree: OutputEntry;
  environment: BuiltEnvironment | null;
}

/**
 * Where an attempt (or a verification) starts: the environment's tree and image when the
 * step has an environment upstream, else materialize's tree in the configured sandbox.
 */
export function startingPoint(ctx: Pick<ExecutionContext, 'node' | 'upstream' | 'artifacts'>): Result<StartingPoint, StepFailure> {
  const withImage = ctx.upstream.find((u) => u.outputs[IMAGE.name] && u.outputs[WORKDIR_TREE.name]);
  if (withImage) {
    const environment = readJsonArtifact(IMAGE, withImage.outputs, (d) => ctx.artifacts.read(d), withImage.node)!;
    if (!environment.ok) return err({ reason: 'store-error', message: environment.error });
    return ok({ tree: withImage.outputs[WORKDIR_TREE.name]!, environment: environment.value });
  }
  const tree = ctx.upstream.find((u) => u.outputs[TREE.name])?.outputs[TREE.name];
  return tree
    ? ok({ tree, environment: null })
    : err({ reason: 'internal', message: `${ctx.node.step.name} needs a materialize (or environment) upstream with the task's tree` });
}

/** A step's sandbox with the task's environment applied: its image, its WORKDIR, and what task.toml sets that the step leaves open. */
export function inEnvironment<
  S extends Required<Pick<SandboxSettings, 'backend'>> & {
    image: string | null;
    egress: string;
    allow: readonly string[];
    resources: { cpus?: number; memory_mb?: number };
  },
>(settings: S, environment: BuiltEnvironment | null, task: Task, phase: 'agent' | 'verifier' = 'agent'): S & { workdir?: string; user?: string } {
  // SWE-bench's images expect the repository at /testbed (their editable installs point there).
  if (!environment) return task.workdir && settings.backend === 'docker' ? { ...settings, workdir: task.workdir } : settings;
  const t = task.environment;
  // The phase's network mode (Harbor: the verifier may set its own): no-network runs offline whatever the step
  // allows; allowlist adds the task's hosts to the step's; public leaves the cohort's egress (recorded).
  const network = (phase === 'verifier' ? t?.verifierNetwork : null) ?? t?.network ?? 'public';
  const hosts = phase === 'verifier' && t?.verifierNetwork ? t.verifierAllowedHosts : (t?.allowedHosts ?? []);
  return {
    ...settings,
    image: environment.image_id,
    workdir: environment.workdir === '/' ? '/work' : environment.workdir,
    egress: network === 'no-network' ? 'none' : network === 'allowlist' ? 'allowlist' : settings.egress,
    allow: network === 'allowlist' ? [...new Set([...settings.allow, ...hosts])] : settings.allow,
    // Harbor runs the verifier as the task's verifier user, else the image's own user (root when it sets none).
    ...(phase === 'verifier' ? { user: t?.verifierUser ?? 'root' } : {}),
    resources: {
      ...settings.resources,
      ...(settings.resources.cpus === undefined && t?.cpus ? { cpus: t.cpus } : {}),
      ...(settings.resources.memory_mb === undefined && t?.memoryMb ? { memory_mb: t.memoryMb } : {}),
    },
  };
}

/**
 * The verifier's sandbox: the task's verifier phase (Harbor: its network mode, as root by
 * default), or with `strict` offline as the agent's unprivileged user whatever task.toml says.
 */
export function verifierPhase<S extends Parameters<typeof inEnvironment>[0]>(
  settings: S,
  environment: BuiltEnvironment | null,
  task: Task,
  strict: boolean,
): S & { workdir?: string; user?: string } {
  if (!strict) return inEnvironment(settings, environment, task, 'verifier');
  return { ...inEnvironment(settings, environment, task, 'agent'), egress: 'none', allow: [] };
}

/** A failure message's hint when the task says it needs the network and this step gives it none. */
export function networkNote(task: Task, egress: string, output: string): string | null {
  const declared = task.environment?.allowInternet === true;
  const tried = NETWORK_ERROR.test(output);
  if (egress !== 'none' || (!declared && !tried)) return null;
  return declared
    ? `task.toml gives the task the network (network mode ${task.environment!.network}) and this step runs with egress none${tried ? ', and the output shows a network failure' : ''}: a phase that downloads fails offline (vendor it into the image, or give the step an egress allowlist naming the hosts)`
    : `the output shows an attempt to reach the network under egress none (${NETWORK_ERROR.exec(output)![0]}): the task needs the network in this phase`;
}
