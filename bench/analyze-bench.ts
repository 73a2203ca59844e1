/**
 * `node dist/bench/analyze-bench.js`: analyze() over 500 tasks x 4 arms x 5 reps
 * (10,000 synthetic attempts, a 2x2 factorial raw/graph/rules/full) with 10,000
 * bootstrap resamples. Goal: under 2 s.
 */
import { performance } from 'node:perf_hooks';
import { analyze } from '../stats/analyze.js';
import { defaultSpec } from '../stats/spec.js';
import { syntheticCohort } from '../stats/synthetic.js';

const TASKS = 500;
const REPS = 5;
const RESAMPLES = 10000;
const GOAL_MS = 2000;

const t0 = performance.now();
const attempts = syntheticCohort({
  tasks: TASKS,
  reps: REPS,
  families: 25,
  arms: { raw: 0, graph: 0.03, rules: 0.05, full: 0.1 },
  seed: 42,
});
const tGen = performance.now() - t0;

const spec = defaultSpec('raw', ['graph', 'rules', 'full'], {
  bootstrap: { resamples: RESAMPLES, seed: 1 },
  factorial: {
    factors: ['graph', 'rules'],
    levels: { raw: { graph: 0, rules: 0 }, graph: { graph: 1, rules: 0 }, rules: { graph: 0, rules: 1 }, full: { graph: 1, rules: 1 } },
  },
});

const runs: number[] = [];
let result = analyze(attempts, spec);
for (let i = 0; i < 3; i++) {
  const t = performance.now();
  result = analyze(attempts, spec);
  runs.push(performance.now() - t);
}
runs.sort((a, b) => a - b);
const medianMs = runs[1]!;

const lines = [
  `analyze bench: ${attempts.length} attempts (${TASKS} tasks x 4 arms x ${REPS} reps), ${RESAMPLES} bootstrap resamples`,
  `  generate: ${tGen.toFixed(0)} ms`,
  `  analyze:  median ${medianMs.toFixed(0)} ms (min ${runs[0]!.toFixed(0)}, max ${runs[2]!.toFixed(0)}) over 3 runs; goal < ${GOAL_MS} ms`,
  `  heap used: ${(process.memoryUsage().heapUsed / 1e6).toFixed(0)} MB`,
  ...result.comparisons.map(
    (c) =>
      `  ${c.control} vs ${c.treatment}: ${c.verdict}, delta ${c.delta?.toFixed(4)} CI [${c.ci?.low.toFixed(4)}, ${c.ci?.high.toFixed(4)}], ` +
      `envelope ${c.envelope?.value.toFixed(4)}, MDE ${c.mde?.value?.toFixed(4) ?? 'n/a'}, sign-flip p ${c.test?.p.toExponential(2)}, McNemar p ${c.mcnemar?.p.toExponential(2)}`,
  ),
  `  factorial: ${result.factorial?.main_effects.map((e) => `${e.name} ${e.estimate.toFixed(4)}`).join(', ')}, ` +
    `interaction ${result.factorial?.interaction?.estimate.toFixed(4)}`,
  medianMs < GOAL_MS ? '  PASS' : '  OVER GOAL',
];
process.stdout.write(lines.join('\n') + '\n');
if (medianMs >= GOAL_MS) process.exitCode = 1;
