// The verifier sees only what the freeze holds (issue 61, item 4): under bubblewrap a verify step
// that declares its host paths binds those and nothing else of the host, each one digested into
// the key. The attack: a verifier that reads a host file under /usr (planted here, removed after)
// and passes whatever the attempt did when the file says so. Undeclared, the default binds show
// it (and the bundle says the environment is not pinned); declared paths that leave it out, the
// verifier cannot read it, so changing it moves no verdict; a declared file that changes is a new key.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bubblewrapBackend } from '../sandboxes/bubblewrap.js';
import { calculatorTask, pairedCohortConfig } from './fixtures.js';
import { Rig } from './rig.js';

const bwrap = await bubblewrapBackend.available();

/** A binary and the shared objects it loads, as ldd lists them. */
function withLibraries(binary: string): string[] {
  const out = spawnSync('ldd', [binary], { encoding: 'utf8' }).stdout;
  const libs = [...out.matchAll(/(\/\S+)\s+\(0x[0-9a-f]+\)/g)].map((m) => m[1]!);
  return [binary, ...libs];
}

/** What the calculator task's verifier needs: sh for the commands, node for the test. */
function verifierNeeds(): string[] {
  return [...new Set([...withLibraries(realpathSync(process.execPath)), '/usr/bin/sh', ...withLibraries(realpathSync('/usr/bin/sh'))])];
}

describe.skipIf(!bwrap.ok && process.env['PAIRBENCH_REQUIRE_SANDBOXES'] !== '1')('a verifier that reads a host file under /usr (bubblewrap)', () => {
  let rig: Rig;
  let planted: string;
  beforeEach(() => {
    rig = new Rig();
    calculatorTask(rig.dir);
    planted = join('/usr/local/share', `pairbench-attack-${process.pid}-${Date.now()}`);
    mkdirSync(planted, { recursive: true });
    writeFileSync(join(planted, 'verdict'), '5\n');
  });
  afterEach(() => {
    rmSync(planted, { recursive: true, force: true });
    rig.cleanup();
  });

  function config(hostPaths: string[] | null, version = 1): string {
    // The hidden test: add(2, 3) must equal what the planted host file says (edit the file, move the verdict).
    writeFileSync(
      join(rig.dir, 'tasks', 'fix-add', 'verifier', 'test_add.mjs'),
      `import { readFileSync } from 'node:fs';
let host = 'unreadable';
try { host = readFileSync(${JSON.stringify(join(planted, 'verdict'))}, 'utf8').trim(); } catch {}
console.log('the host file says: ' + host);
const { add } = await import(process.cwd() + '/src/add.mjs');
if (add(2, 3) !== Number(host)) process.exit(1);
`,
    );
    rig.write('fixtures/CLAUDE.md', 'Nothing the agent reads.\n');
    return pairedCohortConfig(['fix-add'], 'sed -i "s/a - b/a + b/" src/add.mjs', '', {
      sandbox: '{ backend: bubblewrap, egress: none }',
      verifySandbox: `{ backend: bubblewrap, egress: none${hostPaths ? `, host_paths: ${JSON.stringify(hostPaths)}` : ''} }`,
      verify: 'repeats: 1',
      version,
      exported: true,
    });
  }

  async function verdictLog(): Promise<{ pass: boolean | null; log: string; why: string | null }> {
    const v = await rig.outputJson('verify/fix-add/control/1', 'verdict.json');
    return { pass: v.pass, why: v.no_verdict, log: await rig.outputText('verify/fix-add/control/1', 'verifier.log') };
  }

  /** The nodes `run --json` executed, sorted. */
  const executed = (stdout: string): string[] =>
    (JSON.parse(stdout) as { nodes: { node: string; status: string }[] }).nodes
      .filter((n) => n.status === 'executed')
      .map((n) => n.node)
      .sort();

  it('undeclared: the default binds show it (the verdict follows it), and the bundle says the environment is not pinned', async () => {
    rig.write('bench.config.yaml', config(null));
    const r = await rig.cli('run');
    expect(r.code, r.stderr + r.stdout).toBe(0);
    const v = await verdictLog();
    expect(v.log).toContain('the host file says: 5');
    expect(v.pass, v.why ?? '').toBe(true);
    expect((await rig.cli('export', '--out', join(rig.dir, 'bundle'))).code).toBe(0);
    expect(readFileSync(join(rig.dir, 'bundle', 'report.md'), 'utf8')).toContain(
      "⚠ **Verifier environment not pinned: bubblewrap mounts the host's system directories read-only, and their contents are not in the key (declare sandbox.host_paths to pin them)**",
    );
  });

  it('declared without it: the verifier cannot read it, changing it moves nothing; a declared file that changes is refused by the freeze, naming it; the bundle says the environment is pinned', async () => {
    const needs = verifierNeeds();
    rig.write('bench.config.yaml', config(needs));
    const r = await rig.cli('run');
    expect(r.code, r.stderr + r.stdout).toBe(0);
    const v = await verdictLog();
    expect(v.log).toContain('the host file says: unreadable');
    expect(v.pass).toBe(false);

    // The attack: change the host file, run again. Not declared, so not in the key: nothing re-runs, nothing moves.
    writeFileSync(join(planted, 'verdict'), '-1\n');
    const again = await rig.cli('run', '--json');
    expect(again.code).toBe(0);
    expect(executed(again.stdout)).toEqual([]);
    expect((await verdictLog()).pass).toBe(false);

    // Declaring it under the registered version is refused (the verifier's environment is frozen); a new version runs.
    rig.write('bench.config.yaml', config([...needs, planted]));
    const refused = await rig.cli('run');
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(`verify: annotation host_paths.${planted}.digest: added`);
    rig.write('bench.config.yaml', config([...needs, planted], 2));
    const withIt = await rig.cli('run');
    expect(withIt.code, withIt.stderr).toBe(0);
    const declared = await verdictLog();
    expect(declared.log).toContain('the host file says: -1');
    expect(declared.pass).toBe(false);
    // Declared, the file is in every verify key and in the freeze: the attack (edit it, run again) is refused, naming it.
    writeFileSync(join(planted, 'verdict'), '5\n');
    const edited = await rig.cli('run');
    expect(edited.code).toBe(2);
    expect(edited.stderr).toMatch(
      new RegExp(`verify: annotation host_paths\\.${planted.replaceAll('/', '\\/').replaceAll('.', '\\.')}\\.digest: [0-9a-f]{12} -> [0-9a-f]{12}`),
    );
    // Put back, the file is what the key holds again: the recorded verdict stands.
    writeFileSync(join(planted, 'verdict'), '-1\n');
    expect((await verdictLog()).log).toContain('the host file says: -1');

    expect((await rig.cli('export', '--out', join(rig.dir, 'bundle'))).code).toBe(0);
    const report = readFileSync(join(rig.dir, 'bundle', 'report.md'), 'utf8');
    expect(report).toMatch(/Verifier: host paths \/\S+ \([0-9a-f]{12}\), .* only, each digested into every verify key/);
    expect(report).toContain(`${planted} (`);
  });

  it('host_paths on a step that does not run the verifier, or on another backend, is refused at its field', async () => {
    rig.write(
      'bench.config.yaml',
      `steps:
  materialize: { kind: materialize, matrix: { task: [fix-add] } }
  attempts:
    kind: run
    needs: [materialize]
    matrix: { task: [fix-add], arm: [control], rep: 1 }
    agent: { adapter: command, command: 'true' }
    arms: { control: {} }
    sandbox: { backend: bubblewrap, egress: none, host_paths: [/usr/bin] }
  verify: { kind: verify, needs: [materialize, attempts], matrix: { task: [fix-add], arm: [control], rep: 1 }, sandbox: { backend: local, egress: open, host_paths: [/usr/bin] } }
`,
    );
    const r = await rig.cli('run');
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/steps\.attempts\.sandbox\.host_paths.*a run step does not run it/);
    expect(r.stderr).toMatch(/steps\.verify\.sandbox\.host_paths.*host_paths is for the bubblewrap backend \(this step's is local\)/);
  });
});
