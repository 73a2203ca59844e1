import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type Docker from 'dockerode';
import { canonicalJson, type Json } from '../pipeline/canonical-json.js';
import type { StepConfig } from '../pipeline/config/load.js';
import { sha256 } from '../pipeline/digest.js';
import { err, errorMessage, ok, type Result } from '../pipeline/result.js';
import type { ExecutionContext, GraphNode, PreflightCheck, PreflightContext, StepFailure, StepKind } from '../pipeline/step-kind.js';
import type { OutputManifest } from '../pipeline/store/action-cache.js';
import { artifact, jsonArtifact, readJsonArtifact } from '../pipeline/artifact.js';
import type { OutputEntry } from '../pipeline/store/cas.js';
import { checkTasks, taskMatrixSource, taskOf } from './agent-step-config.js';
import type { SandboxSettings } from './sandbox-settings.js';
import type { Task } from './task.js';
import { annotateBaseImages } from './image-annotations.js';
import { materializeStep, TREE } from './materialize.js';
import { stepOutputProblems } from './step-output-checks.js';
import { renderTemplate, stepTemplate, type EnvironmentTemplate } from './environment-template.js';
import { specOf } from './step-spec.js';

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
  check: (step) => {
    const template = stepTemplate(step);
    return [...checkTasks(step), ...(template.ok ? [] : template.error)];
  },
  keyConfig(node): Json {
    const task = taskOf(node);
    const env = task.environment;
    const spec = specOf(node.step, 'environment');
    return {
      dockerfile: env?.dockerfile ?? null,
      allow_internet: env?.allowInternet ?? false,
      build_timeout: env?.buildTimeoutSec ?? null,
      // A template's text is a file input; what it is rendered with is the instance's fields and the base image (its ID: the annotation).
      ...(spec.template ? { template: spec.template, base_image: spec.base_image ?? null, fields: task.environmentFields ?? {} } : {}),
    };
  },
  fileInputs: (node) => {
    const template = specOf(node.step, 'environment').template;
    return template ? [{ pattern: template, field: ['template'] }] : [];
  },
  preflight: templateBaseImagesPresent,
  selectUpstream: (_node, upstream) => (upstream.kind === materializeStep ? [TREE.name] : undefined),
  describeConfigField: (path) => path.join('.'),

  async execute(ctx: ExecutionContext) {
    const task = taskOf(ctx.node);
    const env = task.environment;
    // The template as its key holds it (the staged file input), not as the disk has it now.
    const staged = ctx.files[0] && specOf(ctx.node.step, 'environment').template ? ctx.artifacts.read(ctx.files[0].entry.digest).toString('utf8') : undefined;
    const template = stepTemplate(ctx.node.step, staged);
    if (!template.ok) return err({ reason: 'refused', message: template.error.map((d) => d.message).join('; ') });
    if (template.value && env)
      return err({
        reason: 'refused',
        message: `task ${task.id} brings its own environment/${env.dockerfile}: a template is for tasks without one (SWE-bench records); give this task a step without template`,
      });
    if (template.value) return buildFromTemplate(ctx, task, template.value);
    if (!env)
      return err({
        reason: 'refused',
        message: `task ${task.id} has no environment/Dockerfile: an environment step builds the image of a Harbor task, or, with template, of a task without one; give the step a template or remove it from this task's steps`,
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
    const [{ dockerClient, dockerEndpoint }, { buildImage, copyFromImage }] = await Promise.all([
      import('../sandboxes/docker-client.js'),
      import('../sandboxes/docker-build.js'),
    ]);
    const docker = dockerClient(dockerEndpoint(ctx.hostEnv));

    const resolved = await resolveBaseImages(ctx.node, task, dockerfile, docker);
    if (!resolved.ok) return resolved;
    const bases = resolved.value;
    const built = await buildImage(docker, {
      context,
      dockerfile: env.dockerfile,
      network: env.allowInternet ? 'default' : 'none',
      timeoutMs: env.buildTimeoutSec * 1000,
      labels: { 'pairbench.task': task.id },
      signal: ctx.signal,
    });
    if (!built.ok) {
      ctx.log(built.error.log);
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
    ctx.log(built.value.log);
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
    ctx.log(`${task.id}: built ${built.value.imageId} (WORKDIR ${built.value.workdir})`);
    return ok({
      [IMAGE.name]: ctx.artifacts.putPath(join(out, IMAGE.name)),
      [WORKDIR_TREE.name]: ctx.artifacts.putPath(workdirTree),
      [BUILD_LOG.name]: ctx.artifacts.putPath(join(out, BUILD_LOG.name)),
    });
  },
};

/**
 * The IDs of the images `dockerfile` builds FROM, as the engine has them, which must be the
 * ones the plan keyed on: a moved tag is a new key, never a silent rebuild.
 */
async function resolveBaseImages(node: GraphNode, task: Task, dockerfile: string, docker: Docker): Promise<Result<Record<string, string>, StepFailure>> {
  const { baseImages } = await import('../sandboxes/docker-build.js');
  const planned = plannedBaseImages(node);
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
  return ok(bases);
}

/** The label that names an image built from a template by what it was built from (the rendered Dockerfile and its bases' IDs). */
const ENVIRONMENT_LABEL = 'pairbench.environment';

/** Builds of template environments under way in this process, by environment digest: instances of one environment wait for the one under way. */
const templateBuilds = new Map<string, Promise<Result<{ imageId: string; workdir: string; log: string }, StepFailure>>>();

/**
 * A task without its own Dockerfile (a SWE-bench record) in the environment the step's template
 * renders for it. Instances that render the same Dockerfile over the same base images share one
 * image: it is labelled with the digest of both, found in the engine by that label, and built
 * once (a concurrent instance of the same environment waits for that build). The starting tree
 * is materialize's (the repository at the instance's commit), mounted at the image's WORKDIR.
 */
async function buildFromTemplate(ctx: ExecutionContext, task: Task, template: EnvironmentTemplate): Promise<Result<OutputManifest, StepFailure>> {
  const tree = ctx.upstream.find((u) => u.outputs[TREE.name])?.outputs[TREE.name];
  if (!tree) return err({ reason: 'internal', message: 'environment needs a materialize upstream (tree)' });
  const rendered = renderTemplate(template, task);
  if (!rendered.ok) return err({ reason: 'refused', message: rendered.error });
  const dockerfile = rendered.value;
  const [{ dockerClient, dockerEndpoint }, { buildImage }] = await Promise.all([
    import('../sandboxes/docker-client.js'),
    import('../sandboxes/docker-build.js'),
  ]);
  const docker = dockerClient(dockerEndpoint(ctx.hostEnv));
  const bases = await resolveBaseImages(ctx.node, task, dockerfile, docker);
  if (!bases.ok) return bases;
  const digest = sha256(canonicalJson({ dockerfile, base_images: bases.value }));

  const build = async (): Promise<Result<{ imageId: string; workdir: string; log: string }, StepFailure>> => {
    try {
      const found = await docker.listImages({ filters: { label: [`${ENVIRONMENT_LABEL}=${digest}`] } });
      if (found[0]) {
        const info = await docker.getImage(found[0].Id).inspect();
        return ok({
          imageId: info.Id,
          workdir: info.Config?.WorkingDir || '/',
          log: `reused ${info.Id}: built earlier for the same environment (${digest.slice(0, 12)})`,
        });
      }
    } catch (e) {
      return err({ reason: 'infra', message: `task ${task.id}: the engine did not list its images: ${errorMessage(e)}` });
    }
    const context = join(ctx.workDir, 'context');
    mkdirSync(context, { recursive: true });
    writeFileSync(join(context, 'Dockerfile'), dockerfile);
    const built = await buildImage(docker, {
      context,
      network: 'none',
      timeoutMs: TEMPLATE_BUILD_TIMEOUT_SEC * 1000,
      labels: { [ENVIRONMENT_LABEL]: digest, 'pairbench.template': template.path },
      signal: ctx.signal,
    });
    if (!built.ok)
      return err({
        reason: 'exit-non-zero',
        exit_code: null,
        signal: null,
        message: `task ${task.id}: building the environment from ${template.path} failed: ${built.error.message.trim().split('\n').pop()}\n${built.error.log.trim().split('\n').slice(-20).join('\n')}`,
      });
    return built;
  };
  let pending = templateBuilds.get(digest);
  if (!pending) {
    templateBuilds.set(digest, (pending = build()));
    // Only a build under way is shared here; once done, the engine's label finds the image (a failed build: the next instance tries again).
    void pending.finally(() => templateBuilds.delete(digest));
  }
  const image = await pending;
  if (!image.ok) return image;
  ctx.log(`${task.id}: environment ${digest.slice(0, 12)} is ${image.value.imageId}\n${image.value.log}`);
  const out = join(ctx.workDir, 'out');
  mkdirSync(out, { recursive: true });
  const record: BuiltEnvironment = {
    image_id: image.value.imageId,
    // SWE-bench's images keep the repository at /testbed: a template that sets no WORKDIR gets the task's.
    workdir: image.value.workdir === '/' ? (task.workdir ?? '/') : image.value.workdir,
    base_images: bases.value,
    dockerfile_sha256: sha256(dockerfile),
    network: 'none',
  };
  writeFileSync(join(out, IMAGE.name), JSON.stringify(record, null, 2) + '\n');
  writeFileSync(join(out, BUILD_LOG.name), `${image.value.log}\n`);
  return ok({
    [IMAGE.name]: ctx.artifacts.putPath(join(out, IMAGE.name)),
    // The repository at the instance's commit, as materialize left it.
    [WORKDIR_TREE.name]: tree,
    [BUILD_LOG.name]: ctx.artifacts.putPath(join(out, BUILD_LOG.name)),
  });
}

/** A template's build: its own limit, as Harbor's build_timeout_sec gives a task's (SWE-bench's environment images take minutes). */
const TEMPLATE_BUILD_TIMEOUT_SEC = 3600;

/** doctor: each base image a step's template builds over is in the engine (pairbench never pulls). */
async function templateBaseImagesPresent(steps: readonly StepConfig[], { env }: PreflightContext): Promise<PreflightCheck[]> {
  const named = steps.flatMap((s) => {
    const spec = specOf(s, 'environment');
    return spec.template && spec.base_image ? [{ step: s.name, image: spec.base_image }] : [];
  });
  if (!named.length) return [];
  const { dockerClient, dockerEndpoint, imageIds } = await import('../sandboxes/docker-client.js');
  // An engine that does not answer has none of them (the docker backend's own check says why).
  const ids = await imageIds(dockerClient(dockerEndpoint(env)), [...new Set(named.map((n) => n.image))]).catch(() => new Map<string, string>());
  return named.map(({ step, image }) => {
    const id = ids.get(image);
    return {
      name: `base image ${image} (step ${step}'s template)`,
      ok: id !== undefined,
      detail: id ? `in the engine: ${id.slice(0, 19)}` : 'not in the engine',
      fix: id ? null : `build, load or import ${image} into the local engine (docker build / docker load / docker import): pairbench never pulls`,
    };
  });
}

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
