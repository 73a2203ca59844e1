// Formatting follows the house format for any currency.
const { formatAmount } = await import(`${process.cwd()}/src/money.mjs`);
const cases = [
  [[123456], 'EUR 1234.56'],
  [[5, 'USD'], 'USD 0.05'],
  [[100000, 'GBP'], 'GBP 1000.00'],
];
for (const [args, want] of cases) {
  const got = formatAmount(...args);
  if (got !== want) {
    console.error(`formatAmount(${args.join(', ')}) = ${JSON.stringify(got)}, expected ${JSON.stringify(want)}`);
    process.exit(1);
  }
}
console.log('formatting ok');
