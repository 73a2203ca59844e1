import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import { clippingProblems } from './browser-layout.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliOutputProblems } from './cli-schema.js';
import { goldenStore } from './golden-store.js';

// `pairbench view`, used as a person uses it: the real CLI serves the example cohort's bundle
// (run end to end here), and headless Chromium clicks through it. The agent's output is
// hostile: a trajectory carrying markup must show as text and run nothing.
const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const BIN = join(ROOT, 'bin', 'pairbench.js');
const CHROMIUM = '/usr/bin/chromium';
const skipBrowser = !existsSync(CHROMIUM) && process.env['PAIRBENCH_REQUIRE_BROWSER'] !== '1';
if (skipBrowser) console.warn(`viewer.test.ts: SKIPPING: ${CHROMIUM} is missing (set PAIRBENCH_REQUIRE_BROWSER=1 to make this a failure).`);

const ENV = { PATH: process.env['PATH'], CI: '1', HOME: process.env['HOME'] };

function pairbench(args: string[], cwd = ROOT): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [BIN, ...args], { cwd, encoding: 'utf8', env: ENV, maxBuffer: 1 << 26 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Starts `pairbench view ARGS --port 0 --json` and resolves with its URL once it serves. */
function startView(args: string[], cwd = ROOT): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [BIN, 'view', ...args, '--port', '0', '--json'], { cwd, env: ENV, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stderr!.on('data', (d) => (err += d));
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (d) => {
      out += d;
      const line = out.split('\n')[0];
      if (!out.includes('\n') || !line) return;
      const printed = JSON.parse(line) as { url: string };
      expect(cliOutputProblems('#/definitions/view', printed)).toBe('');
      resolve({ child, url: printed.url });
    });
    child.on('exit', (code) => reject(new Error(`view exited ${code}: ${out}${err}`)));
  });
}

/** The status of GET /api/state sent with this Host header. */
function statusWithHost(url: string, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}api/state`, { headers: { host } }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end();
  });
}

/** The page is no wider than the window, nothing in it is clipped (browser-layout.ts), at 1400 and 400 px; a screenshot of each. */
async function noOverflow(page: Page, dir: string, name: string): Promise<void> {
  for (const width of [1400, 400]) {
    await page.setViewportSize({ width, height: 900 });
    const [scroll, inner] = (await page.evaluate('[document.documentElement.scrollWidth, window.innerWidth]')) as [number, number];
    expect(scroll, `${name} at ${width} px is ${scroll} px wide`).toBeLessThanOrEqual(inner);
    // Element by element: no plot mark beyond the visible edge, no table scrolling without a cue.
    expect(await clippingProblems(page), `${name} at ${width} px`).toEqual([]);
    const shot = join(process.env['PAIRBENCH_SCREENSHOTS'] ?? dir, `viewer-${name}-${width}.png`);
    await page.screenshot({ path: shot, fullPage: true });
    expect(readFileSync(shot).subarray(1, 4).toString()).toBe('PNG');
  }
  await page.setViewportSize({ width: 1400, height: 900 });
}

describe.skipIf(skipBrowser)('pairbench view', () => {
  let dir: string;
  let bundle: string;
  let browser: Browser;
  const children: ChildProcess[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'pairbench-view-'));
    const store = join(dir, 'store');
    // The example built end to end once per suite (test/golden-store.ts); run on the copy, it is a no-op.
    await goldenStore('bench.config.yaml', store);
    const run = pairbench(['run', '--store', store, '--progress', 'none']);
    expect(run.status, run.stderr).toBe(0);
    bundle = join(dir, 'bundle');
    const exported = pairbench(['export', '--store', store, '--out', bundle]);
    expect(exported.status, exported.stderr).toBe(0);
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
    });
  });

  afterAll(async () => {
    for (const c of children) c.kill('SIGTERM');
    await browser?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  async function openPage(url: string): Promise<{ page: Page; errors: string[]; requests: string[] }> {
    const page = await browser.newPage();
    const errors: string[] = [];
    const requests: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
    page.on('request', (r) => requests.push(r.url()));
    await page.goto(url);
    return { page, errors, requests };
  }

  it('from a verdict to a task to its pair: both diffs and both verifier outputs, no sideways scroll at 1400 or 400 px', async () => {
    const { child, url } = await startView([bundle]);
    children.push(child);
    const { page, errors, requests } = await openPage(url);
    await page.getByRole('link', { name: 'context-file' }).click();
    await page.getByTestId('verdict').first().waitFor();
    expect(await page.getByTestId('verdict').first().textContent()).toContain('POSITIVE');
    expect(await page.getByTestId('status-bar').textContent()).toContain('claude-code');
    await noOverflow(page, dir, 'cohort');
    // The verdict's link shows the tasks of its treatment; a task opens its pair.
    await page.getByTestId('verdict').first().getByRole('link').click();
    expect(page.url()).toContain('?arm=claude-md');
    const task = await page.getByTestId('tasks').locator('tbody a').first().textContent();
    await page.getByTestId('tasks').locator('tbody a').first().click();
    await page.getByTestId('attempt').first().waitFor();
    expect(page.url()).toContain(`/task/${encodeURIComponent(task!)}`);
    const cards = page.getByTestId('attempt');
    // Each card loads on a request of its own (until then a placeholder without the test id): wait
    // for the fourth with the browser's own waiting, not a poll with a one-second bound.
    await cards.nth(3).waitFor();
    expect(await cards.count()).toBe(4); // control and claude-md, 2 reps
    const arms = new Set<string>();
    for (let i = 0; i < 4; i++) {
      const card = cards.nth(i);
      arms.add((await card.locator('h3').first().textContent())!.split(' · ')[0]!);
      await card.getByTestId('verifier').filter({ hasText: 'exit' }).waitFor();
      expect((await card.getByTestId('diff').textContent())!.length).toBeGreaterThan(0);
    }
    expect([...arms].sort()).toEqual(['claude-md', 'control']);
    // The treatment's diff touches the code; its delivery evidence names where the marker reached the model.
    expect(await page.getByTestId('delivery').first().textContent()).toContain('gateway exchange');
    await noOverflow(page, dir, 'pair');
    // The link is stable: pasted into a new tab it opens the same pair.
    const again = await openPage(page.url());
    await again.page.getByTestId('attempt').first().waitFor();
    expect(await again.page.locator('h1').textContent()).toBe(task);
    await again.page.close();
    // Everything came from the viewer itself: nothing from outside.
    expect(requests.filter((r) => !r.startsWith(url))).toEqual([]);
    expect(errors).toEqual([]);
    await page.close();
  });

  it("over the config's store: the bundle its export node built, and the cohort's version history from the registry", async () => {
    const { child, url } = await startView(['--store', join(dir, 'store')]);
    children.push(child);
    const { page, errors } = await openPage(url);
    await page.getByRole('link', { name: 'context-file' }).click();
    await page.getByTestId('history').waitFor();
    expect(await page.getByTestId('history').textContent()).toMatch(/^cohort context-file\n {2}version 1 {2}freeze [0-9a-f]{12} .* attempts executed 32\n/);
    expect(await page.getByTestId('verdict').first().textContent()).toContain('POSITIVE');
    expect(errors).toEqual([]);
    await page.close();
  });

  it('a directory of bundles (export --out with several export nodes): one cohort each, named by path when names repeat', async () => {
    const several = join(dir, 'several');
    cpSync(bundle, join(several, 'export', 'context-file'), { recursive: true });
    cpSync(bundle, join(several, 'again'), { recursive: true });
    const { child, url } = await startView([several]);
    children.push(child);
    const state = (await (await fetch(`${url}api/state`)).json()) as { cohorts: { id: string; cohort: string }[] };
    expect(state.cohorts.map((c) => [c.id, c.cohort])).toEqual([
      ['again', 'context-file'],
      ['export/context-file', 'context-file'],
    ]);
    const page = await (await fetch(`${url}api/cohorts/${encodeURIComponent('export/context-file')}`)).json();
    expect((page as { verdicts: { verdict: string }[] }).verdicts[0]!.verdict).toBe('POSITIVE');
  });

  it('a directory that is not a bundle, and a port in use, are said so', async () => {
    expect(pairbench(['view', join(dir, 'nowhere')]).stderr).toBe(
      `error: ${join(dir, 'nowhere')} does not exist\n  hint: give the directory pairbench export --out wrote, or no directory to view the config's store\n`,
    );
    expect(pairbench(['view', join(dir, 'store')]).stderr).toBe(
      `error: ${join(dir, 'store')} is not a pairbench bundle: it has no readable results.json\n  hint: give the directory pairbench export --out wrote, or no directory to view the config's store\n`,
    );
    expect(pairbench(['view', bundle, '--port', '80000']).stderr).toBe(
      `pairbench view: --port takes a port number (0-65535), not "80000"\nRun 'pairbench view --help' for its options.\n`,
    );
    const { child, url } = await startView([bundle]);
    children.push(child);
    const taken = pairbench(['view', bundle, '--port', new URL(url).port]);
    expect(taken.status).toBe(2);
    expect(taken.stderr).toBe(`error: port ${new URL(url).port} is in use\n  hint: pass --port N (0 picks a free one)\n`);
  });

  it('markup in an agent trajectory and gateway log is shown as text and runs nothing', async () => {
    const hostile = join(dir, 'hostile');
    cpSync(bundle, hostile, { recursive: true });
    const runDir = join(hostile, 'nodes', 'attempts', 'csv-amount', 'control', '1');
    const trajectory = JSON.parse(readFileSync(join(runDir, 'trajectory.json'), 'utf8')) as { steps: unknown[] };
    const payload = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2"><b>bold?</b>';
    trajectory.steps.push({ step_id: 99, source: 'agent', message: payload, observation: { results: [{ content: payload }] } });
    writeFileSync(join(runDir, 'trajectory.json'), JSON.stringify(trajectory));
    writeFileSync(join(runDir, 'gateway.jsonl'), readFileSync(join(runDir, 'gateway.jsonl'), 'utf8') + JSON.stringify({ response: payload }) + '\n');
    // A record whose sources point out of the bundle reads nothing there.
    const results = JSON.parse(readFileSync(join(hostile, 'results.json'), 'utf8')) as {
      attempts: {
        node: string;
        sources: { run: string };
        leakage: { kind: string; where: string; evidence: string }[];
        sandbox: { egress_enforced: boolean };
      }[];
    };
    // The audit's finding on this attempt is marked where it happened.
    results.attempts.find((a) => a.node === 'audit/csv-amount/control/1')!.leakage = [
      { kind: 'hidden-content', where: 'trajectory step 99', evidence: 'window.__pwned = 1' },
    ];
    const planted = join(dir, 'secret');
    mkdirSync(planted);
    writeFileSync(join(planted, 'patch.diff'), 'outside the bundle');
    results.attempts.find((a) => a.node === 'audit/csv-amount/claude-md/1')!.sources.run = '../../secret';
    // One attempt whose egress was not enforced: the status bar may not say "enforced" from the others.
    results.attempts.find((a) => a.node === 'audit/csv-amount/control/2')!.sandbox.egress_enforced = false;
    writeFileSync(join(hostile, 'results.json'), JSON.stringify(results));
    const { child, url } = await startView([hostile]);
    children.push(child);
    const { page, errors } = await openPage(`${url}#/c/context-file/attempt/${encodeURIComponent('audit/csv-amount/control/1')}`);
    const observation = page.getByTestId('observation').last();
    await observation.waitFor();
    expect(await observation.textContent()).toBe(payload);
    expect(await page.getByTestId('finding').first().textContent()).toBe('leakage (hidden-content) at trajectory step 99: window.__pwned = 1');
    const marked = page.locator('[data-testid="step"].finding');
    expect(await marked.count()).toBe(1);
    expect(await marked.locator('b').first().textContent()).toBe('99 · agent');
    await page.locator('details summary').last().click();
    expect(await page.locator('details pre').last().textContent()).toContain(payload.replaceAll('"', '\\"'));
    expect(await page.evaluate('window.__pwned')).toBeUndefined();
    expect(await page.locator('main img, main script').count()).toBe(0);
    expect(await page.locator('main b', { hasText: 'bold?' }).count()).toBe(0);
    expect(errors).toEqual([]);
    await page.close();
    const cohort = (await (await fetch(`${url}api/cohorts/context-file`)).json()) as { status: { egress: string } };
    expect(cohort.status.egress).toBe('none (NOT enforced in 1 of 32 attempts)');
    const escaped = (await (await fetch(`${url}api/cohorts/context-file/attempts/${encodeURIComponent('audit/csv-amount/claude-md/1')}`)).json()) as {
      diff: string | null;
    };
    expect(escaped.diff).toBeNull();
    // Read-only, and only on its own loopback name (a page elsewhere cannot rebind a name to it).
    expect((await fetch(`${url}api/state`, { method: 'POST' })).status).toBe(405);
    expect(await statusWithHost(url, 'attacker.example')).toBe(403);
    expect(await statusWithHost(url, new URL(url).host)).toBe(200);
  });

  it('started during a run, it shows nodes completing, which one runs and for how long, what is queued, and an ETA', async () => {
    const live = join(dir, 'live');
    mkdirSync(live);
    const release = join(live, 'release');
    // Six nodes, one at a time; the second waits until the test releases it, so the page is
    // watched while a node is running (an event, not a sleep, decides when it ends).
    writeFileSync(
      join(live, 'bench.config.yaml'),
      `steps:\n  slow:\n    kind: command\n    matrix: { n: 6 }\n    cmd: 'if [ "{{matrix.n}}" = 2 ]; then while [ ! -f ${release} ]; do sleep 0.05; done; fi; echo "{{matrix.n}}" > out'\n    outs: [out]\n`,
    );
    const { child, url } = await startView(['--config', join(live, 'bench.config.yaml')]);
    children.push(child);
    const { page, errors } = await openPage(url);
    const heading = page.getByTestId('progress').locator('h2');
    await expect.poll(() => heading.textContent()).toBe('Run in progress: 0 of 6 nodes built');
    const run = spawn(process.execPath, [BIN, 'run', '--config', join(live, 'bench.config.yaml'), '--jobs', '1', '--progress', 'none'], {
      env: ENV,
      stdio: 'ignore',
    });
    const done = new Promise<number | null>((resolve) => run.on('exit', resolve));
    try {
      // While slow/2 holds the run: it is named as running, with its time so far; the rest are queued; the step has an ETA from slow/1.
      await expect
        .poll(
          () =>
            page
              .getByTestId('running')
              .textContent()
              .catch(() => ''),
          { timeout: 120_000 },
        )
        .toMatch(/^running \d+s · slow\/2$/);
      expect(await heading.textContent()).toBe('Run in progress: 1 of 6 nodes built');
      expect(await page.getByTestId('progress-split').textContent()).toMatch(/^1 running, 4 queued /);
      expect(await page.getByTestId('steps').textContent()).toMatch(/^slow: 1 of 6 built, about \d+s left$/);
    } finally {
      writeFileSync(release, '');
    }
    expect(await done).toBe(0);
    // Then every node is built: the progress panel gives way to the cohort list.
    await expect.poll(() => page.getByTestId('progress').count(), { timeout: 600_000 }).toBe(0);
    expect(errors).toEqual([]);
    await page.close();
  });
});
