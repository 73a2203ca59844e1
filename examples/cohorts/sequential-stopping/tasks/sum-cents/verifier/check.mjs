// Totals of integer cents stay exact.
const { sumCents } = await import(`${process.cwd()}/src/money.mjs`);
const cases = [
  [[], 0],
  [[10, 20, 30], 60],
  [[1, 2, -3, 100000000], 100000000],
];
for (const [list, want] of cases) {
  if (sumCents(list) !== want) {
    console.error(`sumCents(${JSON.stringify(list)}) = ${sumCents(list)}, expected ${want}`);
    process.exit(1);
  }
}
console.log('sums ok');
