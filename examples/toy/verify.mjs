// The "hidden verifier": pass when the answer is what the task asked for.
import { readFileSync, writeFileSync } from 'node:fs';
const [taskFile, answerFile, out] = process.argv.slice(2);
const task = JSON.parse(readFileSync(taskFile, 'utf8'));
const { answer, arm } = JSON.parse(readFileSync(answerFile, 'utf8'));
const want = task.want === 'reversed' ? [...task.numbers].reverse() : [...task.numbers].sort((a, b) => a - b);
const pass = JSON.stringify(answer) === JSON.stringify(want);
writeFileSync(out, JSON.stringify({ task: task.id, arm, pass }) + '\n');
console.log(`verify: ${task.id}/${arm}: ${pass ? 'pass' : 'fail'}`);
