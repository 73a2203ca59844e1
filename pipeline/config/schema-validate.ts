import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Ajv, ErrorObject, ValidateFunction } from 'ajv';
import { closest, type Diagnostic } from '../diagnostic.js';
import { lazyRequire } from '../lazy-require.js';
import { packageRoot } from '../package-root.js';
import { prebuiltValidators, validationProblems } from '../prebuilt-validators.js';
import { fieldName, type YamlSource } from './yaml-source.js';

const SCHEMA_FILES = ['bench.config.schema.json', 'steps.schema.json', 'task.schema.json'] as const;
export type SchemaName = (typeof SCHEMA_FILES)[number];

let ajv: Ajv | undefined;
const loadAjv = lazyRequire<typeof import('ajv')>('ajv');
const compiled = new Map<string, ValidateFunction>();
let prebuilt: Partial<Record<string, ValidateFunction>> | null | undefined;

/** SHA-256 over the schema files, as scripts/compile-schemas.mjs computes it. */
export function schemasDigest(): string {
  const h = createHash('sha256');
  for (const f of SCHEMA_FILES)
    h.update(f)
      .update('\0')
      .update(readFileSync(join(packageRoot(), 'schemas', f)))
      .update('\0');
  return h.digest('hex');
}

/**
 * The validators of the schema files compiled at build time (schemas/validators.generated.cjs),
 * when they were made from these very files; otherwise null, and ajv compiles them here
 * (~170 ms). A definition (of a step built by code, not loaded) is always compiled here.
 */
function configValidators(): Partial<Record<string, ValidateFunction>> | null {
  if (prebuilt === undefined) prebuilt = prebuiltValidators('validators.generated.cjs', 'schemasDigest', schemasDigest);
  return prebuilt;
}

/** `ref`: a schema file, or one of its definitions (`bench.config.schema.json#/definitions/runStep`). */
function validatorFor(ref: string): ValidateFunction {
  let v = compiled.get(ref);
  if (v) return v;
  const fast = configValidators()?.[ref];
  if (fast) {
    compiled.set(ref, fast);
    return fast;
  }
  if (!ajv) {
    // Loaded only when the build-time validators are stale (it costs ~40 ms to load, ~170 ms to compile).
    const { Ajv: AjvClass } = loadAjv();
    ajv = new AjvClass({ allErrors: true, strict: true, allowUnionTypes: true, verbose: true, inlineRefs: false });
    for (const f of SCHEMA_FILES) ajv.addSchema(JSON.parse(readFileSync(join(packageRoot(), 'schemas', f), 'utf8')));
  }
  v = ajv.getSchema(`https://pairbench.dev/schemas/${ref}`);
  if (!v) throw new Error(`no schema ${ref} in ${SCHEMA_FILES.join(', ')}`);
  compiled.set(ref, v);
  return v;
}

/**
 * Step specs validated as part of their whole config file by loadConfig: the file's schema
 * checks each step against its kind's definition, so a reader need not check it again (and
 * only definitions of hand-built steps are compiled, at run time).
 */
const validatedWithFile = new WeakSet<object>();

export function markValidatedWithFile(spec: object): void {
  validatedWithFile.add(spec);
}

export function wasValidatedWithFile(spec: object): boolean {
  return validatedWithFile.has(spec);
}

/**
 * Checks `data` against one definition of a shipped schema: a caller turns this into a type
 * guard for the type generated from that definition. Returns what is wrong, or [] when valid.
 */
export function definitionProblems(schema: SchemaName, definition: string, data: unknown): string[] {
  return validationProblems(validatorFor(`${schema}#/definitions/${definition}`), data);
}

/** Validates the parsed data of `source` against a shipped schema; errors point at the YAML. */
export function validateAgainstSchema(name: SchemaName, data: unknown, source: YamlSource): Diagnostic[] {
  const validate = validatorFor(name);
  if (validate(data)) return [];
  return selectErrors(validate.errors ?? [], data).map((e) => toDiagnostic(e, source));
}

/** JSON pointer -> path segments (unescaping ~1 then ~0 in every segment). */
export function pointerToPath(pointer: string, data: unknown): (string | number)[] {
  if (pointer === '') return [];
  const out: (string | number)[] = [];
  let cursor: unknown = data;
  for (const raw of pointer.slice(1).split('/')) {
    const seg = raw.replaceAll('~1', '/').replaceAll('~0', '~');
    const key: string | number = Array.isArray(cursor) ? Number(seg) : seg;
    out.push(key);
    cursor = cursor !== null && typeof cursor === 'object' ? (cursor as Record<string, unknown>)[seg] : undefined;
  }
  return out;
}

function typeOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
}

function valueAt(data: unknown, pointer: string): unknown {
  let cursor = data;
  for (const seg of pointerToPath(pointer, data)) {
    cursor = cursor !== null && typeof cursor === 'object' ? (cursor as Record<string | number, unknown>)[seg] : undefined;
  }
  return cursor;
}

function schemaAcceptsType(schema: unknown, t: string): boolean {
  if (typeof schema !== 'object' || schema === null) return true;
  const s = schema as { type?: string | string[]; const?: unknown; enum?: unknown[] };
  if (s.type === undefined) return true;
  const types = Array.isArray(s.type) ? s.type : [s.type];
  return types.includes(t) || (t === 'integer' && types.includes('number'));
}

/**
 * Keeps the errors a person needs: for an anyOf whose value's type picks exactly one
 * branch, that branch's errors; otherwise the single anyOf error. `if` errors are noise.
 */
function selectErrors(errors: ErrorObject[], data: unknown): ErrorObject[] {
  const dropPrefixes: string[] = [];
  const keep: ErrorObject[] = [];
  for (const e of errors) {
    if (e.keyword !== 'anyOf') continue;
    const branches = (e.schema as unknown[]) ?? [];
    const t = typeOf(valueAt(data, e.instancePath));
    const matching = branches.map((b, i) => (schemaAcceptsType(b, t) ? i : -1)).filter((i) => i >= 0);
    if (matching.length === 1) {
      // Report the chosen branch's own errors; silence the others and the anyOf summary.
      branches.forEach((_, i) => {
        if (i !== matching[0]) dropPrefixes.push(`${e.schemaPath}/${i}/`);
      });
      dropPrefixes.push(e.schemaPath + '\u0000');
    } else {
      for (let i = 0; i < branches.length; i++) dropPrefixes.push(`${e.schemaPath}/${i}/`);
    }
  }
  for (const e of errors) {
    if (e.keyword === 'if') continue;
    if (dropPrefixes.some((p) => (p.endsWith('\u0000') ? e.schemaPath === p.slice(0, -1) : e.schemaPath.startsWith(p)))) continue;
    keep.push(e);
  }
  // propertyNames reports the name's error and a summary: keep the one with the name.
  const seen = new Set<string>();
  return keep.filter((e) => {
    const id = `${e.instancePath}|${e.keyword}|${JSON.stringify(e.params)}`;
    if (seen.has(id)) return false;
    seen.add(id);
    return !(e.keyword === 'propertyNames' && keep.some((o) => o !== e && o.instancePath === e.instancePath && o.propertyName));
  });
}

function describeSchema(schema: unknown): string {
  if (typeof schema !== 'object' || schema === null) return 'a value';
  const s = schema as { type?: string | string[]; minimum?: number; const?: unknown; enum?: unknown[] };
  if (s.const !== undefined) return JSON.stringify(s.const);
  if (s.enum) return `one of ${s.enum.map((v) => JSON.stringify(v)).join(', ')}`;
  const t = Array.isArray(s.type) ? s.type.join(' or ') : (s.type ?? 'a value');
  return s.minimum !== undefined ? `${t} >= ${s.minimum}` : `${t}`;
}

function toDiagnostic(e: ErrorObject, source: YamlSource): Diagnostic {
  const data = source.toJS();
  const path = pointerToPath(e.instancePath, data);
  const got = valueAt(data, e.instancePath);
  const p = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case 'additionalProperties': {
      const key = String(p['additionalProperty']);
      const allowed = Object.keys((e.parentSchema as { properties?: object })?.properties ?? {});
      const guess = closest(key, allowed);
      return {
        field: fieldName([...path, key]),
        message: `unknown key "${key}"; expected one of: ${allowed.join(', ')}`,
        hint: guess ? `did you mean "${guess}"?` : 'remove it: unknown keys are never ignored',
        location: source.locate([...path, key], true),
      };
    }
    case 'required':
      return {
        field: fieldName(path),
        message: `missing required key "${String(p['missingProperty'])}"`,
        location: source.locate(path, true),
      };
    case 'enum':
      return {
        field: fieldName(path),
        message: `got ${JSON.stringify(got)}; expected one of: ${(p['allowedValues'] as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`,
        location: source.locate(path),
      };
    case 'const':
      return { field: fieldName(path), message: `got ${JSON.stringify(got)}; expected ${JSON.stringify(p['allowedValue'])}`, location: source.locate(path) };
    case 'type':
      return { field: fieldName(path), message: `got ${typeOf(got)}; expected ${String(p['type']).replace(',', ' or ')}`, location: source.locate(path) };
    case 'anyOf':
      return {
        field: fieldName(path),
        message: `got ${typeOf(got)} ${JSON.stringify(got)}; expected ${(e.schema as unknown[]).map(describeSchema).join(', or ')}`,
        location: source.locate(path),
      };
    default: {
      if (e.propertyName !== undefined) {
        return {
          field: fieldName([...path, e.propertyName]),
          message: `invalid name "${e.propertyName}": ${e.message ?? 'not allowed'}`,
          location: source.locate([...path, e.propertyName], true),
        };
      }
      return { field: fieldName(path), message: `got ${JSON.stringify(got)}; ${e.message ?? 'does not match the schema'}`, location: source.locate(path) };
    }
  }
}
