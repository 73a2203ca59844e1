// A stand-in "agent" for the example DAG: deterministic, no model. With the hint
// (the treatment arm) it reads the task's `want`; without it, it always sorts.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
const [taskFile, out] = process.argv.slice(2);
const task = JSON.parse(readFileSync(taskFile, 'utf8'));
const hinted = existsSync('examples/toy/hint.md');
const sorted = [...task.numbers].sort((a, b) => a - b);
const answer = hinted && task.want === 'reversed' ? [...task.numbers].reverse() : sorted;
writeFileSync(out, JSON.stringify({ task: task.id, arm: process.env.PAIRBENCH_MATRIX_ARM, answer }) + '\n');
console.log(`agent: ${task.id} -> ${JSON.stringify(answer)}`);
