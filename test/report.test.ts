import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import { analyze, defaultSpec } from '../stats/index.js';
import type { AnalysisResult, AttemptRecord } from '../stats/types.js';
import { renderCsv, renderHtml, renderMarkdown, CSV_COLUMNS, type ReportContext } from '../report/report.js';
import { pct } from '../report/report-format.js';
import { clippingProblems } from './browser-layout.js';

// ---------------------------------------------------------------- fixtures

const NASTY_TASK = '<img src=x onerror="document.title=\'pwned\'">';
// Eight independent tasks (a family each): enough units for the test to reach alpha.
const TASKS = ['t-alpha', 't-beta', 't-gamma', 't-delta', 't-epsilon', 't-zeta', 't-eta', NASTY_TASK];
const REPS = 3;

function attempt(o: Partial<AttemptRecord> & Pick<AttemptRecord, 'task' | 'arm' | 'rep'>): AttemptRecord {
  return {
    node: `run/${o.arm}/${o.task}/${o.rep}`,
    family: `fam-${TASKS.indexOf(o.task)}`,
    category: 'stub_function',
    admission: 'accepted',
    reason_code: 'ok',
    explanation: '',
    pass: true,
    no_answer: false,
    exit_reason: 'done',
    infra_error: false,
    usage: { input_tokens: 10_000, output_tokens: 1_000, cache_write_tokens: 0, cache_read_tokens: 0 },
    cost_usd: 0.05,
    cost_confidence: 'exact',
    wall_ms: 60_000,
    turns: 8,
    tool_calls: 10,
    agent: { adapter: 'claude-code', version: '2.1.197', model: 'model-a', provider: 'anthropic' },
    sandbox: {
      backend: 'bubblewrap',
      isolation: 'namespaces',
      egress_mode: 'none',
      egress_enforced: true,
      image_id: null,
      resources: { cpus: null, memory_mb: null, pids: null },
    },
    mechanism: { delivered: null, used: null },
    started_at: '2026-01-01T00:00:00.000Z',
    ended_at: '2026-01-01T00:01:00.000Z',
    ...o,
  };
}

/**
 * Control fails the first four tasks and passes the last; the treatment passes
 * everything at 1.2x the control's tokens. One control attempt of t-beta is
 * excluded (kept, never in an estimate), with an explanation that needs CSV quoting.
 */
function positiveAttempts(): AttemptRecord[] {
  const out: AttemptRecord[] = [];
  TASKS.forEach((task, ti) => {
    for (let rep = 0; rep < REPS; rep++) {
      out.push(attempt({ task, arm: 'control', rep, pass: ti === TASKS.length - 1 }));
      out.push(
        attempt({
          task,
          arm: 'treatment',
          rep,
          pass: true,
          usage: { input_tokens: 12_000, output_tokens: 1_200, cache_write_tokens: 0, cache_read_tokens: 0 },
          cost_usd: 0.06,
          mechanism: { delivered: true, used: rep !== 0 },
        }),
      );
    }
  });
  const excluded = out.find((a) => a.task === 't-beta' && a.arm === 'control' && a.rep === 1)!;
  excluded.admission = 'excluded';
  excluded.pass = null;
  excluded.reason_code = 'mutation-outside-allowed-paths';
  excluded.explanation = 'changed "tests/test_x.py", which is not allowed,\nand setup.cfg';
  return out;
}

const DOCKER_ENFORCED: AttemptRecord['sandbox'] = {
  backend: 'docker',
  isolation: 'container',
  egress_mode: 'none',
  egress_enforced: true,
  image_id: 'sha256:' + 'a'.repeat(64),
  resources: { cpus: 2, memory_mb: 4096, pids: 512 },
};

/** Same tasks in an enforced docker sandbox, but the treatment ran on another model: the comparison must be refused. */
function refusedAttempts(): AttemptRecord[] {
  return positiveAttempts().map((a) => ({
    ...a,
    sandbox: DOCKER_ENFORCED,
    agent: a.arm === 'treatment' ? { ...a.agent, model: 'model-b' } : a.agent,
  }));
}

const spec = defaultSpec('control', ['treatment'], {
  overhead: { usd: 0.5, tokens: 40_000, source: 'generating CLAUDE.md with model-gen' },
});

function context(egressEnforced: boolean): ReportContext {
  return {
    cohort: 'context-file v1 <b>bold?</b>',
    times: { exported_at: '2026-02-03T04:05:06.000Z', first_attempt_at: '2026-02-03T03:00:00.000Z', last_attempt_at: '2026-02-03T04:00:00.000Z' },
    config_digest: 'c'.repeat(64),
    freeze_digest: 'f'.repeat(64),
    arms: { control: { role: 'control', treatment: 'nothing added' }, treatment: { role: 'treatment', treatment: 'CLAUDE.md from fixtures/ctx.md' } },
    agent: { adapter: 'claude-code', version: '2.1.197', model: 'model-a' },
    sandbox: egressEnforced
      ? { backend: 'docker', egress_mode: 'none', egress_enforced: true, image_id: 'sha256:' + 'a'.repeat(64), isolation: 'container' }
      : { backend: 'local', egress_mode: 'open', egress_enforced: false, image_id: null, isolation: 'none' },
    tasks: TASKS.map((id, i) => ({ id, family: `fam-${i}`, repo: 'example/repo', commit: '0123456789abcdef0123456789abcdef01234567' })),
    reps: REPS,
    limits: { turns: 30, wall_seconds: 600, tokens: null, cost_usd: 1 },
    verifier_kind: 'hidden command verifier (FAIL_TO_PASS + PASS_TO_PASS) in a fresh sandbox',
    fixture_note: 'results on fixtures prove the machinery, not any product',
  };
}

let positive: AnalysisResult;
let refused: AnalysisResult;
beforeAll(() => {
  positive = analyze(positiveAttempts(), spec);
  refused = analyze(refusedAttempts(), spec);
  // The fixtures mean what the tests below assume.
  expect(positive.comparisons[0]!.verdict).toBe('positive');
  expect(refused.comparisons[0]!.verdict).toBe('refused');
});

// ---------------------------------------------------------------- Markdown

describe('the Methods section', () => {
  it('names the interval and the test each figure actually used, never a default no figure used', () => {
    const c = positive.comparisons[0]!;
    expect(c.ci!.method).toBe('cluster-t');
    for (const text of [renderMarkdown(positive, context(false)), renderHtml(positive, context(false))]) {
      const methods = text.slice(text.search(/## Method|<section id="methods"/));
      expect(methods).toMatch(/interval: 95% CI, cluster t over 8 units, 7 df \(treatment vs control\)/);
      expect(methods).toMatch(/test: sign-flip over tasks, exact, Holm-adjusted over the cohort/);
      // The pass-rate interval is not the bootstrap the spec configures (cost medians use that, and say so).
      expect(methods).not.toMatch(/CI by hierarchical bootstrap|^- Bootstrap:/m);
    }
  });
});

describe('renderMarkdown', () => {
  it('a positive verdict: effect, CI, envelope, all three counts, cost-ratio labels, overhead on its own line', () => {
    const md = renderMarkdown(positive, context(false));
    const c = positive.comparisons[0]!;
    expect(md).toContain('### treatment vs control: **POSITIVE**');
    expect(md).toContain('**+87.5 pp**');
    expect(md).toMatch(/- CI: \[\+\d+\.\d pp, \+\d+\.\d pp\] \(95% CI, cluster t over 8 units, 7 df\)/);
    expect(md).toContain(`- noise envelope: ±${(c.envelope!.value * 100).toFixed(1)} pp`);
    expect(md).toContain('(a) helped: 7 · (b) no difference: 1 · (c) hurt: 0 · no answer: 0');
    // Every per-task row carries its cost-ratio label.
    for (const t of c.outcomes!.tasks) expect(md).toContain(t.label);
    expect(md).toContain('(a) at 1.2x the control cost');
    expect(md).toContain('(b) at 1.2x the control cost');
    // Eval cost per arm, overhead on a separate line, never summed.
    expect(md).toMatch(/^\| control \| \$1\.2000 \| exact \|/m); // every attempt, the excluded one too
    expect(md).toMatch(/^\| treatment \| \$1\.4400 \| exact \|/m);
    expect(md).toMatch(/^Overhead \(separate stream, never added to eval cost\): \$0\.5000, 40000 tokens — generating CLAUDE\.md with model-gen$/m);
    expect(md).not.toContain('$1.7000'); // control + overhead
    expect(md).not.toContain('$1.9400'); // treatment + overhead
    expect(md).not.toContain('$3.1400'); // everything
    // Infra-error rates, exclusions, envelope formula, scope.
    expect(md).toContain('- control: 0.0% (0 of 24 tries, 24 attempts)');
    expect(md).toContain('Excluded attempts: 1 (kept in the bundle, used in no estimate).');
    expect(md).toContain('mutation-outside-allowed-paths: 1');
    expect(md).toContain('envelope = max(1/n_tasks');
    expect(md).toContain('**What these numbers are:**');
    expect(md).toContain('**What they are not:**');
    expect(md).toContain('results on fixtures prove the machinery, not any product');
    expect(md).toContain('NOT enforced');
    // Data is escaped: no raw HTML from a task name or the cohort name reaches the summary.
    expect(md).not.toContain('<img');
    expect(md).not.toContain('<b>');
    expect(md).toContain('&lt;img src=x onerror="document.title=\'pwned\'"&gt;');
  });

  it('a refused verdict: the reason, delta: null, and the three counts still printed', () => {
    const md = renderMarkdown(refused, context(false));
    expect(md).toContain('### treatment vs control: **REFUSED**');
    expect(md).toContain('- delta: null');
    expect(md).toContain('- CI: —');
    expect(md).toMatch(/- reason: config-mismatch: .*model/);
    expect(md).toContain('(a) helped: — · (b) no difference: — · (c) hurt: — · no answer: — (not computed: refused)');
    expect(md).toContain('Overhead (separate stream, never added to eval cost): $0.5000');
    expect(md).toContain('envelope = max(1/n_tasks'); // the formula is stated even with no envelope
    expect(md).toContain('model model-a (**recorded: model-a, model-b**)');
    expect(md).toContain('Per-arm figures are descriptive.');
  });

  it('is a pure function of its inputs', () => {
    expect(renderMarkdown(positive, context(false))).toBe(renderMarkdown(analyze(positiveAttempts().reverse(), spec), context(false)));
  });
});

/** A 2x2 factorial cohort where only the graph lever helps (task 0 passes in every arm). */
function factorialReport(): { result: AnalysisResult; ctx: ReportContext } {
  const levels = { raw: { graph: 0, rules: 0 }, graph: { graph: 1, rules: 0 }, rules: { graph: 0, rules: 1 }, full: { graph: 1, rules: 1 } } as const;
  const attempts: AttemptRecord[] = [];
  for (const arm of Object.keys(levels) as Array<keyof typeof levels>) {
    TASKS.forEach((task, ti) => {
      for (let rep = 0; rep < REPS; rep++) attempts.push(attempt({ task, arm, rep, pass: levels[arm].graph === 1 || ti === 0 }));
    });
  }
  const result = analyze(attempts, defaultSpec('raw', ['graph', 'rules', 'full'], { factorial: { factors: ['graph', 'rules'], levels } }));
  const ctx = {
    ...context(false),
    arms: { raw: { treatment: 'none' }, graph: { treatment: 'graph' }, rules: { treatment: 'rules' }, full: { treatment: 'graph + rules' } },
  };
  return { result, ctx };
}

describe('factorial cohorts', () => {
  it('draw the 2x2 interaction plot: one point per cell at its pass rate, one line per level of the second factor', () => {
    const { result, ctx } = factorialReport();
    const html = renderHtml(result, ctx);
    const plot = html.slice(html.indexOf('<svg class="interaction-plot"'), html.indexOf('</svg>', html.indexOf('<svg class="interaction-plot"')));
    expect(plot.length).toBeGreaterThan(0);
    const cells = [...plot.matchAll(/<circle class="interaction-cell level-(\d)" data-arm="([^"]+)" data-rate="([^"]+)" cx="([^"]+)" cy="([^"]+)"/g)];
    const rate = (arm: string) => result.arms.find((a) => a.arm === arm)!.completion_rate!;
    expect(cells.map((c) => [c[2], Number(c[3])]).sort()).toEqual(['full', 'graph', 'raw', 'rules'].map((a) => [a, rate(a)]));
    // The graph lever lifts both rows alike (rules does nothing): the two lines are parallel, so there is no interaction to see.
    const lines = [...plot.matchAll(/<line class="interaction-line level-\d" x1="[^"]+" y1="([^"]+)" x2="[^"]+" y2="([^"]+)"/g)];
    expect(lines).toHaveLength(2);
    expect(Number(lines[0]![2]) - Number(lines[0]![1])).toBeCloseTo(Number(lines[1]![2]) - Number(lines[1]![1]), 6);
    expect(rate('graph')).toBeGreaterThan(rate('raw'));
    // The Markdown report gives the same four rates as a table.
    const md = renderMarkdown(result, ctx);
    expect(md).toContain('| | rules off | rules on |');
    expect(md).toContain(`| graph off | ${pct(rate('raw'))} (raw) | ${pct(rate('rules'))} (rules) |`);
    expect(md).toContain('| graph on | 100.0% (graph) | 100.0% (full) |');
  });

  it('render their main effects and interaction in Markdown and HTML', () => {
    const { result, ctx } = factorialReport();
    expect(result.factorial).not.toBeNull();
    const md = renderMarkdown(result, ctx);
    expect(md).toMatch(/^## Factorial \(graph x rules\)$/m);
    for (const e of result.factorial!.main_effects) expect(md).toContain(`- ${e.name}: `);
    expect(md.match(/^### .* vs raw: \*\*/gm)).toHaveLength(3);
    const html = renderHtml(result, ctx);
    expect(html).toContain('<section id="factorial">');
    expect(html.match(/<article class="comparison /g)).toHaveLength(3);
  });

  it('open on every comparison and effect at a glance, before the first verdict section', () => {
    const { result, ctx } = factorialReport();
    const md = renderMarkdown(result, ctx);
    const glance = md.slice(md.indexOf('## At a glance'), md.indexOf('## Verdicts'));
    expect(md.indexOf('## At a glance')).toBeGreaterThan(0);
    // Every comparison and every factorial effect, each with its verdict, however far down its own section is.
    expect(glance).toContain('| graph vs raw | **WITHIN NOISE** | +87.5 pp | [+57.9 pp, +100.0 pp] |');
    expect(glance).toContain('| graph x rules (factorial) | **WITHIN NOISE** | 0.0 pp |');
    expect(glance.match(/^\| /gm)).toHaveLength(1 + 3 + result.factorial!.main_effects.length + (result.factorial!.interaction ? 1 : 0));
    const html = renderHtml(result, ctx);
    expect(html.indexOf('<svg class="summary-plot"')).toBeLessThan(html.indexOf('<section id="verdicts">'));
    expect(html.match(/<polygon class="summary-mark"/g)).toHaveLength(3 + result.factorial!.main_effects.length + (result.factorial!.interaction ? 1 : 0));
  });
});

// ---------------------------------------------------------------- CSV

/** A strict RFC 4180 parser: the test's own, so it does not share a bug with the writer. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let i = 0;
  let quoted = false;
  while (i < text.length) {
    const ch = text[i]!;
    if (quoted) {
      if (ch === '"' && text[i + 1] === '"') {
        field += '"';
        i += 2;
      } else if (ch === '"') {
        quoted = false;
        i++;
      } else {
        field += ch;
        i++;
      }
    } else if (ch === '"') {
      if (field !== '') throw new Error(`quote inside an unquoted field at ${i}`);
      quoted = true;
      i++;
    } else if (ch === ',') {
      row.push(field);
      field = '';
      i++;
    } else if (ch === '\r' && text[i + 1] === '\n') {
      row.push(field);
      rows.push(row);
      row = [];
      field = '';
      i += 2;
    } else if (ch === '\n' || ch === '\r') {
      throw new Error(`bare line break outside quotes at ${i}`);
    } else {
      field += ch;
      i++;
    }
  }
  if (quoted) throw new Error('unterminated quote');
  if (field !== '' || row.length > 0) throw new Error('last record not terminated by CRLF');
  return rows;
}

describe('renderCsv', () => {
  it('one row per attempt (excluded ones too), a header, RFC 4180 quoting', () => {
    const attempts = positiveAttempts();
    const csv = renderCsv(attempts);
    const rows = parseCsv(csv);
    expect(rows[0]).toEqual([...CSV_COLUMNS]);
    expect(rows).toHaveLength(attempts.length + 1);
    for (const r of rows) expect(r).toHaveLength(CSV_COLUMNS.length);

    const col = (name: string): number => CSV_COLUMNS.indexOf(name);
    const excluded = rows.filter((r) => r[col('admission')] === 'excluded');
    expect(excluded).toHaveLength(1);
    expect(excluded[0]![col('explanation')]).toBe('changed "tests/test_x.py", which is not allowed,\nand setup.cfg');
    expect(excluded[0]![col('pass')]).toBe('');
    expect(csv).toContain('"changed ""tests/test_x.py"", which is not allowed,\nand setup.cfg"');
    // A task name with quotes survives the round trip.
    expect(rows.filter((r) => r[col('task')] === NASTY_TASK)).toHaveLength(2 * REPS);
    // Sorted, so the bytes do not depend on input order.
    expect(renderCsv([...attempts].reverse())).toBe(csv);
  });
});

// ---------------------------------------------------------------- HTML

describe('renderHtml (static)', () => {
  it('plots cost against pass rate, one point per arm, saying which cost it uses', () => {
    const result = analyze(positiveAttempts(), spec);
    const html = renderHtml(result, context(false));
    const plot = html.slice(html.indexOf('<figure class="cost-vs-pass">'), html.indexOf('</figure>', html.indexOf('<figure class="cost-vs-pass">')));
    const points = [...plot.matchAll(/<circle class="arm-point" data-arm="([^"]+)" data-cost="([^"]+)" data-rate="([^"]+)"/g)];
    expect(points.map((p) => p[1]).sort()).toEqual(result.arms.map((a) => a.arm).sort());
    for (const p of points) {
      const a = result.arms.find((m) => m.arm === p[1])!;
      expect(Number(p[3])).toBe(a.completion_rate);
      const priced = result.arms.every((m) => m.cost_usd.mean !== null);
      expect(Number(p[2])).toBe(priced ? a.cost_usd.mean : a.weighted_cost.mean);
      expect(plot).toContain(priced ? 'mean USD per accepted attempt' : 'mean weighted tokens per accepted attempt');
    }
  });

  it('(a)/(b)/(c) as a stacked bar: one segment per class present, widths in proportion to its tasks', () => {
    const html = renderHtml(positive, context(false));
    const counts = positive.comparisons[0]!.outcomes!.counts;
    const segments = [...html.matchAll(/<rect class="abc-segment outcome-([a-z-]+)" data-outcome="[a-z-]+" x="[\d.]+" y="0" width="([\d.]+)"/g)];
    const present = (['a', 'b', 'c', 'no_answer'] as const).filter((k) => counts[k] > 0);
    expect(segments.map((m) => m[1])).toEqual(present.map((k) => (k === 'no_answer' ? 'no-answer' : k)));
    const total = counts.a + counts.b + counts.c + counts.no_answer;
    segments.forEach((m, i) => expect(Number(m[2])).toBeCloseTo((counts[present[i]!] / total) * 520, 0));
    expect(html).toContain(`<title>(a) helped: ${counts.a} of ${total} tasks</title>`);
  });

  it('is self-contained: no script, no external reference, escaped data', () => {
    const html = renderHtml(positive, context(false));
    expect(html.startsWith('<!doctype html>')).toBe(true);
    expect(html).not.toMatch(/<script/i);
    expect(html).not.toMatch(/<link/i);
    // Attribute values are escaped data; what matters is that no tag has a src/href attribute.
    const withRef = html.replace(/"[^"]*"/g, '""').match(/<[^>]*\s(src|href)=[^>]*>/i);
    expect(withRef?.[0]).toBeUndefined();
    expect(html).not.toMatch(/url\(/i);
    expect(html).not.toMatch(/@import/i);
    expect(html).toContain(`Content-Security-Policy`);
    expect(html).not.toContain('<img');
    expect(html).not.toContain('<b>bold?</b>');
    expect(html).toContain('&#60;b&#62;bold?&#60;/b&#62;');
    expect(renderHtml(positive, context(false))).toBe(html);
  });
});

const CHROMIUM = '/usr/bin/chromium';
const haveChromium = existsSync(CHROMIUM);
const requireBrowser = process.env['PAIRBENCH_REQUIRE_BROWSER'] === '1';
const skipBrowser = !haveChromium && !requireBrowser;
if (skipBrowser) {
  console.warn(`report.test.ts: SKIPPING the headless Chromium checks: ${CHROMIUM} is missing (set PAIRBENCH_REQUIRE_BROWSER=1 to make this a failure).`);
}

describe.skipIf(skipBrowser)('renderHtml in headless Chromium', () => {
  let browser: Browser;
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'pairbench-report-'));
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
  });
  afterAll(async () => {
    await browser?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** The computed background colour of the first element matching `selector` (the test's tsconfig has no DOM lib). */
  function backgroundOf(page: Page, selector: string): Promise<string> {
    return page.evaluate(`getComputedStyle(document.querySelector(${JSON.stringify(selector)})).backgroundColor`);
  }

  /** Opens the page from a file:// URL and records every error and every request. */
  async function open(name: string, html: string): Promise<{ page: Page; errors: string[]; requests: string[]; url: string }> {
    const file = join(dir, name);
    writeFileSync(file, html);
    const url = pathToFileURL(file).href;
    const page = await browser.newPage();
    const errors: string[] = [];
    const requests: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(`console: ${m.text()}`);
    });
    page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
    page.on('request', (r) => requests.push(r.url()));
    await page.goto(url, { waitUntil: 'load' });
    return { page, errors, requests, url };
  }

  it('at 400 and 1400 px every plot mark is on screen, every table fits or scrolls in its own box with a cue; the summary plot is on top', async () => {
    const reports = {
      positive: renderHtml(positive, context(false)),
      refused: renderHtml(refused, context(false)),
      factorial: renderHtml(factorialReport().result, factorialReport().ctx),
    };
    for (const [name, html] of Object.entries(reports)) {
      const { page, errors } = await open(`${name}-widths.html`, html);
      try {
        expect(errors).toEqual([]);
        for (const width of [400, 1400]) {
          await page.setViewportSize({ width, height: 900 });
          const widths = (await page.evaluate('[document.documentElement.scrollWidth, window.innerWidth]')) as [number, number];
          expect(widths[0], `${name} at ${width} px: the page is ${widths[0]} px wide`).toBeLessThanOrEqual(widths[1]);
          // Element by element: no plot mark beyond the visible edge, no table scrolling without a cue.
          expect(await clippingProblems(page), `${name} at ${width} px`).toEqual([]);
          const shot = join(process.env['PAIRBENCH_SCREENSHOTS'] ?? dir, `report-${name}-${width}.png`);
          await page.screenshot({ path: shot, fullPage: true });
          expect(readFileSync(shot).subarray(1, 4).toString()).toBe('PNG');
        }
        if (name !== 'refused') expect(await page.locator('#summary svg.summary-plot').isVisible()).toBe(true);
      } finally {
        await page.close();
      }
    }
  });

  it('positive verdict, amber status bar when egress is not enforced, one forest mark per task', async () => {
    const { page, errors, requests, url } = await open('positive.html', renderHtml(positive, context(false)));
    try {
      expect(errors).toEqual([]);
      expect(requests).toEqual([url]); // nothing but the page itself: no network
      expect(await page.title()).toBe('pairbench: context-file v1 <b>bold?</b>'); // escaped, and not "pwned"
      expect(await page.evaluate(`document.querySelectorAll('script, link, img, iframe, object, embed, [src], [href]').length`)).toBe(0);

      const verdict = page.locator('#comparison-0 .verdict-word');
      expect(await verdict.isVisible()).toBe(true);
      expect(await verdict.textContent()).toBe('POSITIVE');
      expect(await page.locator('#comparison-0 .delta').textContent()).toBe('+87.5 pp');
      expect(await page.locator('#comparison-0').innerText()).toMatch(/CI\s+\[\+\d+\.\d pp, \+\d+\.\d pp\]/);

      const bar = page.locator('header.status-bar');
      expect(await bar.isVisible()).toBe(true);
      expect(await bar.getAttribute('class')).toContain('egress-open');
      expect(await backgroundOf(page, 'header.status-bar')).toBe('rgb(255, 191, 0)');
      const barText = await bar.innerText();
      for (const s of ['claude-code 2.1.197', 'model-a', 'local', 'NOT enforced', '8 tasks x 3 reps']) expect(barText).toContain(s);

      const marks = page.locator('svg.forest-plot .forest-task');
      expect(await marks.count()).toBe(TASKS.length);
      const plotBox = (await page.locator('svg.forest-plot').boundingBox())!;
      expect(plotBox.width).toBeGreaterThan(100);
      for (let i = 0; i < TASKS.length; i++) {
        const box = (await marks.nth(i).boundingBox())!;
        expect(box.width).toBeGreaterThan(0);
        expect(box.x).toBeGreaterThanOrEqual(plotBox.x);
        expect(box.x + box.width).toBeLessThanOrEqual(plotBox.x + plotBox.width);
      }
      expect((await marks.evaluateAll((els) => els.map((e) => e.getAttribute('data-task')))).sort()).toEqual([...TASKS].sort());
      // Helped tasks sit right of the zero line, the unchanged one on it.
      const cx = await marks.evaluateAll((els) => els.map((e) => Number(e.getAttribute('cx'))));
      const zero = Number(await page.locator('svg.forest-plot line.zero').getAttribute('x1'));
      expect(cx.filter((x) => x > zero)).toHaveLength(7);
      expect(cx.filter((x) => x === zero)).toHaveLength(1);

      expect(await page.locator('svg.arm-bars').count()).toBe(3);
      expect(await page.locator('svg.arm-bars rect.bar').count()).toBe(6); // 3 charts x 2 arms
      expect(await page.locator('svg.arm-bars line.whisker').count()).toBeGreaterThan(0);

      expect(await page.locator('#comparison-0 [data-count="a"]').textContent()).toBe('7');
      expect(await page.locator('#comparison-0 [data-count="b"]').textContent()).toBe('1');
      expect(await page.locator('#comparison-0 [data-count="c"]').textContent()).toBe('0');
      expect(await page.locator('#comparison-0 table.abc').innerText()).toContain('(a) at 1.2x the control cost');
      expect(await page.locator('#comparison-0 table.abc').innerText()).toContain(NASTY_TASK);

      const overhead = page.locator('#cost .overhead');
      expect(await overhead.isVisible()).toBe(true);
      expect(await overhead.innerText()).toContain('$0.5000');
      expect(await page.locator('#cost table.eval-cost').innerText()).not.toContain('0.5000');

      const methods = await page.locator('#methods').innerText();
      for (const s of [
        'CLAUDE.md from fixtures/ctx.md',
        '3 per task per arm',
        'turns 30',
        'hidden command verifier',
        'seed 1',
        'f'.repeat(64),
        '0123456789abcdef0123456789abcdef01234567',
      ]) {
        expect(methods).toContain(s);
      }
      expect(await page.locator('.fixture-note').isVisible()).toBe(true);
      expect(await page.locator('.excluded-count').textContent()).toBe('1');
    } finally {
      await page.close();
    }
  });

  it('a refused verdict shows its reason and "delta: null", no forest marks; an enforced egress is not amber', async () => {
    const ctx = context(true);
    const { page, errors, requests, url } = await open('refused.html', renderHtml(refused, ctx));
    try {
      expect(errors).toEqual([]);
      expect(requests).toEqual([url]);
      const verdict = page.locator('#comparison-0 .verdict-word');
      expect(await verdict.isVisible()).toBe(true);
      expect(await verdict.textContent()).toBe('REFUSED');
      expect(await page.locator('#comparison-0 .delta').textContent()).toBe('delta: null');
      const reasons = page.locator('#comparison-0 .reasons');
      expect(await reasons.isVisible()).toBe(true);
      expect(await reasons.innerText()).toMatch(/config-mismatch: .*model/);
      expect(await page.locator('svg.forest-plot .forest-task').count()).toBe(0);
      expect(await page.locator('#comparison-0 [data-count="a"]').textContent()).toBe('—');

      const bar = page.locator('header.status-bar');
      expect(await bar.getAttribute('class')).toContain('egress-enforced');
      expect(await backgroundOf(page, 'header.status-bar')).not.toBe('rgb(255, 191, 0)');
      expect(await bar.innerText()).toContain('sha256:' + 'a'.repeat(64));
      // The bar names what the attempts recorded when it differs from the config's claim.
      expect(await bar.innerText()).toContain('model-a (recorded: model-a, model-b)');
      expect(await page.locator('.arms-descriptive').isVisible()).toBe(true);
    } finally {
      await page.close();
    }
  });

  it('the status bar is amber when the config claims enforced egress but the attempts recorded none', async () => {
    // These attempts ran in the local sandbox with egress open; the context claims docker + enforced.
    const local = {
      backend: 'local',
      isolation: 'none',
      egress_mode: 'open',
      egress_enforced: false,
      image_id: null,
      resources: { cpus: null, memory_mb: null, pids: null },
    };
    const unenforced = analyze(
      positiveAttempts().map((a) => ({ ...a, sandbox: local })),
      spec,
    );
    const { page, errors } = await open('claimed.html', renderHtml(unenforced, context(true)));
    try {
      expect(errors).toEqual([]);
      const bar = page.locator('header.status-bar');
      expect(await bar.getAttribute('class')).toContain('egress-open');
      expect(await backgroundOf(page, 'header.status-bar')).toBe('rgb(255, 191, 0)');
      expect(await bar.innerText()).toContain('NOT enforced (not in every attempt: recorded false)');
    } finally {
      await page.close();
    }
  });
});
