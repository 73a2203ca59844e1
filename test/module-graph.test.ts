// The shape of the code, read from its own imports: every relative import of every TypeScript
// source (static, type-only and dynamic `import()` alike) is an edge. A cycle, or pipeline/
// reaching above itself, fails here whatever file it is added in.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const SKIP = new Set(['node_modules', 'dist', '.git', '.ci']);

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    if (e.name.startsWith('.') || SKIP.has(e.name)) return [];
    const p = join(dir, e.name);
    if (e.isDirectory()) return sources(p);
    return /\.tsx?$/.test(e.name) && !e.name.endsWith('.d.ts') ? [relative(ROOT, p)] : [];
  });
}

/** File -> the files it imports (relative specifiers only; `.js` written for `.ts`, as ESM TypeScript does). */
function importGraph(): Map<string, string[]> {
  const files = sources(ROOT);
  const known = new Set(files);
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const info = ts.preProcessFile(readFileSync(join(ROOT, file), 'utf8'), true, true);
    const targets = info.importedFiles
      .map((f) => f.fileName)
      .filter((s) => s.startsWith('.'))
      .map((s) => relative(ROOT, resolve(ROOT, dirname(file), s)).replace(/\.js$/, '.ts'))
      .map((t) => (known.has(t) ? t : known.has(t.replace(/\.ts$/, '.tsx')) ? t.replace(/\.ts$/, '.tsx') : t));
    graph.set(
      file,
      [...new Set(targets)].filter((t) => known.has(t)),
    );
  }
  return graph;
}

/** Each strongly connected component of more than one file (Tarjan), or a file importing itself. */
function cycles(graph: Map<string, string[]>): string[][] {
  let index = 0;
  const indexOf = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string) => {
    indexOf.set(v, index);
    low.set(v, index++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!indexOf.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, indexOf.get(w)!));
    }
    if (low.get(v) === indexOf.get(v)) {
      const scc: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1 || (graph.get(v) ?? []).includes(v)) out.push(scc.sort());
    }
  };
  for (const v of graph.keys()) if (!indexOf.has(v)) visit(v);
  return out;
}

describe('the module graph', () => {
  const graph = importGraph();

  it('is read from the sources (the CLI reaches the engine, a kind reaches the pipeline)', () => {
    expect(graph.size).toBeGreaterThan(150);
    expect(graph.get('cli/commands/run.ts')).toContain('pipeline/engine.ts');
    expect(graph.get('steps/run.ts')).toContain('pipeline/step-kind.ts');
  });

  it('has no import cycle: a type two modules share lives in a types-only module both import', () => {
    expect(cycles(graph)).toEqual([]);
  });

  it('the test finds a cycle when there is one', () => {
    const planted = new Map(graph);
    planted.set('pipeline/engine.ts', [...(graph.get('pipeline/engine.ts') ?? []), 'cli/main.ts']);
    expect(cycles(planted).some((c) => c.includes('cli/main.ts') && c.includes('pipeline/engine.ts'))).toBe(true);
  });

  it('pipeline/ imports nothing above it: it knows nothing of agents, sandboxes, steps or statistics', () => {
    const upward = [...graph]
      .filter(([file]) => file.startsWith('pipeline/'))
      .flatMap(([file, targets]) => targets.filter((t) => !t.startsWith('pipeline/')).map((t) => `${file} -> ${t}`));
    expect(upward).toEqual([]);
  });

  it('the plan memo is known to no one but the CLI entry that installs it: modules declare what it cannot see through pipeline/hooks.ts', () => {
    const memoUsers = [...graph]
      .filter(([file]) => !file.startsWith('pipeline/memo/') && !file.startsWith('test/'))
      .filter(([, targets]) => targets.some((t) => t.startsWith('pipeline/memo/')))
      .map(([file]) => file);
    expect(memoUsers).toEqual(['cli/memo-entry.ts']);
    // A backend and the store declare through the hooks (the memo is their watcher, unnamed).
    for (const declarer of ['sandboxes/bubblewrap.ts', 'sandboxes/docker-client.ts', 'pipeline/store/store.ts'])
      expect(graph.get(declarer)).toContain('pipeline/hooks.ts');
  });

  it('one Docker client: only sandboxes/docker-client.ts loads dockerode or runs the docker CLI (others import its types at most); only the memo stamp asks the engine over its socket, read-only', () => {
    const product = ['agents/', 'cli/', 'gateway/', 'generators/', 'pipeline/', 'sandboxes/', 'steps/', 'text/', 'test-results/', 'viewer/'];
    const clients = [...graph.keys()]
      .filter((file) => product.some((d) => file.startsWith(d)))
      .filter((file) => {
        const text = readFileSync(join(ROOT, file), 'utf8');
        const loadsDockerode =
          /^import (?!type )[^;]*from 'dockerode'/m.test(text) ||
          /import\('dockerode'\)/.test(text) ||
          /\w*[rR]equire\w*(\.resolve)?(<[^>]*>)?\(\s*'dockerode'\)/.test(text);
        const runsDockerCli = /\b(spawn|spawnSync|execFile|execFileSync|execa|execaSync)\(\s*'docker'/.test(text);
        // The Engine API by hand: an HTTP request on a path of its own (/images/..., /containers/...).
        const speaksEngineApi = /'node:https?'/.test(text) && /['`]\/(images|containers|build|exec|volumes|networks)\//.test(text);
        return loadsDockerode || runsDockerCli || speaksEngineApi;
      });
    // docker-image-stamp.ts: the replay of a memo (pipeline/memo/) asks the engine for image IDs before
    // anything of pairbench, dockerode included, loads; GET requests only (test/plan-memo.test.ts).
    expect(clients).toEqual(['sandboxes/docker-client.ts', 'sandboxes/docker-image-stamp.ts']);
  });

  it('stats/ and report/ are libraries under the step kinds: pipeline/ and text/ below them, stats/ under report/, the config types, nothing else', () => {
    const allowed: Record<string, string[]> = {
      'stats/': ['stats/', 'pipeline/', 'text/', 'steps/config-types.generated.ts'],
      'report/': ['report/', 'stats/', 'pipeline/', 'text/'],
    };
    const outside = [...graph].flatMap(([file, targets]) => {
      const floor = Object.keys(allowed).find((f) => file.startsWith(f));
      return floor ? targets.filter((t) => !allowed[floor]!.some((a) => t.startsWith(a))).map((t) => `${file} -> ${t}`) : [];
    });
    expect(outside).toEqual([]);
  });

  it("no step kind is matched by its name as a string: a node by its kind (identity), a step config by the kind's own name", () => {
    const product = ['agents/', 'cli/', 'gateway/', 'generators/', 'pipeline/', 'sandboxes/', 'steps/', 'stats/', 'report/', 'viewer/'];
    const byName = [
      /\.kind\.name\s*[!=]==?\s*'[a-z-]+'/g, // a GraphNode's kind: compare the kind itself
      /steps\.get\([^)]*\)\??\.kind\s*[!=]==?\s*'[a-z-]+'/g, // a StepConfig: compare with the kind's exported name
    ];
    const found = [...graph.keys()]
      .filter((file) => product.some((d) => file.startsWith(d)))
      .flatMap((file) => {
        const text = readFileSync(join(ROOT, file), 'utf8');
        return byName.flatMap((re) => [...text.matchAll(re)].map((m) => `${file}: ${m[0]}`));
      });
    expect(found).toEqual([]);
  });

  it('the floors under the steps (agents, sandboxes, gateway, text, test results) import no step, command, generator or viewer', () => {
    const floors = ['agents/', 'sandboxes/', 'gateway/', 'text/', 'test-results/'];
    const above = ['steps/', 'cli/', 'generators/', 'viewer/', 'viewer-app/'];
    const upward = [...graph]
      .filter(([file]) => floors.some((f) => file.startsWith(f)))
      .flatMap(([file, targets]) => targets.filter((t) => above.some((a) => t.startsWith(a))).map((t) => `${file} -> ${t}`));
    expect(upward).toEqual([]);
  });
});
