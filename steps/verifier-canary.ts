import { cpSync, existsSync, lstatSync, readFileSync, writeFileSync } from 'node:fs';
import { extname, join, normalize } from 'node:path';

/**
 * The canary: a failure planted beside the real verifier, which must be reported.
 *
 * The code under test runs inside the verifier's process, so it can force an exit
 * code (`process.exit(0)` at import, `process.exit` overridden to always exit 0, an
 * exit handler that rewrites the code). For each test whose verdict is an exit code,
 * the canary re-runs the same command with a failure appended to the test files it
 * names (the hidden verifier's files and the repository's own test files): after the
 * real checks ran, the process must fail. If it exits 0 anyway, something forced the
 * exit code, and a pass from that command proves nothing: the attempt fails with
 * reason `verdict-forged`.
 *
 * A verifier may end with an explicit exit(0) of its own, before the planted failure
 * is reached; then the canary passes on an honest tree too. certify calibrates each
 * canary on the reference solution (it must fail there) and verify trusts only
 * calibrated ones.
 */

/** The statement appended to a file of each language; it fails the process once reached. */
const PLANT: Record<string, string> = {
  '.js': '\n;throw new Error("pairbench canary: a failure planted after the real checks; it must be reported");\n',
  '.py': '\nraise AssertionError("pairbench canary: a failure planted after the real checks; it must be reported")\n',
  '.sh': '\nexit 86 # pairbench canary: a failure planted after the real checks\n',
};
const LANGUAGE: Record<string, keyof typeof PLANT> = {
  '.js': '.js',
  '.mjs': '.js',
  '.cjs': '.js',
  '.ts': '.js',
  '.mts': '.js',
  '.cts': '.js',
  '.jsx': '.js',
  '.tsx': '.js',
  '.py': '.py',
  '.sh': '.sh',
  '.bash': '.sh',
};

/** A file the canary plants its failure into: in the workspace, or among the hidden verifier files. */
export interface PlantTarget {
  where: 'workspace' | 'verifier';
  /** Relative to the workspace or the verifier directory. */
  path: string;
}

/** What certify learned of one test's canary with the reference solution. */
export interface CanaryCalibration {
  targets: PlantTarget[];
  /** The canary failed with the reference solution, as it must: verify may trust it. */
  calibrated: boolean;
  note: string;
}

export type CanaryCalibrations = Record<string, CanaryCalibration>;

/** A task's canary.json (certify's or calibrate's): what verify reads its calibrations from. */
export interface CanaryRecord {
  schema_version: 1;
  task: string;
  tests: CanaryCalibrations;
}

/** What verify saw of one test's canary on the attempt's tree. */
export type CanaryOutcome =
  | { status: 'failed-as-planted' }
  | { status: 'passed'; calibrated: boolean }
  | { status: 'not-planted'; note: string }
  | { status: 'uncalibrated'; note: string };

/**
 * The files a command names that a failure can be planted into: words of the command
 * that are (after `$VERIFIER_DIR/`, quotes and a `::test` suffix are taken off) a
 * source file in the workspace or the verifier directory.
 */
export function plantTargets(command: string, workspace: string, verifierDir: string | null): PlantTarget[] {
  const out: PlantTarget[] = [];
  const seen = new Set<string>();
  for (const raw of command.split(/\s+/)) {
    const word = raw.replace(/^['"]|['"]$/g, '').replace(/::.*$/, '');
    const inVerifier = /^(\$\{?VERIFIER_DIR\}?|\/verifier|\/tests)\//.exec(word);
    const rel = normalize(inVerifier ? word.slice(inVerifier[0].length) : word.replace(/^\/work\//, '').replace(/^\.\//, ''));
    if (!LANGUAGE[extname(rel)] || rel.startsWith('..') || rel.startsWith('/')) continue;
    const where = inVerifier ? 'verifier' : 'workspace';
    const base = where === 'verifier' ? verifierDir : workspace;
    if (!base || !isRegularFile(join(base, rel)) || seen.has(`${where}:${rel}`)) continue;
    seen.add(`${where}:${rel}`);
    out.push({ where, path: rel });
  }
  return out;
}

function isRegularFile(p: string): boolean {
  try {
    return lstatSync(p).isFile();
  } catch {
    return false;
  }
}

/**
 * Plants the failure: workspace targets in place (the real tests have run), verifier
 * targets in a copy of the verifier directory at `canaryVerifierDir`.
 */
export function plant(targets: readonly PlantTarget[], workspace: string, verifierDir: string | null, canaryVerifierDir: string | null): void {
  if (verifierDir && canaryVerifierDir && !existsSync(canaryVerifierDir)) cpSync(verifierDir, canaryVerifierDir, { recursive: true, verbatimSymlinks: true });
  for (const t of targets) {
    const base = t.where === 'workspace' ? workspace : canaryVerifierDir;
    if (!base) continue;
    const file = join(base, t.path);
    const language = LANGUAGE[extname(t.path)]!;
    writeFileSync(file, readFileSync(file, 'utf8') + PLANT[language]);
  }
}
