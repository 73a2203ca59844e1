// Signed amounts follow the house format: the sign goes between the code and the digits.
const { formatSigned } = await import(`${process.cwd()}/src/money.mjs`);
const cases = [
  [[-1250], 'EUR -12.50'],
  [[5, 'USD'], 'USD 0.05'],
  [[-100000, 'GBP'], 'GBP -1000.00'],
];
for (const [args, want] of cases) {
  const got = formatSigned(...args);
  if (got !== want) {
    console.error(`formatSigned(${args.join(', ')}) = ${JSON.stringify(got)}, expected ${JSON.stringify(want)}`);
    process.exit(1);
  }
}
console.log('signed amounts ok');
