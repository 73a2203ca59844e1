import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { resolve } from 'node:path';
import { addTasksToConfig, type AddToOutcome } from './generate-add-to.js';
import type { GenerateOptions, GenerateReport, Language } from '../generators/index.js';

export interface GenerateArgs {
  kind: string;
  repo?: string | undefined;
  commit?: string | undefined;
  seed?: string | undefined;
  count?: string | undefined;
  language?: string | undefined;
  testCommand?: string | undefined;
  out?: string | undefined;
  repeats?: string | undefined;
  addTo?: string | undefined;
  jobs?: string | undefined;
}

export type GenerateOutcome =
  | { status: 'usage'; message: string }
  | { status: 'refused'; message: string }
  | {
      status: 'ok';
      /** The revision as given, and the commit it froze to. */
      commit: { given: string; id: string };
      asked: number;
      report: GenerateReport<{ id: string; dir: string; file: string; covering: string[] }>;
      added: AddToOutcome | null;
    };

const KINDS = ['stub_function', 'revert_reimplement'] as const;

/** `pairbench generate KIND ...`: derives tasks from a repo's own test suite and writes them as task YAML. */
export async function generate(args: GenerateArgs, log: (line: string) => void): Promise<GenerateOutcome> {
  if (!(KINDS as readonly string[]).includes(args.kind))
    return { status: 'usage', message: `generate takes a kind: ${KINDS.join(' or ')}, not "${args.kind}"` };
  const missing = (['repo', 'commit', 'out'] as const).filter((k) => !args[k]);
  if (missing.length) return { status: 'usage', message: `generate needs ${missing.map((m) => `--${m}`).join(', ')}` };
  // A revision (HEAD, a branch, a tag, a short id) is frozen here to its full id: the tasks record that.
  const rev = spawnSync('git', ['-C', resolve(args.repo!), 'rev-parse', '--verify', '--quiet', `${args.commit!}^{commit}`], { encoding: 'utf8' });
  if (rev.status !== 0)
    return { status: 'usage', message: `--commit ${args.commit}: ${resolve(args.repo!)} has no such revision (give a commit, branch or tag of it)` };
  const commit = rev.stdout.trim();
  const language = (args.language ?? languageAt(resolve(args.repo!), commit, log)) as Language;
  if (language !== 'js' && language !== 'python') return { status: 'usage', message: `--language takes js or python, not "${args.language}"` };
  const num = (v: string | undefined, name: string, dflt: number) => {
    const n = v === undefined ? dflt : Number(v);
    return Number.isInteger(n) && n >= 0 ? n : Number.NaN;
  };
  const seed = num(args.seed, 'seed', 0);
  const count = num(args.count, 'count', 5);
  const repeats = num(args.repeats, 'repeats', 2);
  const jobs = args.jobs === undefined ? undefined : num(args.jobs, 'jobs', 1);
  if ([seed, count, repeats, jobs ?? 1].some(Number.isNaN) || count < 1 || repeats < 1 || jobs === 0)
    return { status: 'usage', message: '--seed, --count, --repeats and --jobs take whole numbers (count, repeats and jobs >= 1)' };
  const concurrency = jobs ?? (args.addTo ? configConcurrency(args.addTo) : undefined);
  const options: GenerateOptions = {
    repo: resolve(args.repo!),
    commit,
    seed,
    count,
    language,
    // Without one, the repository's own: package.json scripts.test (tape, node --test), or pytest -rA.
    ...(args.testCommand ? { testCommand: args.testCommand } : {}),
    outDir: resolve(args.out!),
    repeats,
    log,
    ...(concurrency ? { concurrency } : {}),
  };
  const { generateRevertTasks, generateStubFunctionTasks } = await import('../generators/index.js');
  const r = args.kind === 'stub_function' ? await generateStubFunctionTasks(options) : await generateRevertTasks(options);
  if (!r.ok) return { status: 'refused', message: r.error };
  const added = args.addTo
    ? addTasksToConfig(
        args.addTo,
        options.outDir,
        r.value.tasks.map((t) => t.id),
      )
    : null;
  return { status: 'ok', commit: { given: args.commit!, id: commit }, asked: count, report: r.value, added };
}

/** The config's `concurrency.global`, when it sets one: how many candidates generate checks at once. */
function configConcurrency(config: string): number | undefined {
  try {
    const global = (parse(readFileSync(config, 'utf8')) as { concurrency?: { global?: unknown } } | null)?.concurrency?.global;
    return Number.isInteger(global) && (global as number) >= 1 ? (global as number) : undefined;
  } catch {
    return undefined; // --add-to says what is wrong with it, after the tasks are written
  }
}

/** Python files that mark a Python project at a repository's root; a package.json marks JavaScript. */
const PYTHON_MARKERS = ['pyproject.toml', 'setup.py', 'setup.cfg', 'pytest.ini', 'tox.ini'];

/** The language of the repository at `commit` as its root says (package.json: js; a Python project file: python), said in the log. */
function languageAt(repo: string, commit: string, log: (line: string) => void): Language {
  const ls = spawnSync('git', ['-C', repo, 'ls-tree', '--name-only', commit], { encoding: 'utf8' });
  const root = new Set(ls.status === 0 ? ls.stdout.split('\n') : []);
  const marker = root.has('package.json') ? 'package.json' : PYTHON_MARKERS.find((m) => root.has(m));
  const language: Language = marker && marker !== 'package.json' ? 'python' : 'js';
  log(
    `language: ${language === 'js' ? 'JavaScript/TypeScript' : 'Python'} (${marker ? `${marker} at the commit's root` : 'no project file at the root'}; --language js|python to choose)`,
  );
  return language;
}
