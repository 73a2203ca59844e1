import { existsSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { displayPath } from '../../pipeline/config/load.js';
import type { Diagnostic } from '../../pipeline/diagnostic.js';
import { err, errorMessage, ok, type Result } from '../../pipeline/result.js';
import type { Task } from '../task.js';
import { isTomlTable, locateTomlKey, parseToml, type TomlTable } from './toml.js';

/** Where a Harbor task's starting tree lives: a dataset repository, a full commit, and the task's `environment/` inside it. */
export interface HarborTree {
  /** The git repository holding the dataset (a path or URL, as `git clone` takes it). */
  source: string;
  /** Full 40-hex commit id. */
  commit: string;
  /** Path of this task's environment directory inside that repository, e.g. `tasks/<id>/environment`. */
  subdir: string;
}

const FULL_SHA = /^[0-9a-f]{40}$/;
const TASK_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;
/** Harbor's verifier entrypoint, run from the hidden tests directory mounted at $VERIFIER_DIR. */
export const HARBOR_VERIFIER_COMMAND = 'bash "$VERIFIER_DIR/test.sh"';
const DEFAULT_TIMEOUT_SEC = 600;
const NETWORK_MODES = ['public', 'no-network', 'allowlist'] as const;

/** task.toml fields Harbor defines that pairbench does not carry out, with why (certify lists those a task sets). */
const NOT_HONOURED: Record<string, string> = {
  'environment.docker_image': 'the image is built from environment/Dockerfile by the environment step (a prebuilt image is not pulled)',
  'environment.storage': 'disk quotas are not enforced by the sandboxes',
  'environment.storage_mb': 'disk quotas are not enforced by the sandboxes',
  'environment.gpus': 'GPUs are not passed to sandboxes',
  'environment.gpu_types': 'GPUs are not passed to sandboxes',
  'environment.tpu': 'TPUs are not passed to sandboxes',
  'environment.mcp_servers': "MCP servers come from the cohort's arms, not the task (a treatment is what an arm adds)",
  'environment.env': 'the environment of attempts comes from the cohort (arms env), so that every arm runs alike',
  'environment.skills_dir': 'skills are a treatment: give them through an arm',
  'environment.healthcheck': 'the sandbox is started fresh per attempt; no service is health-checked',
  'environment.os': 'sandboxes are Linux',
  'environment.workdir': "the workspace is the image's WORKDIR",
  'agent.user': "the agent runs as the sandbox's unprivileged user",
  'agent.network_mode': "the agent's network is the cohort's egress setting (recorded per attempt)",
  'agent.allowed_hosts': "the agent's network is the cohort's egress setting (recorded per attempt)",
  'verifier.environment_mode': "the verifier always runs in a fresh sandbox of the task's image with the attempt's changes (never the agent's live container)",
  'verifier.environment': "the verifier always runs in a fresh sandbox of the task's image with the attempt's changes",
  'verifier.collect': 'verifier artifacts beyond the reward and its output are not collected',
  'solution.env': "the reference solution runs with the sandbox's environment",
  steps: 'multi-step tasks are not run: the task is treated as its single top-level step',
  artifacts: 'task artifacts are not collected',
  multi_step_reward_strategy: 'multi-step tasks are not run',
};

function ignoredFields(config: TomlTable): { field: string; reason: string }[] {
  const out: { field: string; reason: string }[] = [];
  for (const [field, reason] of Object.entries(NOT_HONOURED)) {
    const [a, b] = field.split('.');
    const top = config[a!];
    const present = b === undefined ? top !== undefined : isTomlTable(top) && top[b] !== undefined;
    if (present) out.push({ field, reason });
  }
  return out;
}
const DEFAULT_BUILD_TIMEOUT_SEC = 600;

/** What is wrong with where a Harbor task comes from: its id, its dataset's commit, its subdirectory. */
function identityProblems(id: string, dir: string, tree: HarborTree): Diagnostic[] {
  const problems: Diagnostic[] = [];
  if (!TASK_ID.test(id)) {
    problems.push({
      field: 'id',
      message: `Harbor task "${id}" (${displayPath(dir)}): the id must match ${TASK_ID.source}`,
      hint: 'task ids name directories and store keys: letters, digits, ".", "_" and "-"',
    });
  }
  if (!FULL_SHA.test(tree.commit)) {
    problems.push({
      field: 'repo.commit',
      message: `Harbor task "${id}": commit "${tree.commit}" of ${tree.source} is not a full 40-hex commit id`,
      hint: 'pin the exact commit of the dataset repository: git rev-parse <ref>',
    });
  }
  if (!tree.subdir || tree.subdir.startsWith('/') || tree.subdir.split('/').includes('..')) {
    problems.push({
      field: 'repo.subdir',
      message: `Harbor task "${id}": subdir "${tree.subdir}" must be a relative path inside ${tree.source}`,
      hint: `e.g. tasks/${id}/environment`,
    });
  }
  return problems;
}

/** task.toml's table, or {} with the parse error among the problems (at its position). */
function parsedToml(text: string, id: string, shown: string, problems: Diagnostic[]): TomlTable {
  const parsed = parseToml(text);
  if (parsed.ok) return parsed.value;
  const p = parsed.error.position;
  problems.push({
    message: `Harbor task "${id}": invalid TOML: ${parsed.error.message}`,
    location: p ? { file: shown, ...p } : { file: shown, line: 1, column: 1, length: 1 },
  });
  return {};
}

/**
 * A Harbor (Terminal-Bench) task directory as a pairbench Task:
 * `instruction.md` is the prompt, `tests/` the hidden verifier (its `test.sh` writes
 * /logs/verifier/reward.txt or reward.json), `solution/solve.sh` the reference solution.
 * task.toml is an external format: keys we do not read are ignored, but a field we read
 * with the wrong type is an error naming the file, the task and the field.
 */
export function loadHarborTask(taskDir: string, id: string, tree: HarborTree): Result<Task, Diagnostic[]> {
  const dir = resolve(taskDir);
  const tomlFile = join(dir, 'task.toml');
  const shown = displayPath(tomlFile);
  const problems: Diagnostic[] = [];

  problems.push(...identityProblems(id, dir, tree));

  const instruction = readRequired(join(dir, 'instruction.md'), id, 'instruction.md', 'the prompt the agent is given', problems);
  if (instruction !== undefined && !instruction.trim()) {
    problems.push({
      field: 'instruction.md',
      message: `Harbor task "${id}": ${displayPath(join(dir, 'instruction.md'))} is empty`,
      hint: 'instruction.md is the prompt the agent is given',
    });
  }
  const testSh = join(dir, 'tests', 'test.sh');
  if (!isFile(testSh)) {
    problems.push({
      field: 'tests/test.sh',
      message: `Harbor task "${id}": missing tests/test.sh (looked for ${displayPath(testSh)})`,
      hint: 'tests/test.sh is the verifier: it writes /logs/verifier/reward.txt (one float) or reward.json',
    });
  }

  const text = readRequired(tomlFile, id, 'task.toml', 'the task configuration', problems);
  const config = text === undefined ? {} : parsedToml(text, id, shown, problems);

  const fields = new FieldReader(config, text ?? '', shown, id, problems);
  const metadata = fields.table('metadata');
  const verifier = fields.table('verifier');
  const category = fields.string(metadata, ['metadata', 'category']);
  const canary = fields.string(metadata, ['metadata', 'canary']);
  const timeoutSec = fields.positiveNumber(verifier, ['verifier', 'timeout_sec']);
  const agent = fields.table('agent');
  const environment = fields.table('environment');
  const agentTimeout = fields.positiveNumber(agent, ['agent', 'timeout_sec']);
  const buildTimeout = fields.positiveNumber(environment, ['environment', 'build_timeout_sec']);
  const allowInternet = fields.boolean(environment, ['environment', 'allow_internet']);
  const networkMode = fields.oneOf(environment, ['environment', 'network_mode'], NETWORK_MODES);
  const allowedHosts = fields.stringList(environment, ['environment', 'allowed_hosts']);
  const verifierNetwork = fields.oneOf(verifier, ['verifier', 'network_mode'], NETWORK_MODES);
  const verifierHosts = fields.stringList(verifier, ['verifier', 'allowed_hosts']);
  const verifierUser = fields.string(verifier, ['verifier', 'user']);
  // Harbor's default network is public; the deprecated allow_internet maps onto it when network_mode is not set.
  const network = networkMode ?? (allowInternet === false ? 'no-network' : 'public');
  const ignored = ignoredFields(config);
  const cpus = fields.positiveNumber(environment, ['environment', 'cpus'], 'a positive number of CPUs');
  const memoryMb = fields.memoryMb(environment);
  const verifierEnv = fields.stringMap(verifier, ['verifier', 'env']);

  if (problems.length || instruction === undefined) return err(problems);
  const solveSh = join(dir, 'solution', 'solve.sh');
  return ok({
    id,
    family: category ?? id,
    category: category ?? 'uncategorized',
    dir,
    file: tomlFile,
    repo: { source: tree.source, commit: tree.commit, subdir: tree.subdir },
    prompt: instruction,
    allowedPaths: ['**'],
    allowedPathsFrom:
      'the whole workspace: a Harbor task states no allowed paths and its reference solution is a script (the files the verifier owns stay protected)',
    verifier: {
      command: HARBOR_VERIFIER_COMMAND,
      failToPass: {},
      passToPass: {},
      timeoutSec: timeoutSec ?? DEFAULT_TIMEOUT_SEC,
      filesDir: join(dir, 'tests'),
      patch: null,
      result: 'reward-file',
    },
    solution: { patch: null, script: isFile(solveSh) ? solveSh : null },
    ...(isFile(join(dir, 'environment', 'Dockerfile'))
      ? {
          environment: {
            dockerfile: 'Dockerfile',
            allowInternet: network !== 'no-network',
            network,
            allowedHosts: allowedHosts ?? [],
            verifierNetwork: verifierNetwork ?? null,
            verifierAllowedHosts: verifierHosts ?? [],
            verifierUser: verifierUser ?? null,
            ignored,
            buildTimeoutSec: buildTimeout ?? DEFAULT_BUILD_TIMEOUT_SEC,
            agentTimeoutSec: agentTimeout ?? null,
            cpus: cpus ?? null,
            memoryMb: memoryMb ?? null,
            verifierEnv: verifierEnv ?? {},
          },
        }
      : {}),
    origin: shown,
    canary: canary ?? null,
  });
}

function isFile(p: string): boolean {
  try {
    return statSync(p).isFile();
  } catch {
    return false;
  }
}

function readRequired(file: string, id: string, name: string, what: string, problems: Diagnostic[]): string | undefined {
  if (!existsSync(file)) {
    problems.push({ field: name, message: `Harbor task "${id}": missing ${name} (looked for ${displayPath(file)})`, hint: `${name} is ${what}` });
    return undefined;
  }
  try {
    return readFileSync(file, 'utf8');
  } catch (e) {
    problems.push({ field: name, message: `Harbor task "${id}": cannot read ${displayPath(file)}: ${errorMessage(e)}` });
    return undefined;
  }
}

/** Reads the few task.toml fields pairbench uses; a wrong type is a diagnostic at the key's line when it can be found. */
class FieldReader {
  constructor(
    private readonly root: TomlTable,
    private readonly text: string,
    private readonly file: string,
    private readonly id: string,
    private readonly problems: Diagnostic[],
  ) {}

  table(key: string): TomlTable | undefined {
    const v = this.root[key];
    if (v === undefined) return undefined;
    if (isTomlTable(v)) return v;
    this.wrongType([key], v, 'a table');
    return undefined;
  }

  string(table: TomlTable | undefined, path: [string, string]): string | undefined {
    const v = table?.[path[1]];
    if (v === undefined) return undefined;
    if (typeof v === 'string' && v.trim()) return v;
    this.wrongType(path, v, 'a non-empty string');
    return undefined;
  }

  positiveNumber(table: TomlTable | undefined, path: [string, string], expected = 'a positive number of seconds'): number | undefined {
    const v = table?.[path[1]];
    if (v === undefined) return undefined;
    if (typeof v === 'number' && Number.isFinite(v) && v > 0) return v;
    this.wrongType(path, v, expected);
    return undefined;
  }

  oneOf<T extends string>(table: TomlTable | undefined, path: [string, string], values: readonly T[]): T | undefined {
    const v = table?.[path[1]];
    if (v === undefined) return undefined;
    if (typeof v === 'string' && (values as readonly string[]).includes(v)) return v as T;
    this.wrongType(path, v, `one of ${values.map((x) => JSON.stringify(x)).join(', ')}`);
    return undefined;
  }

  stringList(table: TomlTable | undefined, path: [string, string]): string[] | undefined {
    const v = table?.[path[1]];
    if (v === undefined) return undefined;
    if (Array.isArray(v) && v.every((x) => typeof x === 'string')) return v as string[];
    this.wrongType(path, v, 'a list of host names');
    return undefined;
  }

  boolean(table: TomlTable | undefined, path: [string, string]): boolean | undefined {
    const v = table?.[path[1]];
    if (v === undefined) return undefined;
    if (typeof v === 'boolean') return v;
    this.wrongType(path, v, 'true or false');
    return undefined;
  }

  /** [environment] memory = "4G" / "512M", or memory_mb = 4096. */
  memoryMb(table: TomlTable | undefined): number | undefined {
    const mb = this.positiveNumber(table, ['environment', 'memory_mb'], 'a positive number of MiB');
    if (mb !== undefined) return mb;
    const v = table?.['memory'];
    if (v === undefined) return undefined;
    const m = typeof v === 'string' ? /^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)i?B?\s*$/i.exec(v) : null;
    if (!m) {
      this.wrongType(['environment', 'memory'], v, 'a size such as "4G" or "512M"');
      return undefined;
    }
    const unit = { '': 1 / (1024 * 1024), K: 1 / 1024, M: 1, G: 1024, T: 1024 * 1024 }[m[2]!.toUpperCase() as '' | 'K' | 'M' | 'G' | 'T'];
    return Math.round(Number(m[1]) * unit);
  }

  stringMap(table: TomlTable | undefined, path: [string, string]): Record<string, string> | undefined {
    const v = table?.[path[1]];
    if (v === undefined) return undefined;
    if (isTomlTable(v) && Object.values(v).every((x) => typeof x === 'string')) return v as Record<string, string>;
    this.wrongType(path, v, 'a table of strings');
    return undefined;
  }

  private wrongType(path: string[], value: unknown, expected: string): void {
    const field = path.join('.');
    const at = locateTomlKey(this.text, path);
    this.problems.push({
      field,
      message: `Harbor task "${this.id}": got ${describe(value)}; expected ${expected}${at ? '' : ` (in ${this.file})`}`,
      ...(at ? { location: { file: this.file, ...at } } : {}),
    });
  }
}

function describe(v: unknown): string {
  if (Array.isArray(v)) return 'an array';
  if (v instanceof Date) return `a date (${v.toISOString()})`;
  if (isTomlTable(v)) return 'a table';
  if (typeof v === 'string') return `string ${JSON.stringify(v)}`;
  return `${typeof v} ${String(v)}`;
}
