import picomatch from 'picomatch';
import { err, ok, type Result } from '../pipeline/result.js';
import { findJsFunctions } from './js-functions.js';
import { pytestLines } from '../test-results/pytest.js';
import { findPythonFunctions } from './python-functions.js';
import { escapeRegExp, shellQuote } from './shell.js';
import { tapeSections, tapTests } from '../test-results/tap.js';
import { walkFiles } from './tree.js';
import type { Language, SuiteResult, TestResult } from './types.js';
import { runShell, type LanguageAdapter, type RunnerContext } from './language-adapter.js';
import { jestRunner, pytestRunner, reportRunnerAdapter, vitestRunner } from './report-runners.js';

export function adapterFor(language: Language, ctx: RunnerContext, runner: JsRunner = 'node-test'): LanguageAdapter {
  return language === 'python' ? reportRunnerAdapter(pythonAdapter(ctx), ctx, pytestRunner(ctx.testCommand), false) : jsAdapterFor(runner, ctx);
}

function jsAdapterFor(runner: JsRunner, ctx: RunnerContext): LanguageAdapter {
  switch (runner) {
    case 'tape':
      return tapeAdapter(ctx);
    case 'mocha':
      return mochaAdapter(ctx);
    case 'jest':
      return reportRunnerAdapter(jsAdapter(ctx), ctx, jestRunner(ctx.testCommand), true);
    case 'vitest':
      return reportRunnerAdapter(jsAdapter(ctx), ctx, vitestRunner(ctx.testCommand), true);
    case 'node-test':
      return jsAdapter(ctx);
  }
}

/** The JavaScript test runners a generator reads: node:test's TAP, tape's TAP, mocha's JSON reporter, jest's and vitest's JSON reports. */
export type JsRunner = 'node-test' | 'tape' | 'mocha' | 'jest' | 'vitest';

/**
 * The repository's own test command when the caller gives none: package.json's
 * `scripts.test` for JavaScript (its runner recognised, with a machine-readable reporter
 * where the runner takes one), pytest with -rA for Python. A script whose runner output
 * pairbench cannot read is refused with what to do.
 */
export function defaultTestCommand(language: Language, packageJson: string | null): Result<{ command: string; runner: JsRunner | 'pytest' }, string> {
  if (language === 'python') return ok({ command: 'python3 -m pytest -rA -q -p no:cacheprovider', runner: 'pytest' });
  if (packageJson === null) return ok({ command: 'node --test --test-reporter=tap', runner: 'node-test' });
  let script: unknown;
  try {
    script = (JSON.parse(packageJson) as { scripts?: Record<string, unknown> }).scripts?.['test'];
  } catch (e) {
    return err(`package.json does not parse (${(e as Error).message}): give --test-command`);
  }
  if (typeof script !== 'string' || !script.trim()) return ok({ command: 'node --test --test-reporter=tap', runner: 'node-test' });
  const runner = jsRunnerOf(script);
  if (runner === 'node-test') return ok({ command: 'node --test --test-reporter=tap', runner });
  if (runner) return ok({ command: script.trim(), runner });
  return err(
    `runner output not understood: package.json's test script is ${JSON.stringify(script)}; ` +
      'give --test-command with a runner whose per-test results pairbench reads (vitest, jest, mocha, tape FILES, node --test)',
  );
}

/** The JavaScript runner a test command runs, as its words say; null when none pairbench reads. */
export function jsRunnerOf(command: string): JsRunner | null {
  const word = (w: string) => new RegExp(`(^|[\\s;&|(/])${w}(\\s|$)`).test(command);
  if (word('tape')) return 'tape';
  if (/(^|[\s;&|(])node\s+(?:[^|;&]*\s)?--test\b/.test(command)) return 'node-test';
  // mocha's, jest's and vitest's reports are added to the command.
  if (word('mocha')) return 'mocha';
  if (word('jest')) return 'jest';
  if (word('vitest')) return 'vitest';
  return null;
}

/** Messages name files relative to the tree: temp paths would make reports differ run to run. */
function withoutTree(tree: string, text: string): string {
  return text.replaceAll(`file://${tree}/`, '').replaceAll(`${tree}/`, '');
}

const JS_EXT = /\.(?:[cm]?[jt]s|[jt]sx)$/;

function hiddenOrVendored(path: string): boolean {
  return path.split('/').some((seg) => seg === 'node_modules' || seg.startsWith('.') || seg === '__pycache__');
}

/** node --test's default discovery (Node 20): the files it would run with no arguments. */
export function isNodeTestFile(path: string): boolean {
  if (hiddenOrVendored(path) || !/\.[cm]?js$/.test(path)) return false;
  const segs = path.split('/');
  const base = segs.at(-1)!;
  return /^test\.[cm]?js$/.test(base) || /^test-.+\.[cm]?js$/.test(base) || /.[.\-_]test\.[cm]?js$/.test(base) || segs.slice(0, -1).includes('test');
}

function jsAdapter(ctx: RunnerContext): LanguageAdapter {
  const isTestFile = (path: string) => {
    if (isNodeTestFile(path)) return true;
    const segs = path.split('/');
    const base = segs.at(-1)!;
    return (
      JS_EXT.test(base) &&
      (/(?:^|[.\-_])(?:test|spec)\.[^.]+$/.test(base) ||
        /^test-/.test(base) ||
        segs.slice(0, -1).some((s) => s === 'test' || s === 'tests' || s === '__tests__'))
    );
  };
  const parseRun = (file: string, output: string): Map<string, TestResult> => {
    const out = new Map<string, TestResult>();
    for (const t of tapTests(output)) {
      const id = `${file}::${t.path.join(' > ')}`;
      const status = t.status === 'pass' ? 'pass' : t.status === 'fail' ? 'fail' : 'skip';
      out.set(id, out.has(id) ? { ...out.get(id)!, status: 'ambiguous' } : { status, file, selectors: t.selectors });
    }
    return out;
  };
  return {
    language: 'js',
    isTestFile,
    isSourceFile: (path) => JS_EXT.test(path) && !/\.d\.[cm]?ts$/.test(path) && !hiddenOrVendored(path) && !isTestFile(path),
    findFunctions: findJsFunctions,
    stubBehaviour: 'it currently throws',
    async syntaxError(tree, file) {
      if (!/\.[cm]?js$/.test(file)) return null;
      const r = await runShell(ctx, tree, `node --check ${shellQuote(file)}`);
      return r.exitCode === 0
        ? null
        : withoutTree(tree, r.stderr || r.stdout)
            .trim()
            .split('\n')
            .slice(0, 5)
            .join('\n');
    },
    async runSuite(tree) {
      const files = walkFiles(tree).filter(isNodeTestFile);
      if (!files.length) return err('no test files (node --test patterns: *.test.js, test/**/*.js, ...)');
      // node:test's TAP does not name a test's file: run file by file so that every test has one.
      const runs = await Promise.all(files.map((f) => runShell(ctx, tree, `${ctx.testCommand} ${shellQuote(f)}`).then((r) => [f, r] as const)));
      const suite: SuiteResult = new Map();
      for (const [file, r] of runs) for (const [id, t] of parseRun(file, r.stdout)) suite.set(id, t);
      return ok(suite);
    },
    commandFor(_id, test) {
      const names = [...new Set(test.selectors)].map(escapeRegExp);
      const pattern = names.length === 1 ? `^${names[0]}$` : `^(?:${names.join('|')})$`;
      return `${ctx.testCommand} --test-name-pattern=${shellQuote(pattern)} ${shellQuote(test.file)}`;
    },
    ranAndPassed(id, test, output) {
      return parseRun(test.file, output).get(id)?.status === 'pass';
    },
  };
}

/**
 * tape: each test file run on its own (`tape FILE`, from the repository's node_modules/.bin)
 * so that every test is named by its file; a test is a `# name` section of the TAP, passing
 * when none of its assertions failed, identified as `file::name` (a repeated name in one
 * file by its ordinal: `file::name #2`). The test files are the ones the test script names
 * (its globs), else test/**.
 */
function tapeAdapter(ctx: RunnerContext): LanguageAdapter {
  const base = jsAdapter(ctx);
  const [bin, ...args] = ctx.testCommand.split(/\s+/);
  const globs = args.filter((a) => !a.startsWith('-'));
  const matches = picomatch(globs.length ? globs : ['test/**/*.js'], { dot: false });
  const isTestFile = (path: string) => matches(path) && !hiddenOrVendored(path);
  const run = (file: string) => `PATH="$PWD/node_modules/.bin:$PATH" ${bin} ${shellQuote(file)}`;
  const halves = (id: string, test: TestResult) => {
    // Runs the test's file and passes only when that test's section holds an "ok" and no "not ok".
    const { name, nth } = sectionOf(id, test.file);
    // The TAP passes through (what ran stays visible in the verifier's output).
    const awk =
      'BEGIN{w=ENVIRON["PAIRBENCH_TAPE_TEST"];n=ENVIRON["PAIRBENCH_TAPE_NTH"]+0} {print} /^# /{if($0==w){c++;inside=(c==n)}else inside=0;next} inside&&/^not ok /{bad=1} inside&&/^ok /{good=1} END{exit !(good&&!bad)}';
    return { run: run(test.file), check: `PAIRBENCH_TAPE_TEST=${shellQuote(`# ${name}`)} PAIRBENCH_TAPE_NTH=${nth} awk ${shellQuote(awk)}` };
  };
  return {
    ...base,
    isTestFile,
    isSourceFile: (path) => JS_EXT.test(path) && !/\.d\.[cm]?ts$/.test(path) && !hiddenOrVendored(path) && !isTestFile(path) && !base.isTestFile(path),
    async runSuite(tree) {
      const files = walkFiles(tree).filter(isTestFile).sort();
      if (!files.length)
        return err(`no test files match ${JSON.stringify(globs.length ? globs : ['test/**/*.js'])} (from the test command ${JSON.stringify(ctx.testCommand)})`);
      const runs = await Promise.all(files.map((f) => runShell(ctx, tree, run(f)).then((r) => [f, r] as const)));
      const suite: SuiteResult = new Map();
      for (const [file, r] of runs) for (const [id, t] of parseTapeSections(file, `${r.stdout}\n${r.stderr}`)) suite.set(id, t);
      // Every file crashed before a test ran (a change broke what the runner itself loads, as a
      // stubbed minimist breaks tape): no test passed, which is a result, not unreadable output.
      if (suite.size === 0 && runs.every(([, r]) => r.exitCode !== 0 && !r.timedOut)) return ok(suite);
      if (suite.size === 0) {
        const last = runs.map(([, r]) => (r.stdout + r.stderr).trim().split('\n').slice(-2).join(' | ')).find(Boolean) ?? '';
        return err(`runner output not understood: ${bin} printed no "# test" sections${last ? ` (last lines: ${last})` : ''}`);
      }
      return ok(suite);
    },
    verifierHalves: halves,
    commandFor(id, test) {
      const { run: produce, check } = halves(id, test);
      return `${produce} 2>&1 | ${check}`;
    },
    ranAndPassed(id, test, output) {
      return parseTapeSections(test.file, output).get(id)?.status === 'pass';
    },
  };
}

/**
 * mocha: one run of the whole suite with its JSON reporter (`--reporter json`), each test
 * identified as `file::full title` (file relative to the repository, a repeated title by its
 * ordinal). A task's command runs the test's file with a name filter and passes only when the
 * JSON says at least one test passed and none failed.
 */
function mochaAdapter(ctx: RunnerContext): LanguageAdapter {
  const base = jsAdapter(ctx);
  const bin = `PATH="$PWD/node_modules/.bin:$PATH" ${ctx.testCommand}`;
  const reporter = '--reporter json';
  const check =
    'let s="";process.stdin.on("data",(d)=>(s+=d)).on("end",()=>{const r=JSON.parse(s.slice(s.indexOf("{")));process.exit(r.stats.passes>0&&r.stats.failures===0?0:1)})';
  return {
    ...base,
    async runSuite(tree) {
      const r = await runShell(ctx, tree, `${bin} ${reporter}`);
      const suite = parseMochaJson(r.stdout, tree);
      if (!suite.ok)
        return err(
          `runner output not understood: mocha ${reporter} printed no JSON report (${suite.error}; exit ${r.exitCode}: ${(r.stdout + r.stderr).trim().split('\n').slice(-2).join(' | ')})`,
        );
      return ok(suite.value);
    },
    commandFor(id, test) {
      const title = id.slice(test.file.length + 2).replace(/ #\d+$/, '');
      return `${bin} ${reporter} --grep ${shellQuote(`^${escapeRegExp(title)}$`)} ${shellQuote(test.file)} 2>/dev/null | node -e ${shellQuote(check)}`;
    },
    ranAndPassed(id, test, output) {
      const suite = parseMochaJson(output, null);
      return suite.ok && suite.value.get(id)?.status === 'pass';
    },
  };
}

/** mocha's `--reporter json` output as a suite (file paths made relative to `tree`). */
export function parseMochaJson(output: string, tree: string | null): Result<SuiteResult, string> {
  const start = output.indexOf('{');
  let data: unknown;
  try {
    data = JSON.parse(output.slice(start));
  } catch (e) {
    return err((e as Error).message);
  }
  const rel = (file: string) => (tree && file.startsWith(`${tree}/`) ? file.slice(tree.length + 1) : file.replace(/^\/work\//, '').replace(/^\.\//, ''));
  const suite: SuiteResult = new Map();
  const seen = new Map<string, number>();
  const r = data as { tests?: { fullTitle: string; file?: string; err?: Record<string, unknown> }[]; pending?: { fullTitle: string }[] };
  if (!Array.isArray(r.tests)) return err('no "tests" array');
  const pending = new Set((r.pending ?? []).map((t) => t.fullTitle));
  for (const t of r.tests) {
    const key = `${rel(t.file ?? '')}::${t.fullTitle}`;
    const n = (seen.get(key) ?? 0) + 1;
    seen.set(key, n);
    const status = pending.has(t.fullTitle) ? 'skip' : t.err && Object.keys(t.err).length ? 'fail' : 'pass';
    suite.set(n > 1 ? `${key} #${n}` : key, { status, file: rel(t.file ?? ''), selectors: [] });
  }
  return ok(suite);
}

/** The test name and its ordinal among same-named tests of its file, from an id `file::name[ #n]`. */
function sectionOf(id: string, file: string): { name: string; nth: number } {
  const rest = id.slice(file.length + 2);
  const m = / #(\d+)$/.exec(rest);
  return m ? { name: rest.slice(0, m.index), nth: Number(m[1]) } : { name: rest, nth: 1 };
}

/** tape's TAP (tap-parser): a `# name` section is a test, identified as `file::name` (a repeated name `#2`, ...). */
export function parseTapeSections(file: string, output: string): Map<string, TestResult> {
  const out = new Map<string, TestResult>();
  const seen = new Map<string, number>();
  for (const s of tapeSections(output)) {
    const n = (seen.get(s.name) ?? 0) + 1;
    seen.set(s.name, n);
    out.set(`${file}::${s.name}${n > 1 ? ` #${n}` : ''}`, { status: s.status, file, selectors: [] });
  }
  return out;
}

/** pytest's -rA summary as the generators read it: each test by its full id, pass, fail or skip. */
function pytestOutcomes(log: string): { id: string; status: 'pass' | 'fail' | 'skip' }[] {
  // Only a summary section is read: a test that prints "PASSED x" while it runs does not count.
  if (!/^=+ short test summary info =+$/m.test(log)) return [];
  return pytestLines(log).map((l) => ({ id: l.id, status: l.status === 'PASSED' ? 'pass' : l.status === 'FAILED' || l.status === 'ERROR' ? 'fail' : 'skip' }));
}

function pythonAdapter(ctx: RunnerContext): LanguageAdapter {
  const isTestFile = (path: string) => {
    if (!path.endsWith('.py')) return false;
    const segs = path.split('/');
    const base = segs.at(-1)!;
    return /^test_.*\.py$/.test(base) || /_test\.py$/.test(base) || base === 'conftest.py' || segs.slice(0, -1).some((s) => s === 'test' || s === 'tests');
  };
  const python = /^(\S*python[\d.]*)\s/.exec(ctx.testCommand)?.[1] ?? 'python3';
  return {
    language: 'python',
    isTestFile,
    isSourceFile: (path) =>
      path.endsWith('.py') &&
      !hiddenOrVendored(path) &&
      !isTestFile(path) &&
      !['setup.py', 'noxfile.py', 'fabfile.py'].includes(path) &&
      !path.split('/').some((s) => s === 'docs' || s === 'doc'),
    findFunctions: findPythonFunctions,
    stubBehaviour: 'it currently raises NotImplementedError',
    async syntaxError(tree, file) {
      const r = await runShell(
        ctx,
        tree,
        `${python} -c ${shellQuote('import ast, sys; ast.parse(open(sys.argv[1], encoding="utf-8").read(), sys.argv[1])')} ${shellQuote(file)}`,
      );
      return r.exitCode === 0
        ? null
        : withoutTree(tree, r.stderr || r.stdout)
            .trim()
            .split('\n')
            .slice(-3)
            .join('\n');
    },
    async runSuite(tree) {
      const r = await runShell(ctx, tree, ctx.testCommand);
      const outcomes = pytestOutcomes(r.stdout);
      if (!outcomes.length) {
        return err(
          `${ctx.testCommand} printed no per-test results (exit ${r.exitCode}${r.timedOut ? ', timed out' : ''}); it needs -rA. ${(r.stdout + r.stderr).trim().split('\n').slice(-3).join(' | ')}`,
        );
      }
      const suite: SuiteResult = new Map();
      for (const o of outcomes) {
        const prev = suite.get(o.id);
        // A test that passed its call but errored in teardown is reported twice: it failed.
        const status = prev?.status === 'fail' || o.status === 'fail' ? 'fail' : o.status;
        suite.set(o.id, { status, file: o.id.split('::')[0]!, selectors: [] });
      }
      return ok(suite);
    },
    commandFor(id) {
      return `${ctx.testCommand} ${shellQuote(id)}`;
    },
    ranAndPassed(id, _test, output) {
      const mine = pytestOutcomes(output).filter((o) => o.id === id);
      return mine.length > 0 && mine.every((o) => o.status === 'pass');
    },
  };
}
