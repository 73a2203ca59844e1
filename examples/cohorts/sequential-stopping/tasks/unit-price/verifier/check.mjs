// A unit price is the amount in the house format, then ' per ' and the unit.
const { formatUnitPrice } = await import(`${process.cwd()}/src/money.mjs`);
const cases = [[[349, 'kg'], 'EUR 3.49 per kg'], [[12000, 'hour', 'USD'], 'USD 120.00 per hour']];
for (const [args, want] of cases) {
  const got = formatUnitPrice(...args);
  if (got !== want) {
    console.error(`formatUnitPrice(${args.join(', ')}) = ${JSON.stringify(got)}, expected ${JSON.stringify(want)}`);
    process.exit(1);
  }
}
console.log('formatUnitPrice ok');
