/**
 * The verifier's environment under bubblewrap, pinned: the host paths a step declares
 * (`sandbox.host_paths`) are all the sandbox binds of the host, and each one's contents are
 * digested into the key of every node that runs the verifier (verify, certify, calibrate). A
 * host file the verifier reads that is not declared is not there; one that is declared and
 * changes is a new key, so it cannot move a verdict behind the freeze.
 */
import { lstatSync, readdirSync, readlinkSync, realpathSync, type Stats } from 'node:fs';
import { join } from 'node:path';
import { addAnnotation } from '../pipeline/annotate.js';
import { canonicalJson } from '../pipeline/canonical-json.js';
import { sha256, sha256File } from '../pipeline/digest.js';
import { errorMessage, err, ok, type Result } from '../pipeline/result.js';
import type { AnnotationContext, GraphNode } from '../pipeline/step-kind.js';
import type { StatCache } from '../pipeline/store/stat-cache.js';
import { anySpecOf } from './step-spec.js';
import { annotateImageTemplates } from './image-annotations.js';

/** A declared path's digest, or why it has none (the node fails saying so when it runs). */
export type HostPathDigest = { digest: string; files: number } | { error: string };

const ANNOTATION = 'host_paths';

/** Files past this many under one declared path: refused (declare the directories the verifier needs). */
const MAX_FILES = 200_000;

/**
 * The digest of what a bind of `path` shows: a directory's entries by relative path (files by
 * mode and content, symlinks by target, directories by mode), a file by mode and content. A
 * declared symlink is followed (bwrap binds what it points to).
 */
export function digestHostPath(path: string, statCache?: StatCache): HostPathDigest {
  const fileDigest = (p: string) => (statCache ? statCache.digestOf(p).digest : sha256File(p).digest);
  try {
    const root = realpathSync(path);
    const entries: [string, string][] = [];
    const visit = (abs: string, rel: string, st: Stats) => {
      if (entries.length > MAX_FILES) throw new Error(`more than ${MAX_FILES} entries: declare the directories the verifier needs, not a whole tree`);
      const mode = (st.mode & 0o7777).toString(8);
      if (st.isSymbolicLink()) entries.push([rel, `link ${readlinkSync(abs)}`]);
      else if (st.isFile()) entries.push([rel, `file ${mode} ${fileDigest(abs)}`]);
      else if (st.isDirectory()) {
        entries.push([rel, `dir ${mode}`]);
        for (const name of readdirSync(abs).sort()) {
          const child = join(abs, name);
          visit(child, rel ? `${rel}/${name}` : name, lstatSync(child));
        }
      } else entries.push([rel, `special ${mode}`]);
    };
    visit(root, '', lstatSync(root));
    return { digest: sha256(canonicalJson(entries)), files: entries.length };
  } catch (e) {
    return { error: `${path}: ${errorMessage(e)}` };
  }
}

/** The annotation's entry for the privilege-drop tool's files (not a path: no declared path can be named so). */
const PRIVILEGE_DROP = 'pairbench privilege drop';

async function privilegeDropDigest(statCache?: StatCache): Promise<HostPathDigest> {
  try {
    const { privilegeDropFiles } = await import('../sandboxes/bubblewrap.js');
    const files = privilegeDropFiles();
    const parts = files.map((f) => [f, digestHostPath(f, statCache)] as const);
    const bad = parts.find(([, d]) => 'error' in d);
    if (bad) return bad[1];
    return { digest: sha256(canonicalJson(parts.map(([f, d]) => [f, (d as { digest: string }).digest]))), files: files.length };
  } catch (e) {
    return { error: errorMessage(e) };
  }
}

/** The step's declared host paths (undefined: none declared). */
export function declaredHostPaths(node: GraphNode): readonly string[] | undefined {
  const spec = anySpecOf(node.step);
  return 'sandbox' in spec ? spec.sandbox?.host_paths : undefined;
}

/** Each node's declared paths by their digests, as of now (memoised per path across the nodes). */
async function annotateHostPaths(nodes: readonly GraphNode[], { store }: AnnotationContext): Promise<void> {
  const known = new Map<string, HostPathDigest>();
  const statCache = store.exists() ? store.statCache : undefined;
  let tool: HostPathDigest | undefined;
  for (const node of nodes) {
    const paths = declaredHostPaths(node);
    if (!paths) continue;
    // The privilege drop's own files are there too (under bubblewrap's tool directory): in the key as well.
    tool ??= await privilegeDropDigest(statCache);
    const digests: Record<string, HostPathDigest> = { [PRIVILEGE_DROP]: tool };
    for (const p of paths) {
      let d = known.get(p);
      if (!d) known.set(p, (d = digestHostPath(p, statCache)));
      digests[p] = d;
    }
    addAnnotation(node, ANNOTATION, digests);
  }
}

/** The annotate hook of the kinds that run the verifier: a per-task image's ID, the declared host paths' digests. */
export async function annotateVerifierEnvironment(nodes: readonly GraphNode[], ctx: AnnotationContext): Promise<void> {
  await annotateImageTemplates(nodes, ctx);
  await annotateHostPaths(nodes, ctx);
}

/** The node's declared host paths, each with its digest (from its annotation); an error names a path that could not be read. */
export function pinnedHostPaths(node: GraphNode): Result<Record<string, string> | undefined, string> {
  const paths = declaredHostPaths(node);
  if (!paths) return ok(undefined);
  const annotated = (node.annotation as { [ANNOTATION]?: Record<string, HostPathDigest> } | undefined)?.[ANNOTATION];
  if (!annotated) return err(`the host paths of ${node.id} were not digested (they are when a run is planned by the CLI)`);
  const out: Record<string, string> = {};
  const tool = annotated[PRIVILEGE_DROP];
  if (tool && 'error' in tool) return err(`the privilege drop bubblewrap runs the verifier through could not be digested: ${tool.error}`);
  for (const p of paths) {
    const d = annotated[p];
    if (!d || 'error' in d)
      return err(
        `sandbox.host_paths of step ${node.step.name}: ${d && 'error' in d ? d.error : `${p} was not digested`}: declare paths that exist and are readable`,
      );
    out[p] = d.digest;
  }
  return ok(out);
}
