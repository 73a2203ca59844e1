// Parsing accepts the house format and refuses text without a currency code.
const { parseAmount } = await import(`${process.cwd()}/src/money.mjs`);
for (const [text, want] of [['EUR 1234.56', 123456], ['USD 0.05', 5]]) {
  if (parseAmount(text) !== want) {
    console.error(`parseAmount(${JSON.stringify(text)}) = ${parseAmount(text)}, expected ${want}`);
    process.exit(1);
  }
}
for (const text of ['12.50', '€12.50']) {
  let refused = false;
  try {
    parseAmount(text);
  } catch (e) {
    refused = e instanceof RangeError;
  }
  if (!refused) {
    console.error(`parseAmount(${JSON.stringify(text)}) should throw a RangeError`);
    process.exit(1);
  }
}
console.log('parsing ok');
