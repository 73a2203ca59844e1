// A range is both amounts in the house format, joined by ' to '.
const { formatRange } = await import(`${process.cwd()}/src/money.mjs`);
const cases = [[[500, 1250], 'EUR 5.00 to EUR 12.50'], [[0, 99, 'GBP'], 'GBP 0.00 to GBP 0.99']];
for (const [args, want] of cases) {
  const got = formatRange(...args);
  if (got !== want) {
    console.error(`formatRange(${args.join(', ')}) = ${JSON.stringify(got)}, expected ${JSON.stringify(want)}`);
    process.exit(1);
  }
}
console.log('formatRange ok');
