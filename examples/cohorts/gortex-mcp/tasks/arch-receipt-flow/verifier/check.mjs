// Compares the lines of ANSWER.md that carry the asked-for prefix with the expected items.
import { readFileSync } from 'node:fs';

const spec = JSON.parse(readFileSync(new URL('./expected.json', import.meta.url), 'utf8'));
let text = '';
try {
  text = readFileSync('ANSWER.md', 'utf8');
} catch {
  console.error('ANSWER.md was not written');
  process.exit(1);
}
const got = text
  .split('\n')
  .map((line) => line.trim())
  .filter((line) => line.startsWith(spec.prefix))
  .map((line) => line.slice(spec.prefix.length).trim());
const norm = (items) => (spec.ordered ? items : [...items].sort()).join('\n');
if (norm(got) !== norm(spec.items)) {
  console.error(`expected ${JSON.stringify(spec.items)}${spec.ordered ? ' in this order' : ''}, got ${JSON.stringify(got)}`);
  process.exit(1);
}
console.log(`${got.length} item(s) as expected`);
