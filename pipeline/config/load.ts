import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, relative, resolve } from 'node:path';
import { globSync, isDynamicPattern } from '../lazy-glob.js';
import type { Diagnostic } from '../diagnostic.js';
import { err, errorMessage, ok, type Result } from '../result.js';
import { markValidatedWithFile, validateAgainstSchema, type SchemaName } from './schema-validate.js';
import { YamlSource, type FieldPath } from './yaml-source.js';

export interface MatrixDimension {
  name: string;
  values: string[];
  /** Written as a count (`rep: 3`): its values are indices 1..N, repetitions of the same thing. */
  repetition?: boolean;
  /**
   * Written as a source (`task: {from: tasks, select: ...}`): its values are drawn by the step's
   * kind (StepKind.matrixSource) when the graph is built, and are empty until then.
   */
  source?: Record<string, unknown>;
}

/** One step as written, with where it was written. */
export interface StepConfig {
  name: string;
  kind: string;
  needs: string[];
  matrix: MatrixDimension[];
  /** The whole step mapping; the step kind reads its own fields from it. */
  spec: Record<string, unknown>;
  source: YamlSource;
  path: FieldPath;
  /** Directory of the main config file: relative paths in any step are relative to it. */
  rootDir: string;
  /** The main config file. */
  configFile: string;
}

export interface BenchConfig {
  configFile: string;
  /** Directory of the config file: every relative path in the config is relative to it. */
  rootDir: string;
  storeDir: string;
  maxStoreBytes: number;
  concurrency: { global: number; kinds: Record<string, number> };
  /** The remote cache tier (`cache:`), when configured. */
  cache?: RemoteCacheConfig;
  steps: StepConfig[];
}

export interface RemoteCacheConfig {
  remote: string;
  mode: 'read-write' | 'read-only';
  /** Host variable holding the Authorization header value. */
  auth_env?: string;
  /** Host variable holding the signing keys, "id:secret[,id:secret...]": the first signs, all verify. */
  key_env?: string;
}

export interface LoadOptions {
  /** Overrides `store.path`. */
  storeDir?: string;
  /** Overrides `cache.remote` (and `cache.mode` when given). */
  remoteCache?: string;
  remoteCacheMode?: 'read-write' | 'read-only';
}

export const DEFAULT_CONFIG_FILE = 'bench.config.yaml';
const DEFAULT_MAX_STORE_BYTES = 10 * 1024 ** 3;

export function displayPath(file: string): string {
  const rel = relative(process.cwd(), file);
  return rel && !rel.startsWith('..') && !isAbsolute(rel) ? rel : file;
}

function readYaml(file: string, schema: SchemaName): Result<{ source: YamlSource; data: Record<string, unknown> }, Diagnostic[]> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    return err([{ message: `cannot read ${displayPath(file)}: ${errorMessage(e)}`, hint: 'check the path, or pass --config FILE' }]);
  }
  const { source, diagnostics } = YamlSource.parse(displayPath(file), text);
  if (diagnostics.length) return err(diagnostics);
  const data = source.toJS();
  const problems = validateAgainstSchema(schema, data, source);
  if (problems.length) return err(problems);
  return ok({ source, data: data as Record<string, unknown> });
}

/** A size with its unit (500MB, 2GiB, 4096B) in bytes; NaN without a unit or when malformed. */
export function parseSize(v: string): number {
  const m = /^([0-9]+(?:\.[0-9]+)?)\s*(?:([kKmMgGtT])(i?)[bB]?|[bB])$/.exec(v.trim());
  if (!m) return NaN;
  const power = ' kmgt'.indexOf((m[2] || ' ').toLowerCase());
  return Math.round(Number(m[1]) * (m[3] ? 1024 : 1000) ** power);
}

/** A duration with its unit (ms, s, m, h, d), in milliseconds; NaN when it is not one. */
export function parseDuration(v: string): number {
  const m = /^([0-9]+(?:\.[0-9]+)?)\s*(ms|s|m|h|d)$/.exec(v.trim());
  if (!m) return NaN;
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[m[2] as 'ms' | 's' | 'm' | 'h' | 'd'];
  return Math.round(Number(m[1]) * unit);
}

export function loadConfig(configPath: string, options: LoadOptions = {}): Result<BenchConfig, Diagnostic[]> {
  const configFile = resolve(configPath);
  const rootDir = dirname(configFile);
  const top = readYaml(configFile, 'bench.config.schema.json');
  if (!top.ok) return top;
  const { source, data } = top.value;
  const diagnostics: Diagnostic[] = [];

  const steps: StepConfig[] = [];
  const seen = new Map<string, StepConfig>();
  const addSteps = (src: YamlSource, stepsData: Record<string, unknown>) => {
    for (const [name, raw] of Object.entries(stepsData)) {
      const spec = raw as Record<string, unknown>;
      markValidatedWithFile(spec);
      const step: StepConfig = {
        name,
        kind: spec['kind'] as string,
        needs: (spec['needs'] as string[] | undefined) ?? [],
        matrix: Object.entries((spec['matrix'] as Record<string, number | (string | number)[] | Record<string, unknown>> | undefined) ?? {}).map(
          ([dim, v]): MatrixDimension =>
            typeof v === 'number'
              ? { name: dim, values: Array.from({ length: v }, (_, i) => String(i + 1)), repetition: true }
              : Array.isArray(v)
                ? { name: dim, values: v.map(String) }
                : { name: dim, values: [], source: v },
        ),
        spec,
        source: src,
        path: ['steps', name],
        rootDir,
        configFile,
      };
      const earlier = seen.get(name);
      if (earlier) {
        const first = earlier.source.locate(earlier.path, true);
        diagnostics.push({
          field: `steps.${name}`,
          message: `step "${name}" is defined twice (first at ${first.file}:${first.line})`,
          location: src.locate(step.path, true),
          hint: 'rename one of them',
          related: [{ message: `step "${name}" is first defined here`, location: first }],
        });
        continue;
      }
      seen.set(name, step);
      steps.push(step);
    }
  };
  addSteps(source, data['steps'] as Record<string, unknown>);

  const includes = (data['include'] as string[] | undefined) ?? [];
  includes.forEach((pattern, i) => {
    const files = isDynamicPattern(pattern) ? globSync(pattern, { cwd: rootDir, absolute: true, onlyFiles: true }).sort() : [resolve(rootDir, pattern)];
    if (files.length === 0) {
      diagnostics.push({ field: `include[${i}]`, message: `"${pattern}" matches no file`, location: source.locate(['include', i]) });
    }
    for (const f of files) {
      const inc = readYaml(f, 'steps.schema.json');
      if (!inc.ok) {
        const missing = inc.error.length === 1 && !inc.error[0]!.location;
        diagnostics.push(...(missing ? [{ ...inc.error[0]!, field: `include[${i}]`, location: source.locate(['include', i]) }] : inc.error));
        continue;
      }
      addSteps(inc.value.source, inc.value.data['steps'] as Record<string, unknown>);
    }
  });

  const store = (data['store'] as { path?: string; max_size?: string } | undefined) ?? {};
  const maxStoreBytes = store.max_size === undefined ? DEFAULT_MAX_STORE_BYTES : parseSize(store.max_size);
  const conc = (data['concurrency'] as { global?: number; kinds?: Record<string, number> } | undefined) ?? {};
  const cacheSpec = data['cache'] as Partial<RemoteCacheConfig> | undefined;
  const remote = options.remoteCache ?? cacheSpec?.remote;
  const cache: RemoteCacheConfig | undefined = remote
    ? {
        remote,
        mode: options.remoteCacheMode ?? cacheSpec?.mode ?? 'read-write',
        ...(cacheSpec?.auth_env ? { auth_env: cacheSpec.auth_env } : {}),
        ...(cacheSpec?.key_env ? { key_env: cacheSpec.key_env } : {}),
      }
    : undefined;
  if (diagnostics.length) return err(diagnostics);
  return ok({
    configFile,
    rootDir,
    storeDir: options.storeDir ? resolve(options.storeDir) : resolve(rootDir, store.path ?? '.pairbench'),
    maxStoreBytes,
    concurrency: { global: conc.global ?? 4, kinds: conc.kinds ?? {} },
    ...(cache ? { cache } : {}),
    steps,
  });
}
