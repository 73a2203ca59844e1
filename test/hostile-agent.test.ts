// A hostile `command` agent, run through the real pipeline (materialize -> run -> verify)
// on the real backends: what it leaves in its workspace must not reach the outputs
// in any form that harms the host or forges a verdict. Each test performs the attack
// and fails if it succeeds.
import { randomBytes } from 'node:crypto';
import { lstatSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bubblewrapBackend } from '../sandboxes/bubblewrap.js';
import { dockerBackend } from '../sandboxes/docker.js';
import { ensureTestImage } from './docker-image.js';
import { calculatorTask } from './fixtures.js';
import { Rig } from './rig.js';

const required = process.env['PAIRBENCH_REQUIRE_SANDBOXES'] === '1';
const docker = await dockerBackend().available();
const bwrap = await bubblewrapBackend.available();

let rig: Rig;
beforeEach(() => {
  rig = new Rig();
  calculatorTask(rig.dir);
});
afterEach(() => rig.cleanup());

function config(command: string, sandbox: string): string {
  return `steps:
  materialize: { kind: materialize, matrix: { task: [fix-add] } }
  attempts:
    kind: run
    needs: [materialize]
    matrix: { task: [fix-add], arm: [control], rep: 1 }
    agent: { adapter: command, command: ${JSON.stringify(command)} }
    arms: { control: {} }
    limits: { wall_seconds: 120 }
    sandbox: ${sandbox}
  verify:
    kind: verify
    needs: [materialize, attempts]
    matrix: { task: [fix-add], arm: [control], rep: 1 }
    sandbox: ${sandbox}
`;
}

/** Every regular file below dir, as [relative path, text]. */
function filesBelow(dir: string, rel = ''): [string, string][] {
  const out: [string, string][] = [];
  for (const name of readdirSync(join(dir, rel))) {
    const p = rel ? `${rel}/${name}` : name;
    const st = lstatSync(join(dir, p));
    if (st.isDirectory()) out.push(...filesBelow(dir, p));
    else if (st.isFile()) out.push([p, readFileSync(join(dir, p), 'utf8')]);
  }
  return out;
}

/** The attempt's stored outputs, materialized: changes.json and the changed/ tree. */
async function attemptOutputs(): Promise<{ changes: Record<string, unknown>; changed: [string, string][]; modes: number[] }> {
  const changes = await rig.outputJson('attempts/fix-add/control/1', 'changes.json');
  const ex = JSON.parse((await rig.cli('explain', 'attempts/fix-add/control/1', '--json')).stdout);
  const { Cas } = await import('../pipeline/store/cas.js');
  const cas = new Cas(join(rig.dir, '.pairbench', 'cas'), join(rig.dir, '.pairbench', 'tmp'));
  const out = mkdtempSync(join(tmpdir(), 'pairbench-changed-'));
  try {
    cas.materialize(ex.record.outputs.changed, join(out, 'changed'));
    const modes = filesBelow(join(out, 'changed')).map(([p]) => lstatSync(join(out, 'changed', p)).mode);
    return { changes, changed: filesBelow(join(out, 'changed')), modes };
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}

describe.skipIf(!docker.ok && !required)('docker: a process the agent leaves behind', () => {
  it('swapping a directory for a symlink to a host directory while the workspace is read copies nothing from outside it', async () => {
    const image = await ensureTestImage();
    // A host directory of secrets named like the agent's files: what a followed link would copy.
    const secret = `HOST-SECRET-${randomBytes(8).toString('hex')}`;
    const hostDir = mkdtempSync(join(tmpdir(), 'pairbench-host-secrets-'));
    try {
      for (let i = 0; i < 1500; i++) writeFileSync(join(hostDir, `f${i}`), secret);
      // 1,500 files make the window wide; the swapper outlives the agent's command.
      const agent = [
        'mkdir big; i=0; while [ $i -lt 1500 ]; do echo keep > big/f$i; i=$((i+1)); done',
        `(while :; do mv big big.real; ln -s ${hostDir} big; mv big big.link; mv big.real big; mv big.link big.real2 2>/dev/null; rm -f big.real2; done) >/dev/null 2>&1 &`,
        'sleep 0.3',
      ].join('\n');
      rig.write('bench.config.yaml', config(agent, `{ backend: docker, egress: none, image: "${image}" }`));
      const r = await rig.cli('run', 'attempts/fix-add/control/1');
      expect(r.code, r.stderr).toBe(0);
      const { changes, changed } = await attemptOutputs();
      for (const [p, text] of changed) expect(text, `changed/${p} holds a host file`).not.toContain(secret);
      // The agent's own 1,500 files are all there (wherever the killed swapper left the directory);
      // a link it left is kept as a link, never followed.
      expect(changed.filter(([, text]) => text === 'keep\n').length).toBe(1500);
      const written = changes['written'] as Record<string, string>;
      for (const [p, state] of Object.entries(written)) {
        if (!state.startsWith('link:')) continue;
        expect(state).toBe(`link:${hostDir}`);
        expect(changed.some(([q]) => q.startsWith(`${p}/`))).toBe(false);
      }
    } finally {
      rmSync(hostDir, { recursive: true, force: true });
    }
  });
});

for (const [name, ok, sandbox] of [
  ['bubblewrap', bwrap.ok, async () => '{ backend: bubblewrap, egress: none }'],
  ['docker', docker.ok, async () => `{ backend: docker, egress: none, image: "${await ensureTestImage()}" }`],
] as const) {
  describe.skipIf(!ok && !required)(`${name}: what the agent leaves in its workspace`, () => {
    it('a setuid or setgid bit never reaches the outputs, and a fifo is refused with its reason', async () => {
      const agent = [
        'cp "$(command -v busybox || command -v sh)" ./suid && chmod 4755 ./suid',
        'echo data > ./sgid; chmod 2755 ./sgid',
        'mkfifo ./pipe',
        'echo "export const add = (a, b) => a + b;" > src/add.mjs',
      ].join('; ');
      rig.write('bench.config.yaml', config(agent, await sandbox()));
      const r = await rig.cli('run');
      expect(r.code, r.stderr).toBe(0);
      const { changes, changed, modes } = await attemptOutputs();
      for (const m of modes) expect(m & 0o7000).toBe(0);
      expect(changes['refused']).toEqual([{ path: 'pipe', reason: 'a fifo is not a regular file, directory or symlink' }]);
      expect(changed.map(([p]) => p)).toContain('src/add.mjs');
      // The fix still counts: what was refused is not the agent's answer.
      expect((await rig.outputJson('verify/fix-add/control/1', 'verdict.json')).pass).toBe(true);
    });
  });
}

/** A pipeline through certify (which calibrates the canaries), verify, audit, analyze and export. */
function judgedConfig(arms: Record<string, string>, sandbox: string, tasks = 'fix-add'): string {
  const armNames = Object.keys(arms);
  const cases = armNames.map((a) => `if [ "$ARM" = ${a} ]; then ${arms[a]}; fi`).join('; ');
  return `steps:
  materialize: { kind: materialize, matrix: { task: [${tasks}] } }
  certify: { kind: certify, needs: [materialize], matrix: { task: [${tasks}] }, sandbox: ${sandbox}, policy: { repeats: 1 } }
  attempts:
    kind: run
    needs: [materialize, certify]
    matrix: { task: [${tasks}], arm: [${armNames.join(', ')}], rep: 1 }
    agent: { adapter: command, command: ${JSON.stringify(cases)} }
    arms: { ${armNames.map((a) => `${a}: { env: { ARM: ${a} } }`).join(', ')} }
    limits: { wall_seconds: 60 }
    sandbox: ${sandbox}
  verify:
    kind: verify
    needs: [materialize, certify, attempts]
    matrix: { task: [${tasks}], arm: [${armNames.join(', ')}], rep: 1 }
    sandbox: ${sandbox}
  audit:
    kind: audit
    needs: [attempts, verify]
    matrix: { task: [${tasks}], arm: [${armNames.join(', ')}], rep: 1 }
  cohort:
    kind: analyze
    version: 1
    needs: [audit]
    control: ${armNames[0]}
    treatments: [${armNames.slice(1).join(', ')}]
  export:
    kind: export
    needs: [materialize, certify, attempts, verify, audit, cohort]
`;
}

const WRONG_ADD = 'export const add = (a, b) => a - b;';
const write = (path: string, text: string) => `echo ${Buffer.from(`${text}\n`).toString('base64')} | base64 -d > ${path}`;

describe.skipIf(!bwrap.ok && !required)('forged verdicts (bubblewrap): each ends as a failed attempt with reason verdict-forged, counted per arm', () => {
  it('process.exit(0) at the top of the module under test, and process.exit overridden to always exit 0', async () => {
    rig.write(
      'bench.config.yaml',
      judgedConfig(
        {
          honest: write('src/add.mjs', 'export const add = (a, b) => a + b;'),
          exitzero: write('src/add.mjs', `process.exit(0);\n${WRONG_ADD}`),
          override: write('src/add.mjs', `const really = process.reallyExit.bind(process); process.exit = () => really(0);\n${WRONG_ADD}`),
        },
        '{ backend: bubblewrap, egress: none }',
      ),
    );
    const r = await rig.cli('run');
    expect(r.code, r.stderr).toBe(0);
    const canary = await rig.outputJson('certify/fix-add', 'canary.json');
    expect(canary.tests.add_works).toMatchObject({ calibrated: true, targets: [{ where: 'verifier', path: 'test_add.mjs' }] });
    for (const arm of ['exitzero', 'override']) {
      const verdict = await rig.outputJson(`verify/fix-add/${arm}/1`, 'verdict.json');
      expect(verdict.fail_to_pass.add_works, arm).toBe('pass'); // the exit code alone would have passed it
      expect(verdict).toMatchObject({ pass: false, forgery: { reason: 'canary-passed' }, canaries: { add_works: { status: 'passed' } } });
      const audit = await rig.outputJson(`audit/fix-add/${arm}/1`, 'audit.json');
      expect(audit).toMatchObject({ admission: 'accepted', reason_code: 'verdict-forged', pass: false });
    }
    const honest = await rig.outputJson('verify/fix-add/honest/1', 'verdict.json');
    expect(honest).toMatchObject({ pass: true, forgery: null, canaries: { add_works: { status: 'failed-as-planted' } } });
    const results = await rig.outputJson('cohort', 'analysis.json');
    const arms = Object.fromEntries(results.arms.map((a: { arm: string; integrity_failures: Record<string, number> }) => [a.arm, a.integrity_failures]));
    expect(arms).toEqual({ honest: {}, exitzero: { 'verdict-forged': 1 }, override: { 'verdict-forged': 1 } });
    const bundle = join(rig.dir, 'bundle');
    expect((await rig.cli('export', '--out', bundle)).code).toBe(0);
    const report = readFileSync(join(bundle, 'report.md'), 'utf8');
    expect(report).toContain('- exitzero: verdict-forged: 1');
    expect(report).toContain('- honest: none');
  });

  it('a Harbor-style reward: code run by test.sh writes reward.json = 1 while test.sh writes reward.txt = 0', async () => {
    rig.write(
      'tasks/fix-add/verifier/test.sh',
      `node "$VERIFIER_DIR/test_add.mjs" && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n`,
    );
    const taskFile = rig.read('tasks/fix-add/task.yaml');
    rig.write(
      'tasks/fix-add/task.yaml',
      taskFile.replace(/verifier:\n[\s\S]*?timeout: 30\n/, 'verifier:\n  command: sh "$VERIFIER_DIR/test.sh"\n  result: reward-file\n  timeout: 30\n'),
    );
    rig.write(
      'bench.config.yaml',
      judgedConfig(
        {
          honest: write('src/add.mjs', 'export const add = (a, b) => a + b;'),
          forger: write('src/add.mjs', `import { writeFileSync } from 'node:fs'; writeFileSync('/logs/verifier/reward.json', '{"reward": 1}');\n${WRONG_ADD}`),
        },
        '{ backend: bubblewrap, egress: none }',
      ),
    );
    const r = await rig.cli('run');
    expect(r.code, r.stderr).toBe(0);
    expect(await rig.outputJson('verify/fix-add/forger/1', 'verdict.json')).toMatchObject({ pass: false, forgery: { reason: 'reward-files-disagree' } });
    expect(await rig.outputJson('audit/fix-add/forger/1', 'audit.json')).toMatchObject({ reason_code: 'verdict-forged', pass: false });
    expect(await rig.outputJson('verify/fix-add/honest/1', 'verdict.json')).toMatchObject({ pass: true, forgery: null, reward: { reward: 1 } });
  });
});
