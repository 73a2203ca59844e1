// Ties go to the even cent; everything else to the nearest cent.
const { lineTax } = await import(`${process.cwd()}/src/tax.mjs`);
const cases = [
  [250, 5, 12],
  [350, 5, 18],
  [1999, 7, 140],
  [1000, 19, 190],
  [50, 1, 0],
];
for (const [amount, rate, want] of cases) {
  const got = lineTax(amount, rate);
  if (got !== want) {
    console.error(`lineTax(${amount}, ${rate}) = ${got}, expected ${want}`);
    process.exit(1);
  }
}
console.log(`${cases.length} cases ok`);
