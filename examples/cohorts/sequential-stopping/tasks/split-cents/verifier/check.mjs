// A split loses no cent and differs by at most one cent, larger parts first.
const { splitCents } = await import(`${process.cwd()}/src/money.mjs`);
const cases = [
  [[100, 3], [34, 33, 33]],
  [[5, 5], [1, 1, 1, 1, 1]],
  [[7, 2], [4, 3]],
];
for (const [args, want] of cases) {
  const got = splitCents(...args);
  if (JSON.stringify(got) !== JSON.stringify(want)) {
    console.error(`splitCents(${args.join(', ')}) = ${JSON.stringify(got)}, expected ${JSON.stringify(want)}`);
    process.exit(1);
  }
}
console.log('splits ok');
