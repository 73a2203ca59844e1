// The total line is 'Total: ' then the summed amount in the house format.
const { formatTotal } = await import(`${process.cwd()}/src/money.mjs`);
const cases = [[[[1250, 375]], 'Total: EUR 16.25'], [[[99, 1], 'USD'], 'Total: USD 1.00']];
for (const [args, want] of cases) {
  const got = formatTotal(...args);
  if (got !== want) {
    console.error(`formatTotal(${args.join(', ')}) = ${JSON.stringify(got)}, expected ${JSON.stringify(want)}`);
    process.exit(1);
  }
}
console.log('formatTotal ok');
