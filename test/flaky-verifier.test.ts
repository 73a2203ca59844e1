// Verdict stability (issue 61, item 7; row 47): a verifier that passes a correct solution only
// some of the time is caught by certify's checks and verify's repeats together, and a task it
// was caught on is out of the analysis whole. First a simulation through the decision code at
// the defaults (the schema's, certify's policy, the README's matrix); then the real pipeline
// under bubblewrap with a verifier that flips a coin.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bubblewrapBackend } from '../sandboxes/bubblewrap.js';
import { discrimination } from '../steps/certify/discrimination.js';
import { DEFAULT_POLICY } from '../steps/certify/policy.js';
import { combineRuns } from '../steps/verifier-repeats.js';
import { DEFAULT_VERIFY_REPEATS } from '../steps/verify.js';
import type { VerifierOutcome } from '../steps/verifier-run.js';
import { excludeFlakyTasks, FLAKY_VERIFIER } from '../stats/flaky-tasks.js';
import { seededRng } from '../stats/rng.js';
import { makeAttempt } from '../stats/synthetic.js';
import type { AttemptRecord } from '../stats/types.js';
import { calculatorTask, copyTask, pairedCohortConfig } from './fixtures.js';
import { Rig } from './rig.js';

const ROOT = join(import.meta.dirname, '..');

/** The verify step's matrix in the README's agent-steps example: how many attempts a task gets there. */
function readmeAttemptsPerTask(): number {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const blocks = [...readme.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1]!);
  const block = blocks.find((b) => /kind: verify/.test(b))!;
  const steps = (parseAllDocuments(block)[0]!.toJS() as { steps: Record<string, { kind: string; matrix: { arm: string[]; rep: number } }> }).steps;
  const verify = Object.values(steps).find((s) => s.kind === 'verify')!;
  return verify.matrix.arm.length * verify.matrix.rep;
}

function outcome(pass: boolean): VerifierOutcome {
  return {
    pass,
    evidence: [],
    reward: null,
    canaries: {},
    forgery: null,
    sandbox: { backend: 'bubblewrap', isolation: 'n/a', image_id: null },
    transcript: '',
    canaryTargets: {},
  };
}

describe('an 80%-flaky verifier at the defaults (simulation through the decision code)', () => {
  it('the schema says what verify does by default', () => {
    const schema = JSON.parse(readFileSync(join(ROOT, 'schemas', 'bench.config.schema.json'), 'utf8'));
    expect(schema.definitions.verifyStep.properties.repeats.default).toBe(DEFAULT_VERIFY_REPEATS);
  });

  it('is caught by certify and verify together on at least 95% of affected tasks; certify alone catches about half', () => {
    const p = 0.8;
    const certifyRepeats = DEFAULT_POLICY.repeats;
    const verifyRepeats = DEFAULT_VERIFY_REPEATS;
    const attempts = readmeAttemptsPerTask();
    const rng = seededRng(61);
    const run = (solved: boolean) => solved && rng.uniform() < p;
    const TASKS = 20_000;
    let byCertify = 0;
    const records: AttemptRecord[] = [];
    for (let t = 0; t < TASKS; t++) {
      const task = `t${t}`;
      // certify: the untouched tree fails (the test is red before the fix), the reference solution passes 80% of the time.
      const nop = Array.from({ length: certifyRepeats }, () => run(false));
      const oracle = Array.from({ length: certifyRepeats }, () => run(true));
      if (!discrimination(nop, oracle, certifyRepeats).discriminating) {
        byCertify++;
        continue;
      }
      // verify: every attempt is correct (the worst case: a wrong one fails every run, agreeing).
      for (let a = 0; a < attempts; a++) {
        const combined = combineRuns(Array.from({ length: verifyRepeats }, () => outcome(run(true))));
        records.push(
          makeAttempt({
            task,
            arm: a % 2 ? 'treatment' : 'control',
            rep: Math.floor(a / 2) + 1,
            // As audit maps it (steps/audit.ts): a verdict whose runs disagreed is this exclusion.
            ...(combined.flaky ? { admission: 'excluded' as const, reason_code: FLAKY_VERIFIER, pass: null } : { pass: combined.outcome.pass }),
          }),
        );
      }
    }
    const byVerify = excludeFlakyTasks(records).tasks.length;
    const flagged = (byCertify + byVerify) / TASKS;
    const exact = 1 - p ** certifyRepeats * (p ** verifyRepeats + (1 - p) ** verifyRepeats) ** attempts;
    console.log(
      `80%-flaky verifier, ${TASKS} tasks, certify ${certifyRepeats} checks, verify ${verifyRepeats} runs x ${attempts} attempts: ` +
        `certify flags ${((100 * byCertify) / TASKS).toFixed(1)}%, together ${(100 * flagged).toFixed(2)}% (exact ${(100 * exact).toFixed(2)}%)`,
    );
    expect(byCertify / TASKS).toBeGreaterThan(0.45);
    expect(byCertify / TASKS).toBeLessThan(0.53);
    expect(flagged).toBeGreaterThanOrEqual(0.95);
    expect(Math.abs(flagged - exact)).toBeLessThan(0.005);
  });

  it('a task caught once is out whole, in every arm; an attempt excluded for another reason keeps it', () => {
    const records = [
      makeAttempt({ task: 'a', arm: 'control', rep: 1, pass: false }),
      makeAttempt({ task: 'a', arm: 'treatment', rep: 1, admission: 'excluded', reason_code: FLAKY_VERIFIER, pass: null }),
      makeAttempt({ task: 'a', arm: 'treatment', rep: 2, admission: 'excluded', reason_code: 'infra-sandbox', pass: null }),
      makeAttempt({ task: 'b', arm: 'control', rep: 1, pass: true }),
    ];
    const { attempts, tasks } = excludeFlakyTasks(records);
    expect(tasks).toEqual(['a']);
    expect(attempts.map((a) => [a.task, a.admission, a.reason_code])).toEqual([
      ['a', 'excluded', FLAKY_VERIFIER],
      ['a', 'excluded', FLAKY_VERIFIER],
      ['a', 'excluded', 'infra-sandbox'],
      ['b', 'accepted', 'ok'],
    ]);
    expect(attempts[0]!.explanation).toMatch(/gave different verdicts on the same changes \(run\/treatment\/a\/1\).*this one's verdict was fail/);
  });
});

const bwrap = await bubblewrapBackend.available();

describe.skipIf(!bwrap.ok && process.env['PAIRBENCH_REQUIRE_SANDBOXES'] !== '1')(
  'a verifier that flips a coin on a correct solution, no certify step (bubblewrap)',
  () => {
    let rig: Rig;
    beforeEach(() => {
      rig = new Rig();
    });
    afterEach(() => rig.cleanup());

    it('an always-correct A/A cohort: each attempt verified 3 times; a task whose runs disagreed is excluded whole, named in the analysis; none is scored from a coin', async () => {
      const tasks = ['fix-add', 'fix-add-2'];
      calculatorTask(rig.dir);
      copyTask(rig.dir, 'fix-add', 'fix-add-2');
      for (const t of tasks)
        writeFileSync(
          join(rig.dir, 'tasks', t, 'verifier', 'test_add.mjs'),
          `import { randomInt } from 'node:crypto';
const { add } = await import(process.cwd() + '/src/add.mjs');
if (add(2, 3) !== 5) { console.error('add(2, 3) = ' + add(2, 3)); process.exit(1); }
if (randomInt(2) === 0) { console.error('flaked'); process.exit(1); }
console.log('ok');
`,
        );
      rig.write('fixtures/CLAUDE.md', 'Nothing the agent reads.\n');
      rig.write(
        'bench.config.yaml',
        pairedCohortConfig(tasks, 'sed -i "s/a - b/a + b/" src/add.mjs', '', { sandbox: '{ backend: bubblewrap, egress: none }', reps: 3 }),
      );
      const r = await rig.cli('run');
      expect(r.code, r.stderr + r.stdout).toBe(0);

      const disagreed = new Set<string>();
      // Attempts audit accepted, by task and rep, per arm.
      const accepted = new Set<string>();
      for (const t of tasks)
        for (const arm of ['control', 'treatment'])
          for (const rep of [1, 2, 3]) {
            const node = `verify/${t}/${arm}/${rep}`;
            const v = await rig.outputJson(node, 'verdict.json');
            expect(v.runs.count, node).toBe(3);
            expect(v.runs.passes + v.runs.fails + v.runs.no_verdicts).toBe(3);
            const audit = await rig.outputJson(`audit/${t}/${arm}/${rep}`, 'audit.json');
            if (audit.admission === 'accepted') accepted.add(`${t}/${arm}/${rep}`);
            const split = [v.runs.passes, v.runs.fails, v.runs.no_verdicts].filter((n: number) => n > 0).length > 1;
            if (split) {
              disagreed.add(t);
              expect(v.pass, node).toBeNull();
              expect(v.flaky_verifier).toMatch(/^flaky verifier: on the same changes it passed \d, failed \d/);
              expect(await rig.outputText(node, 'verifier.log')).toMatch(/=== verifier run 3 of 3/);
              expect(audit).toMatchObject({ admission: 'excluded', reason_code: FLAKY_VERIFIER });
            } else expect(v.flaky_verifier).toBeNull();
          }
      // A fair coin agrees with itself 3 times in 4 draws of 3; over 12 attempts some disagree (all agree: 6e-8).
      expect(disagreed.size).toBeGreaterThan(0);

      const analysis = await rig.outputJson('analyze', 'analysis.json');
      const flaggedNote = analysis.notes.find((n: string) => n.includes(FLAKY_VERIFIER));
      expect(flaggedNote).toContain(`excluded whole (${FLAKY_VERIFIER})`);
      for (const t of tasks) expect(flaggedNote.includes(t)).toBe(disagreed.has(t));
      // Every attempt of a caught task is out, in both arms (an attempt audit excluded for another
      // reason keeps it); the estimate is made of the other tasks' pairs only.
      const excluded = analysis.arms.reduce(
        (n: number, a: { exclusions: Record<string, number> }) => n + Object.values(a.exclusions).reduce((x, y) => x + y, 0),
        0,
      );
      const uncaught = tasks.filter((t) => !disagreed.has(t));
      const uncaughtExcluded = uncaught
        .flatMap((t) => ['control', 'treatment'].flatMap((arm) => [1, 2, 3].map((rep) => `${t}/${arm}/${rep}`)))
        .filter((k) => !accepted.has(k));
      expect(excluded).toBe(6 * disagreed.size + uncaughtExcluded.length);
      const validPairs = uncaught.flatMap((t) => [1, 2, 3].filter((rep) => accepted.has(`${t}/control/${rep}`) && accepted.has(`${t}/treatment/${rep}`)));
      expect(analysis.comparisons[0].pairs.valid).toBe(validPairs.length);
    });
  },
);
