// Only the house format is an amount: a code, one space, the digits with two decimals.
const { isAmount } = await import(`${process.cwd()}/src/money.mjs`);
const cases = [
  ['EUR 12.50', true],
  ['USD -0.05', true],
  ['12.50', false],
  ['€12.50', false],
  ['EUR 1,234.56', false],
];
for (const [text, want] of cases) {
  if (isAmount(text) !== want) {
    console.error(`isAmount(${JSON.stringify(text)}) = ${isAmount(text)}, expected ${want}`);
    process.exit(1);
  }
}
console.log('amount recognition ok');
