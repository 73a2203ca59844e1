import { existsSync } from 'node:fs';
import { isAbsolute, join, normalize } from 'node:path';
import { globSync, isDynamicPattern } from './lazy-glob.js';
import { sha256File, type Sha256 } from './digest.js';
import type { Diagnostic } from './diagnostic.js';
import { fieldName } from './config/yaml-source.js';
import { err, errorMessage, ok, type Result } from './result.js';
import type { GraphNode, ResolvedInput } from './step-kind.js';
import { Cas } from './store/cas.js';
import type { StatCache } from './store/stat-cache.js';

export type { ResolvedInput } from './step-kind.js';

/**
 * Expands a node's declared file inputs and hashes them. Globs and digests are
 * memoised for the life of the process: many nodes share the same inputs.
 */
export class InputResolver {
  private readonly globs = new Map<string, string[]>();
  private readonly resolved = new Map<string, ResolvedInput>();

  constructor(
    private readonly rootDir: string,
    /** Digests remembered across runs by stat: unchanged inputs are not read again. */
    private readonly statCache?: StatCache,
  ) {}

  resolve(node: GraphNode): Result<ResolvedInput[], Diagnostic> {
    const out = new Map<string, ResolvedInput>();
    for (const spec of node.kind.fileInputs(node)) {
      // Built only on error: locating a field walks the YAML tree.
      const where = () => ({ field: fieldName([...node.step.path, ...spec.field]), location: node.step.source.locate([...node.step.path, ...spec.field]) });
      const pattern = spec.pattern;
      // Relative paths (also ../ ones: a cohort file may sit beside its data) are staged by
      // content and keyed by that relative path, so keys stay the same on every machine.
      if (isAbsolute(pattern)) {
        return err({ ...where(), message: `input "${pattern}" is an absolute path; inputs are paths relative to the config file's directory` });
      }
      let paths = this.globs.get(pattern);
      if (!paths) {
        paths = isDynamicPattern(pattern)
          ? globSync(pattern, { cwd: this.rootDir, onlyFiles: true, dot: true }).sort()
          : existsSync(join(this.rootDir, pattern))
            ? [normalize(pattern).replaceAll('\\', '/').replace(/\/$/, '')]
            : [];
        this.globs.set(pattern, paths);
      }
      if (paths.length === 0) {
        return err({
          ...where(),
          message: `node ${node.id}: input "${pattern}" ${isDynamicPattern(pattern) ? 'matches no file' : 'does not exist'}`,
          hint: 'create it, or fix the path (relative to the config file)',
        });
      }
      for (const path of paths) {
        if (out.has(path)) continue;
        const abs = join(this.rootDir, path);
        // One object per input path, shared by every node that reads it.
        let resolved = this.resolved.get(abs);
        if (!resolved) {
          try {
            resolved = { path, abs, ...Cas.hashPath(abs, this.fileDigest) };
          } catch (e) {
            return err({ ...where(), message: `cannot read input ${path}: ${errorMessage(e)}` });
          }
          this.resolved.set(abs, resolved);
        }
        out.set(path, resolved);
      }
    }
    return ok([...out.values()]);
  }

  private readonly fileDigest = (path: string) => (this.statCache ? this.statCache.digestOf(path) : sha256File(path));

  /** The input's digest now, past the per-run memo (an unchanged stat still answers from the stat cache): did it change while the node ran? */
  rehash(input: ResolvedInput): Sha256 | undefined {
    try {
      return Cas.hashPath(input.abs, this.fileDigest).digest;
    } catch {
      return undefined;
    }
  }
}
