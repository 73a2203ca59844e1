/**
 * Certify results are not verdicts. A cohort whose every task certify rejected observed nothing
 * (no agent started, its analysis read no attempt): its certify policy can be edited, and `run`
 * proceeds under the same version, re-frozen. Once an analysis has observed attempts, the same
 * kind of edit is refused as before, naming the field.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { calculatorTask } from './fixtures.js';
import { Rig } from './rig.js';

let rig: Rig;
beforeEach(() => (rig = new Rig()));
afterEach(() => rig.cleanup());

/** The example task, a "benchmark" word in its treatment file (certify rejects it), and `allow` under certify's policy. */
function config(allow: string): string {
  return `steps:
  materialize: { kind: materialize, matrix: { task: [fix-add] } }
  certify:
    kind: certify
    needs: [materialize]
    matrix: { task: [fix-add] }
    sandbox: { backend: local, egress: open }
    policy: { repeats: 1${allow} }
  attempts:
    kind: run
    needs: [materialize, certify]
    matrix: { task: [fix-add], arm: [control, treatment], rep: 1 }
    agent: { adapter: oracle }
    arms:
      control: {}
      treatment: { files: { CLAUDE.md: fixtures/CLAUDE.md } }
    sandbox: { backend: local, egress: open }
  verify: { kind: verify, needs: [materialize, attempts], matrix: { task: [fix-add], arm: [control, treatment], rep: 1 }, sandbox: { backend: local, egress: open } }
  audit: { kind: audit, needs: [attempts, verify], matrix: { task: [fix-add], arm: [control, treatment], rep: 1 } }
  cohort: { kind: analyze, version: 1, needs: [audit], control: control, treatments: [treatment] }
`;
}

const ALLOW = ', allow: [{ path: "CLAUDE.md", class: benchmark-awareness, reason: "our style guide names the benchmark it was written for" }]';

describe('a freeze is bound by an observation, and a rejection is none', () => {
  it('every task rejected: policy.allow edited, run proceeds under version 1; after an analysis observed attempts, an edit is refused', async () => {
    calculatorTask(rig.dir);
    rig.write('fixtures/CLAUDE.md', 'Keep functions small: this benchmark rewards it.\n');
    rig.write('bench.config.yaml', config(''));
    const rejected = await rig.cli('run');
    expect(rejected.code).toBe(1);
    expect(rejected.stderr).toMatch(/task fix-add failed certification/);
    const before = await rig.cli('history', 'cohort');
    expect(before.stdout).toContain('bound (not yet)');

    // The user allows the finding: the certify policy changes, the cohort keeps its version.
    rig.write('bench.config.yaml', config(ALLOW));
    const allowed = await rig.cli('run');
    expect(allowed.code, allowed.stderr).toBe(0);
    expect(allowed.stderr).toContain('cohort cohort version 1 had no observation yet: re-frozen');
    expect(allowed.stdout).toMatch(/^cohort: treatment vs control/m);
    const after = await rig.cli('history', 'cohort');
    expect(after.stdout).toMatch(/version 1 .* bound \d{4}-\d\d-\d\dT.* by attempt attempts\/fix-add\//);

    // Observed now: the same kind of edit is refused, naming the step and the field.
    rig.write('bench.config.yaml', config(ALLOW.replace('our style guide', 'the style guide')));
    const refused = await rig.cli('run');
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('cohort cohort version 1 is frozen');
    expect(refused.stderr).toMatch(/certify: policy\.allow/);
  });
});
