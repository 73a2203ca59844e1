// The policy agreed after the outage, and backoff() still derived from it.
const { RETRY_POLICY, backoff } = await import(`${process.cwd()}/src/retry.mjs`);
const want = { attempts: 5, baseMs: 250, maxMs: 4000 };
if (JSON.stringify(RETRY_POLICY) !== JSON.stringify(want)) {
  console.error(`RETRY_POLICY is ${JSON.stringify(RETRY_POLICY)}`);
  process.exit(1);
}
const delays = [1, 2, 3, 4, 5, 6].map((n) => backoff(n));
if (JSON.stringify(delays) !== JSON.stringify([250, 500, 1000, 2000, 4000, 4000])) {
  console.error(`backoff delays are ${JSON.stringify(delays)}`);
  process.exit(1);
}
console.log('policy ok');
