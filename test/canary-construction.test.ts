// The verifier canary by construction: a verify node's trust in a pass never depends on a
// `needs:` line. Three forgeries of the exit code (process.exit(0) at import, process.exit
// overridden, an exit handler forcing 0) are written by the REAL agent of every shipped config,
// as the config is written (only its scripted model's replies are hostile), and must each end as
// a forged verdict; then on a config with verify and no certify step at all.
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { claudeBinary } from '../agents/claude-code.js';
import { loadConfig } from '../pipeline/config/load.js';
import { buildGraph, withUpstream } from '../pipeline/dag.js';
import { builtinStepKinds } from '../steps/index.js';
import { main } from '../cli/main.js';
import { calculatorTask } from './fixtures.js';
import { goldenStore, SHIPPED_CONFIGS } from './golden-store.js';
import { Rig } from './rig.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

/** Configs whose verifiers read the answer files an attempt writes: no code of the workspace runs at verify time. */
const READS_ANSWERS = new Set(['cohorts/gortex-mcp.yaml']);

/** What a hostile attempt prepends to every module it can reach: each forces the verifier's exit code to 0. */
const FORGERIES: Record<string, string> = {
  'exit at import': 'process.exit(0);\n',
  'exit overridden': 'const really = process.reallyExit.bind(process); process.exit = () => really(0);\n',
  'exit handler': "process.on('exit', () => { process.exitCode = 0; });\n",
};

/** A shell command that prepends `forgery` to every JavaScript module under src/. */
function forge(forgery: string): string {
  const b64 = Buffer.from(forgery).toString('base64');
  return `for f in $(find src -name '*.mjs' -o -name '*.js' -o -name '*.cjs'); do { echo ${b64} | base64 -d; cat "$f"; } > "$f.new" && mv "$f.new" "$f"; done`;
}

/** The scripted model's replies for an adapter: one shell call that forges, then done. */
/** The forgery as an action: each agent runs it with its own shell tool. */
function hostileScript(forgery: string): string {
  return JSON.stringify({ turns: [{ text: 'Editing.', tool_calls: [{ action: 'shell', command: forge(forgery) }] }] }, null, 2) + '\n';
}

let work: string;
beforeAll(() => {
  execFileSync(process.execPath, [join(ROOT, 'scripts', 'build-fixtures.mjs'), '--quiet'], { stdio: 'inherit' });
  work = mkdtempSync(join(tmpdir(), 'pairbench-canary-'));
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe.skipIf(!existsSync(claudeBinary()))('the three forgeries on every shipped config, as written', () => {
  for (const config of SHIPPED_CONFIGS) {
    it(`${config}: each forgery of the exit code ends as a forged verdict`, async () => {
      // The project as shipped, in a directory of its own: the config, and the examples it reads.
      const dir = join(work, config.replace(/[/.]/g, '_'));
      cpSync(join(ROOT, 'examples'), join(dir, 'examples'), { recursive: true });
      cpSync(join(ROOT, config), join(dir, config));
      const cfg = join(dir, config);
      // The config as built end to end (test/golden-store.ts, shared with the cohorts test): its
      // materialize, certify and context steps are cached, so what runs here is the forgeries.
      await goldenStore(config, join(dir, 'store'));
      const spec = parse(readFileSync(cfg, 'utf8')) as {
        steps: Record<string, { kind: string; agent?: { adapter: string }; model?: { fake_script?: string } }>;
      };
      const scripts = Object.values(spec.steps).flatMap((s) =>
        s.kind === 'run' && s.model?.fake_script ? [{ file: join(dirname(cfg), s.model.fake_script), adapter: s.agent!.adapter }] : [],
      );
      expect(scripts.length, 'a shipped config whose run steps have no scripted model').toBeGreaterThan(0);
      // One verification per run step, as the config wires it (verify: needs [materialize, attempts]).
      const loaded = loadConfig(cfg, { storeDir: join(dir, 'store') });
      if (!loaded.ok) throw new Error(loaded.error.map((d) => d.message).join('; '));
      const graph = buildGraph(loaded.value, builtinStepKinds);
      if (!graph.ok) throw new Error(graph.error.map((d) => d.message).join('; '));
      // The first verification (one arm, rep 1) of two tasks of each run step, where no look or gate stands before it.
      const targets = new Map<string, string>();
      const perRun = new Map<string, number>();
      for (const n of graph.value.nodes) {
        if (n.kind.name !== 'verify') continue;
        const run = n.upstream.find((u) => u.kind.name === 'run');
        const key = `${run?.step.name}/${n.matrix['task']}`;
        if (!run || targets.has(key) || (perRun.get(run.step.name) ?? 0) >= 2 || withUpstream([n]).some((u) => u.kind.observes)) continue;
        perRun.set(run.step.name, (perRun.get(run.step.name) ?? 0) + 1);
        targets.set(key, n.id);
      }
      expect(targets.size).toBeGreaterThan(0);
      const cli = async (...args: string[]) => {
        let out = '';
        const code = await main([...args, '--config', cfg, '--store', join(dir, 'store')], {
          stdout: { write: (x: string) => (out += x) },
          stderr: { write: (x: string) => (out += x) },
          env: { PATH: process.env['PATH'], CI: '1' },
        });
        return { code, out };
      };
      let forced = 0;
      for (const [name, forgery] of Object.entries(FORGERIES)) {
        for (const s of scripts) writeFileSync(s.file, hostileScript(forgery));
        const run = await cli('run', ...targets.values(), '--jobs', '2');
        expect(run.code, run.out).toBe(0);
        for (const node of targets.values()) {
          const verdict = JSON.parse((await cli('show', node, 'verdict.json')).out) as {
            pass: boolean | null;
            fail_to_pass: Record<string, string>;
            forgery: { reason: string } | null;
          };
          expect(verdict.pass, `${config} ${node} (${name})`).toBe(false);
          // Where the exit code alone would have passed it, a calibrated canary caught the forgery.
          if (Object.values(verdict.fail_to_pass).some((st) => st === 'pass')) {
            forced++;
            expect(verdict.forgery?.reason, `${config} ${node} (${name})`).toBe('canary-passed');
          }
        }
      }
      // A forgery reached the verifier of some task (else this proves nothing for this config). A verifier
      // that fails by throwing, or that reads an answer file, is not fooled by every forgery: that is a fail too.
      if (!READS_ANSWERS.has(config)) expect(forced, `${config}: no task's verifier runs the code the agent forged`).toBeGreaterThan(0);
    });
  }
});

describe('a config with verify and no certify step at all', () => {
  let rig: Rig;
  beforeEach(() => {
    rig = new Rig();
    calculatorTask(rig.dir);
  });
  afterEach(() => rig.cleanup());

  const config = (arms: Record<string, string>) => {
    const names = Object.keys(arms);
    const m = `{ task: [fix-add], arm: [${names.join(', ')}], rep: 1 }`;
    const cases = names.map((a) => `if [ "$ARM" = ${a} ]; then ${arms[a]}; fi`).join('; ');
    return `steps:
  materialize: { kind: materialize, matrix: { task: [fix-add] } }
  attempts:
    kind: run
    needs: [materialize]
    matrix: ${m}
    agent: { adapter: command, command: ${JSON.stringify(cases)} }
    arms: { ${names.map((a) => `${a}: { env: { ARM: ${a} } }`).join(', ')} }
    sandbox: { backend: local, egress: open }
  verify: { kind: verify, needs: [materialize, attempts], matrix: ${m}, sandbox: { backend: local, egress: open } }
  audit: { kind: audit, needs: [attempts, verify], matrix: ${m} }
  cohort: { kind: analyze, needs: [audit], control: ${names[0]}, treatments: [${names.slice(1).join(', ')}] }
`;
  };
  const write = (text: string) => `echo ${Buffer.from(text).toString('base64')} | base64 -d > src/add.mjs`;
  const WRONG = 'export const add = (a, b) => a - b;\n';

  it('verify calibrates its own canary (a calibrate node per task): the forgeries are caught, the honest fix passes', async () => {
    rig.write(
      'bench.config.yaml',
      config({
        honest: write('export const add = (a, b) => a + b;\n'),
        ...Object.fromEntries(Object.entries(FORGERIES).map(([n, f]) => [n.replace(/ /g, '-'), write(f + WRONG)])),
      }),
    );
    const r = await rig.cli('run', '--json');
    expect(r.code, r.stdout).toBe(0);
    const nodes = JSON.parse(r.stdout).nodes as { node: string; status: string }[];
    expect(nodes.find((n) => n.node === 'verify/fix-add/canary')?.status).toBe('executed');
    expect((await rig.outputJson('verify/fix-add/canary', 'canary.json')).tests.add_works).toMatchObject({ calibrated: true });
    expect(await rig.outputJson('verify/fix-add/honest/1', 'verdict.json')).toMatchObject({ pass: true, forgery: null });
    for (const arm of ['exit-at-import', 'exit-overridden', 'exit-handler']) {
      expect(await rig.outputJson(`verify/fix-add/${arm}/1`, 'verdict.json'), arm).toMatchObject({ pass: false, forgery: { reason: 'canary-passed' } });
      expect(await rig.outputJson(`audit/fix-add/${arm}/1`, 'audit.json'), arm).toMatchObject({ reason_code: 'verdict-forged', pass: false });
    }
    // `plan` says what the calibration is, and why it runs.
    expect((await rig.cli('plan', '--all')).stdout).toContain('cached  verify/fix-add/canary');
  });

  it('a canary.json a command step writes is not a calibration: verify still calibrates its own, and an uncalibrated pass is not scored', async () => {
    const honest = { control: 'true', honest: write('export const add = (a, b) => a + b;\n') };
    rig.write('bench.config.yaml', config(honest));
    expect((await rig.cli('run')).code).toBe(0);
    const genuine = JSON.stringify(await rig.outputJson('verify/fix-add/canary', 'canary.json'));
    rmSync(join(rig.dir, '.pairbench'), { recursive: true }); // a new cohort, not an edit of the frozen one
    // The task loses its reference solution (its canary cannot be calibrated now), and the config
    // gains a command step that replays the genuine calibration as its own canary.json.
    rig.write('tasks/fix-add/task.yaml', rig.read('tasks/fix-add/task.yaml').replace(/solution:\n {2}patch: solution\.patch\n/, ''));
    const replay = `echo ${Buffer.from(genuine).toString('base64')} | base64 -d > canary.json`;
    rig.write(
      'bench.config.yaml',
      config(honest)
        .replace('verify: { kind: verify, needs: [materialize, attempts]', 'verify: { kind: verify, needs: [materialize, attempts, replayed]')
        .replace('steps:\n', `steps:\n  replayed: { kind: command, cmd: ${JSON.stringify(replay)}, outs: [canary.json] }\n`),
    );
    const r = await rig.cli('run', '--json');
    expect(r.code, r.stdout).toBe(0);
    const nodes = JSON.parse(r.stdout).nodes as { node: string; status: string }[];
    expect(nodes.find((n) => n.node === 'verify/fix-add/canary')?.status).toBe('executed');
    const verdict = await rig.outputJson('verify/fix-add/honest/1', 'verdict.json');
    expect(verdict.pass, JSON.stringify(verdict)).toBeNull();
    expect(verdict.no_verdict).toMatch(/test add_works passed, but its canary is not calibrated/);
  });

  it("an arm whose node would have the calibration's id is refused at load, naming both", async () => {
    rig.write(
      'bench.config.yaml',
      config({ control: 'true', canary: 'true' }).replace(/(verify: \{ kind: verify, needs: \[materialize, attempts\], matrix: \{[^}]*), rep: 1 \}/, '$1 }'),
    );
    const r = await rig.cli('plan');
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/node verify\/fix-add\/canary is both a node of the matrix and the canary calibration the step adds/);
  });

  it('a pass no calibrated canary stands behind is never scored: an infrastructure-class exclusion with its reason, counted per arm', async () => {
    // No reference solution: the canary cannot be calibrated.
    rig.write('tasks/fix-add/task.yaml', rig.read('tasks/fix-add/task.yaml').replace(/solution:\n {2}patch: solution\.patch\n/, ''));
    rig.write('bench.config.yaml', config({ control: 'true', honest: write('export const add = (a, b) => a + b;\n') }));
    const r = await rig.cli('run');
    expect(r.code, r.stderr).toBe(0);
    const verdict = await rig.outputJson('verify/fix-add/honest/1', 'verdict.json');
    expect(verdict.pass).toBeNull();
    expect(verdict.no_verdict).toMatch(
      /test add_works passed, but its canary is not calibrated \(the canary could not be calibrated: the task has no reference solution/,
    );
    const audit = await rig.outputJson('audit/fix-add/honest/1', 'audit.json');
    expect(audit).toMatchObject({ admission: 'excluded', reason_code: 'infra-verifier', infra_error: true });
    const analysis = await rig.outputJson('cohort', 'analysis.json');
    expect(analysis.arms.find((a: { arm: string }) => a.arm === 'honest').n_infra_errors).toBe(1);
    // A failure needs no canary: the control's wrong add() is scored, not excluded.
    expect(await rig.outputJson('audit/fix-add/control/1', 'audit.json')).toMatchObject({ admission: 'accepted', pass: false });
  });

  it('certify rejects a task whose canary passes even with the reference solution (the test ends with an explicit exit 0)', async () => {
    rig.write('tasks/fix-add/verifier/test_add.mjs', rig.read('tasks/fix-add/verifier/test_add.mjs') + 'process.exit(0);\n');
    rig.write(
      'bench.config.yaml',
      `steps:
  materialize: { kind: materialize, matrix: { task: [fix-add] } }
  certify: { kind: certify, needs: [materialize], matrix: { task: [fix-add] }, sandbox: { backend: local, egress: open }, policy: { repeats: 1 } }
`,
    );
    await rig.cli('run');
    const cert = await rig.outputJson('certify/fix-add', 'certification.json');
    expect(cert.verdict).toBe('rejected');
    expect(cert.reasons.join('\n')).toMatch(
      /canary-unusable: add_works: passes even with the reference solution: the verifier exits 0 before the planted failure runs/,
    );
  });
});
