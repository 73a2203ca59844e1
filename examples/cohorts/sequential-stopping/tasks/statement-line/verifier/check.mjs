// A statement line is the label, a colon and a space, then the amount in the house format.
const { statementLine } = await import(`${process.cwd()}/src/money.mjs`);
const cases = [
  [['Rent', 120000], 'Rent: EUR 1200.00'],
  [['Coffee', 350, 'USD'], 'Coffee: USD 3.50'],
];
for (const [args, want] of cases) {
  const got = statementLine(...args);
  if (got !== want) {
    console.error(`statementLine(${args.join(', ')}) = ${JSON.stringify(got)}, expected ${JSON.stringify(want)}`);
    process.exit(1);
  }
}
console.log('statement lines ok');
