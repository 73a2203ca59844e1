// Pass counts per arm over every verdict under $PAIRBENCH_IN.
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
const verdicts = [];
const walk = (d) => {
  for (const n of readdirSync(d)) {
    const p = join(d, n);
    if (statSync(p).isDirectory()) walk(p);
    else if (n === 'verdict.json') verdicts.push(JSON.parse(readFileSync(p, 'utf8')));
  }
};
walk(process.env.PAIRBENCH_IN);
const arms = {};
for (const v of verdicts) {
  arms[v.arm] ??= { attempts: 0, passed: 0 };
  arms[v.arm].attempts++;
  if (v.pass) arms[v.arm].passed++;
}
writeFileSync('summary.json', JSON.stringify({ arms }, null, 2) + '\n');
for (const [arm, s] of Object.entries(arms).sort()) console.log(`${arm}: ${s.passed}/${s.attempts} passed`);
