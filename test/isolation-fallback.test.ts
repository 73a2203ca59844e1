/**
 * `backend: auto` on a machine where bubblewrap cannot isolate (here: bwrap is not on PATH, as
 * on a fresh machine): the run says why and how to fix it beside its UNISOLATED verdict, doctor
 * warns with the same cause and fix, and once bubblewrap works the frozen version's refusal names
 * only the field that changed (the sandbox) and says what to do.
 */
import { mkdirSync, readdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bubblewrapBackend } from '../sandboxes/bubblewrap.js';
import { calculatorTask, copyTask, pairedCohortConfig } from './fixtures.js';
import { Rig } from './rig.js';

const bwrap = await bubblewrapBackend.available();
const required = process.env['PAIRBENCH_REQUIRE_SANDBOXES'] === '1';

let rig: Rig;
beforeEach(() => (rig = new Rig()));
afterEach(() => rig.cleanup());

/** A PATH with everything this machine's has, except bwrap. */
function pathWithoutBwrap(dir: string): string {
  const bin = join(dir, 'no-bwrap-bin');
  mkdirSync(bin);
  const seen = new Set<string>();
  for (const d of (process.env['PATH'] ?? '').split(':').filter(Boolean)) {
    let names: string[];
    try {
      names = readdirSync(d);
    } catch {
      continue;
    }
    for (const n of names) {
      if (n === 'bwrap' || seen.has(n)) continue;
      seen.add(n);
      symlinkSync(join(d, n), join(bin, n));
    }
  }
  return bin;
}

const TASKS = ['t1', 't2', 't3', 't4', 't5', 't6'];

/**
 * The paired cohort, certified first, with no sandbox settings: every sandboxed step (certify,
 * the attempts, verify) takes the default, backend auto.
 */
const config = () =>
  pairedCohortConfig(TASKS)
    .replaceAll('    sandbox: { backend: local, egress: open }\n', '')
    .replace(
      '  attempts:\n',
      `  certify: { kind: certify, needs: [materialize], matrix: { task: [${TASKS.join(', ')}] }, policy: { repeats: 1 } }\n  attempts:\n`,
    )
    .replace('    needs: [materialize]\n', '    needs: [materialize, certify]\n');

describe.skipIf(!bwrap.ok && !required)('backend auto without bubblewrap', () => {
  it('the run and doctor say why and how to isolate; with bubblewrap afterwards, the refusal names only the sandbox', async () => {
    calculatorTask(rig.dir);
    for (const t of TASKS) copyTask(rig.dir, 'fix-add', t);
    rig.write('fixtures/CLAUDE.md', 'Use + in add().\n');
    rig.write('bench.config.yaml', config());
    const noBwrap = pathWithoutBwrap(rig.dir);

    rig.env = { PATH: noBwrap };
    const doctor = await rig.spawn('doctor', '--skip-canary').done;
    expect(doctor.stdout).toMatch(/^WARNING {2}sandbox local \(.*\): no isolation.* chose it by backend auto: bubblewrap \(bwrap\) is not on PATH/m);
    expect(doctor.stdout).toMatch(/^ {9}fix: install it with `apt-get install bubblewrap`/m);

    const run = await rig.spawn('run').done;
    expect(run.code, run.stderr).toBe(0);
    const lines = run.stdout.split('\n');
    const verdict = lines.findIndex((l) => /analyze: treatment vs control {2}UNISOLATED/.test(l));
    expect(verdict, run.stdout).toBeGreaterThanOrEqual(0);
    // After the verdict, in the run's last lines: the cause and the fix for this machine.
    expect(lines.slice(verdict).join('\n')).toMatch(
      /warning: sandbox backend auto ran unisolated \(local\): bubblewrap \(bwrap\) is not on PATH\n {2}fix: install it with `apt-get install bubblewrap`.*bump each analysis' version/,
    );

    // bubblewrap installed (back on PATH): the same version is refused, naming the sandbox and nothing else.
    rig.env = {};
    const again = await rig.spawn('run').done;
    expect(again.code).toBe(2);
    const refusal = again.stderr;
    expect(refusal, refusal).toMatch(/sandbox/);
    // Only the sandbox changed: no other field of any step (the verifier, the tree, the agent) is named.
    const changed = [...refusal.matchAll(/^ {2}- (\S+): ([a-z_]+)[.:]/gm)].map((m) => `${m[1]} ${m[2]}`);
    expect(new Set(changed), refusal).toEqual(new Set(['attempts sandbox', 'certify sandbox', 'verify sandbox']));
    expect(refusal).not.toMatch(/verifier/);
    expect(refusal).toMatch(/bump .*version|new store/);
  });
});
