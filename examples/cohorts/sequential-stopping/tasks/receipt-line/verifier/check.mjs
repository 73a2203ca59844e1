// A receipt line is the quantity, ' x ', the label, ': ', then the line's amount in the house format.
const { receiptLine } = await import(`${process.cwd()}/src/money.mjs`);
const cases = [[['Coffee', 3, 350], '3 x Coffee: EUR 10.50'], [['Seat', 2, 4500, 'USD'], '2 x Seat: USD 90.00']];
for (const [args, want] of cases) {
  const got = receiptLine(...args);
  if (got !== want) {
    console.error(`receiptLine(${args.join(', ')}) = ${JSON.stringify(got)}, expected ${JSON.stringify(want)}`);
    process.exit(1);
  }
}
console.log('receiptLine ok');
