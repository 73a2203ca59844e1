// CSV exports are paper too: the house format, no thousands separators.
const { csvAmount } = await import(`${process.cwd()}/src/money.mjs`);
const cases = [
  [[123456], 'EUR 1234.56'],
  [[100000000, 'USD'], 'USD 1000000.00'],
];
for (const [args, want] of cases) {
  const got = csvAmount(...args);
  if (got !== want) {
    console.error(`csvAmount(${args.join(', ')}) = ${JSON.stringify(got)}, expected ${JSON.stringify(want)}`);
    process.exit(1);
  }
}
console.log('csv fields ok');
