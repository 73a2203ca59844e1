/**
 * pairbench as a new user gets it: `npm pack`, the tarball installed globally into an empty
 * prefix (no checkout, no dev dependencies; the agent CLIs and TypeScript come as optional
 * dependencies), and from an empty directory outside this checkout, on a repository this test
 * builds: init, generate, doctor, probe, run, export, verify-bundle, as the README writes them, on a
 * TypeScript package tested with vitest, a CommonJS one tested with jest and a Python one tested
 * with pytest, each with its dependencies installed into its tree. Then as a project's dev
 * dependency with the optional ones omitted: what doctor and generate say is missing is
 * installed by running the command they print, as written. Nothing of the checkout is on PATH.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { bubblewrapBackend } from '../sandboxes/bubblewrap.js';
import { makeRepo } from './fixtures.js';
import { commonJsJestRepo, pythonPytestRepo, typescriptVitestRepo } from './user-repos.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const bwrap = await bubblewrapBackend.available();
const required = process.env['PAIRBENCH_REQUIRE_SANDBOXES'] === '1';

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

/** The README's "A first cohort on your own repository" block: its command lines, comments dropped. */
function firstCohortCommands(): string[] {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const block = /A first cohort on your own repository:\n\n```\n([\s\S]*?)```/.exec(readme)?.[1];
  if (!block) throw new Error('README.md: no block after "A first cohort on your own repository:"');
  return block
    .split('\n')
    .map((l) => l.replace(/\s+#.*$/, '').trim())
    .filter(Boolean);
}

/** A small CommonJS library with node:test tests: a repository pairbench has never seen. */
function foreignRepo(dir: string): string {
  const [commit] = makeRepo(dir, [
    {
      'package.json': JSON.stringify({ name: 'strkit', version: '1.0.0', main: 'index.js', scripts: { test: 'node --test' } }, null, 2) + '\n',
      'index.js': [
        "'use strict';",
        '',
        '/** The string with its first letter upper-cased. */',
        'function capitalize(s) {',
        '  return s.charAt(0).toUpperCase() + s.slice(1);',
        '}',
        '',
        '/** The words of a string, split on runs of whitespace. */',
        'function words(s) {',
        '  return s.trim().split(/\\s+/).filter(Boolean);',
        '}',
        '',
        '/** Every word capitalized. */',
        'function titleCase(s) {',
        "  return words(s).map(capitalize).join(' ');",
        '}',
        '',
        'module.exports = { capitalize, words, titleCase };',
        '',
      ].join('\n'),
      'test/strkit.test.js': [
        "'use strict';",
        "const test = require('node:test');",
        "const assert = require('node:assert');",
        "const { capitalize, words, titleCase } = require('../index.js');",
        "test('capitalize upper-cases the first letter', () => assert.strictEqual(capitalize('hello'), 'Hello'));",
        "test('words splits on whitespace', () => assert.deepStrictEqual(words('  a  b c '), ['a', 'b', 'c']));",
        "test('titleCase capitalizes every word', () => assert.strictEqual(titleCase('the quick fox'), 'The Quick Fox'));",
        '',
      ].join('\n'),
    },
  ]);
  return commit!;
}

describe.skipIf(!bwrap.ok && !required)('the packed package, installed into an empty prefix', () => {
  let tmp: string;
  let prefix: string;
  let env: Record<string, string>;
  let tarball: string;

  const sh = (cwd: string, command: string, args: string[]): Promise<Ran> =>
    new Promise((resolve) => {
      const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      child.on('close', (code) => resolve({ code: code ?? 1, stdout, stderr }));
    });
  const pairbench = (cwd: string, ...args: string[]) => sh(cwd, 'pairbench', args);
  /** Runs a printed install command exactly as printed (it must name this prefix). */
  const runPrinted = async (cwd: string, text: string, what: RegExp) => {
    const command = text.match(what)?.[0];
    expect(command, `no install command in:\n${text}`).toBeTruthy();
    const r = await sh(cwd, 'sh', ['-c', `${command!} --prefer-offline --no-audit --no-fund`]);
    expect(r.code, `${command}\n${r.stdout}${r.stderr}`).toBe(0);
  };

  beforeAll(async () => {
    tmp = mkdtempSync(join(tmpdir(), 'pairbench-installed-'));
    prefix = join(tmp, 'prefix');
    const home = join(tmp, 'home');
    mkdirSync(home);
    // The machine's network settings (a proxy, its certificate authority): npm fetches through them.
    const network = Object.fromEntries(
      Object.entries(process.env).filter((e): e is [string, string] => /proxy|cert|ssl|_ca_|ca_bundle/i.test(e[0]) && e[1] !== undefined),
    );
    env = {
      ...network,
      // Only the prefix's bin and the system's: nothing of this checkout.
      PATH: `${join(prefix, 'bin')}:${dirname(process.execPath)}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin`,
      HOME: home,
      CI: '1',
      // This machine's npm: its cache (the registry is used for anything else) and its settings
      // (where node-gyp finds Node's headers, for dependencies with native add-ons).
      npm_config_cache: execFileSync('npm', ['config', 'get', 'cache'], { encoding: 'utf8' }).trim(),
      npm_config_userconfig: execFileSync('npm', ['config', 'get', 'userconfig'], { encoding: 'utf8' }).trim(),
    };
    // --ignore-scripts: the tarball is what the build in this checkout made (npm test builds first).
    const packed = execFileSync('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', tmp], { cwd: ROOT, encoding: 'utf8' });
    tarball = join(tmp, (JSON.parse(packed) as { filename: string }[])[0]!.filename);
    const install = await sh(tmp, 'npm', ['install', '--global', '--prefix', prefix, '--prefer-offline', '--no-audit', '--no-fund', tarball]);
    expect(install.code, install.stdout + install.stderr).toBe(0);
  });
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  it('holds only what runs: no tests, no sources, no dev tooling', () => {
    const pkg = join(prefix, 'lib', 'node_modules', 'pairbench');
    expect(existsSync(join(pkg, 'dist', 'bundle', 'main.cjs'))).toBe(true);
    for (const absent of ['test', 'cli', 'steps', 'dist/bench', 'dist/bundle/.v8-cache', 'node_modules/vitest', 'node_modules/eslint'])
      expect(existsSync(join(pkg, absent)), absent).toBe(false);
  });

  it('from an empty directory: init prints a generate command that works here, with its arguments filled in', async () => {
    const repo = join(tmp, 'strkit');
    const commit = foreignRepo(repo);
    const project = join(tmp, 'project');
    mkdirSync(project);
    const init = await pairbench(project, 'init', '--repo', repo, '--fake-model');
    expect(init.code, init.stderr).toBe(0);
    const next = init.stdout.match(/^ {2}(pairbench generate .*)$/m)?.[1];
    expect(next, init.stdout).toBeTruthy();
    const generated = await pairbench(project, ...next!.split(' ').slice(1), '--count', '2', '--commit', 'HEAD');
    expect(generated.code, generated.stdout + generated.stderr).toBe(0);
    expect(generated.stdout).toContain(`HEAD is commit ${commit}`);
    expect(generated.stdout).toMatch(/^2 tasks written \(up to 2 asked for\)/m);
    expect(generated.stdout).toMatch(/^removed first-task from the matrix \(init's placeholder/m);
    const config = parse(readFileSync(join(project, 'bench.config.yaml'), 'utf8')) as { steps: Record<string, { matrix?: { task?: string[] } }> };
    const ids = readdirSync(join(project, 'tasks')).filter((d) => d !== 'first-task');
    for (const step of ['materialize', 'certify', 'attempts', 'verify', 'audit']) expect(config.steps[step]!.matrix!.task!.sort(), step).toEqual(ids.sort());
  });

  // The README's "A first cohort on your own repository", word for word, on repositories shaped
  // like the packages teams keep, each with its dependencies installed into the tree.
  it.each([
    ['a TypeScript ESM package tested with vitest', 'textkit', typescriptVitestRepo],
    ['a CommonJS package tested with jest', 'qs-lite', commonJsJestRepo],
    ['a Python package tested with pytest', 'unitconv', pythonPytestRepo],
  ])("%s: the README's four commands give 3 certified tasks and a verdict line, with no edit by hand", async (_what, name, build) => {
    const repo = join(tmp, name);
    build(repo);
    const project = join(tmp, `${name}-evals`);
    mkdirSync(project);
    const outputs: string[] = [];
    for (const line of firstCohortCommands()) {
      const command = line.replaceAll('../your-repo', `../${name}`);
      const r = await sh(project, 'sh', ['-c', command]);
      outputs.push(`$ ${command}\n${r.stdout}${r.stderr}`);
      expect(r.code, outputs.join('\n')).toBe(0);
    }
    const all = outputs.join('\n');
    expect(all).toMatch(/^3 tasks written \(up to 3 asked for\)/m);
    const certified = readdirSync(join(project, 'report', 'nodes', 'certify')).filter(
      (id) =>
        (JSON.parse(readFileSync(join(project, 'report', 'nodes', 'certify', id, 'verdict.json'), 'utf8')) as { verdict: string }).verdict === 'certified',
    );
    expect(certified, all).toHaveLength(3);
    expect(all).toMatch(/context-file: claude-md vs control {2}(POSITIVE|NEGATIVE|WITHIN NOISE|INCONCLUSIVE|UNISOLATED|INSUFFICIENT)/);
    expect(all).toMatch(/^bundle ok: \d+ files match manifest\.json/m);
  });

  it('as a dev dependency without its optional dependencies: doctor and generate name what to install, and that command works', async () => {
    const project = join(tmp, 'devdep');
    mkdirSync(project);
    const repo = join(tmp, 'strkit-2');
    foreignRepo(repo);
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'team-evals', private: true }) + '\n');
    const install = await sh(project, 'npm', ['install', '--save-dev', '--omit=optional', '--prefer-offline', '--no-audit', '--no-fund', tarball]);
    expect(install.code, install.stdout + install.stderr).toBe(0);
    expect(existsSync(join(project, 'node_modules', '@anthropic-ai', 'claude-code'))).toBe(false);
    const npx = (...args: string[]) => sh(project, 'npx', ['--no-install', 'pairbench', ...args]);
    expect((await npx('init', '--repo', repo, '--fake-model')).code).toBe(0);

    // TypeScript's parser is an optional dependency: generate names the command that installs it.
    const args = ['generate', 'stub_function', '--repo', repo, '--commit', 'HEAD', '--out', 'tasks', '--count', '1', '--add-to', 'bench.config.yaml'];
    const noTs = await npx(...args);
    expect(noTs.code, noTs.stdout + noTs.stderr).toBe(1);
    // The agent CLI too: doctor names it, with the command that installs it where this pairbench finds it.
    const noAgent = await npx('doctor');
    expect(noAgent.code, noAgent.stdout).toBe(1);
    expect(noAgent.stdout).toMatch(/MISSING {2}agent claude-code \(step attempts\): the claude-code CLI \(@anthropic-ai\/claude-code\) is not installed/);
    // Each printed command, as printed (npm may bring the other optional ones along: a second install is a no-op).
    await runPrinted(project, noTs.stderr, /npm install --save-dev typescript@\S+/);
    await runPrinted(project, noAgent.stdout, /npm install --save-dev @anthropic-ai\/claude-code@\S+/);
    const generated = await npx(...args);
    expect(generated.code, generated.stdout + generated.stderr).toBe(0);
    const doctor = await npx('doctor');
    expect(doctor.code, doctor.stdout + doctor.stderr).toBe(0);
  });
});
