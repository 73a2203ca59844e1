import { test } from 'node:test';
import assert from 'node:assert/strict';

const { createOrder } = await import(`${process.cwd()}/src/orders.mjs`);
const { refundAmount } = await import(`${process.cwd()}/src/refund.mjs`);

test('a USD order is priced at 1.25 USD per EUR', () => {
  assert.equal(createOrder({ currency: 'USD', lines: [{ sku: 'widget', qty: 1 }] }).total, 1250);
});

test('a GBP order is priced at 0.80 GBP per EUR', () => {
  assert.equal(createOrder({ currency: 'GBP', lines: [{ sku: 'gadget', qty: 2 }] }).total, 4000);
});

test('a refund pays back what the line cost, in the order currency', () => {
  const order = createOrder({ currency: 'USD', lines: [{ sku: 'widget', qty: 1 }, { sku: 'gadget', qty: 1 }] });
  assert.equal(refundAmount(order, [1]), 1250);
  assert.equal(refundAmount(order, [1, 2]), order.total);
});
