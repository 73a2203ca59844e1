import { test } from 'node:test';
import assert from 'node:assert/strict';

const { createOrder } = await import(`${process.cwd()}/src/orders.mjs`);
const { OrderError } = await import(`${process.cwd()}/src/errors.mjs`);

test('an order without lines is refused with its error code', () => {
  assert.throws(
    () => createOrder({ lines: [] }),
    (e) => e instanceof OrderError && e.code === 'EMPTY_ORDER',
  );
});
