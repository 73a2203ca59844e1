/** A bundle read as one side of a comparison of runs (compare, check): its files checked against its manifest first. */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parseJsonArtifact } from '../pipeline/artifact.js';
import type { Diagnostic } from '../pipeline/diagnostic.js';
import type { RunSide } from '../stats/run-diff.js';
import { RESULTS_FILE } from '../steps/bundle-layout.js';

/** A bundle as one side of the comparison: its files checked against its manifest, its results by their descriptor. */
export async function sideOf(dir: string, label = dir): Promise<{ side: RunSide } | { problem: Diagnostic }> {
  const hint = 'give the directory pairbench export --out wrote';
  if (!existsSync(join(dir, 'manifest.json'))) return { problem: { message: `${dir} is not a bundle: it has no manifest.json`, hint } };
  const { mismatchedFiles, verifyBundle } = await import('../report/bundle.js');
  const checked = verifyBundle(dir);
  if (!checked.ok) {
    const files = mismatchedFiles(checked.error).map(({ file, how }) => `${file} ${how}`);
    return {
      problem: {
        message: `${dir} does not match its manifest.json (${files.slice(0, 5).join(', ')}${files.length > 5 ? `, and ${files.length - 5} more` : ''}): it is not the bundle that was exported`,
        hint: `run 'pairbench verify-bundle ${dir}' for every file, and export the bundle again`,
      },
    };
  }
  const results = parseJsonArtifact(RESULTS_FILE, readFileSync(join(dir, RESULTS_FILE.name), 'utf8'), dir);
  if (!results.ok) return { problem: { message: results.error, hint } };
  const r = results.value;
  return { side: { label, cohort: r.cohort, version: r.version, analysis: r.analysis, attempts: r.attempts } };
}

/**
 * The bundles under a directory `export --out` wrote: '' when it is one bundle, else each
 * export node's directory (relative, sorted), as deep as a node id goes.
 */
export function bundlesUnder(dir: string): string[] {
  if (existsSync(join(dir, 'manifest.json'))) return [''];
  const out: string[] = [];
  const walk = (rel: string, depth: number) => {
    if (depth > 4) return;
    for (const name of readdirSync(join(dir, rel)).sort()) {
      const sub = rel ? `${rel}/${name}` : name;
      if (!statSync(join(dir, sub)).isDirectory()) continue;
      if (existsSync(join(dir, sub, 'manifest.json'))) out.push(sub);
      else walk(sub, depth + 1);
    }
  };
  if (existsSync(dir)) walk('', 1);
  return out;
}
