import { test } from 'node:test';
import assert from 'node:assert/strict';

const { createOrder } = await import(`${process.cwd()}/src/orders.mjs`);
const { amendOrder } = await import(`${process.cwd()}/src/amend.mjs`);
const { OrderError } = await import(`${process.cwd()}/src/errors.mjs`);

const refused = (e) => e instanceof OrderError && e.code === 'BAD_QUANTITY';

test('a new order with a zero quantity is refused', () => {
  assert.throws(() => createOrder({ lines: [{ sku: 'widget', qty: 0 }] }), refused);
});

test('an amendment with a negative quantity is refused', () => {
  const placed = createOrder({ lines: [{ sku: 'gadget', qty: 3 }] });
  assert.throws(() => amendOrder(placed, [{ sku: 'widget', qty: -1 }]), refused);
});
