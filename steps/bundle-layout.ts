/**
 * Where an exported bundle keeps what its readers open: the results file, and each node's
 * outputs at `nodes/<node>/<output>`, named by the descriptor of the kind that made them.
 * export-step writes this layout; the Harbor job (report/harbor-layout.ts, given these
 * descriptors by the export command) and the viewer (viewer/bundle-reader.ts) read it. A bundle
 * may come from anyone: a reader checks each JSON file by its descriptor before it believes it.
 */
import { artifact, jsonArtifact, type Artifact } from '../pipeline/artifact.js';
import type { ResultsFile } from '../report/results-file.js';
import type { HarborSources } from '../report/harbor-layout.js';
import { resultsFileProblems } from '../stats/output-checks.js';
import { CERTIFICATION } from './certify.js';
import { AGENT_LOG, GATEWAY_LOG, TRAJECTORY } from './run.js';
import { VERIFIER_LOG, VERIFIER_VERDICT } from './verify.js';

/** The bundle's results.json: the cohort's analysis and every attempt's record (schemas/results.schema.json). */
export const RESULTS_FILE = jsonArtifact<ResultsFile, 'results.json'>('results.json', "the cohort's analysis and every attempt's record", resultsFileProblems);

/** What export adds for each attempt: its changes as a diff against the tree it started from. */
export const ATTEMPT_DIFF = artifact('patch.diff', 'what the attempt changed, as a diff against the tree it started from');

/** The node outputs a bundle's readers open, by what they are. */
export const BUNDLED = {
  verdict: VERIFIER_VERDICT,
  verifierLog: VERIFIER_LOG,
  trajectory: TRAJECTORY,
  agentLog: AGENT_LOG,
  gatewayLog: GATEWAY_LOG,
  certification: CERTIFICATION,
  diff: ATTEMPT_DIFF,
} as const;

/** The bundle's directory of node outputs. */
export const NODES_DIR = 'nodes';

/** The path inside a bundle of `node`'s output `output` (or a path under it, for a directory output). */
export function bundledPath(node: string, output: Artifact | string, ...under: string[]): string {
  return [NODES_DIR, node, typeof output === 'string' ? output : output.name, ...under].join('/');
}

/** What the Harbor job of a bundle is made of (report/harbor-layout.ts). */
export const HARBOR_SOURCES: HarborSources = {
  results: RESULTS_FILE,
  verdict: BUNDLED.verdict,
  certification: BUNDLED.certification,
  trajectory: BUNDLED.trajectory,
  verifierLog: BUNDLED.verifierLog,
  path: bundledPath,
  nodes: NODES_DIR,
};
