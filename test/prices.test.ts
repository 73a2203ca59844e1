import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { priceFor, DEFAULT_PRICE } from '../gateway/cost.js';
import { startFakeModel, type FakeModel } from '../gateway/fake-model.js';
import { PRICE_TABLE, parsePriceTable } from '../gateway/price-table.js';
import { calculatorTask } from './fixtures.js';
import { Rig } from './rig.js';

// What an attempt costs: the provider's usage at a dated, per-model price a user can read and
// override. The model here is the scripted fake started as a plain upstream: to pairbench it is a
// provider (its usage is the provider's), so the cost is stated.

describe('the price table', () => {
  it('prices a dated model version by its name, the longest name first; an unknown model is estimated', () => {
    expect(priceFor('claude-sonnet-4-5-20250929', PRICE_TABLE.models, DEFAULT_PRICE)).toEqual({
      price: PRICE_TABLE.models['claude-sonnet-4-5'],
      confidence: 'exact',
    });
    expect(priceFor('gpt-5-mini-2025-08-07', PRICE_TABLE.models, DEFAULT_PRICE)!.price).toEqual(PRICE_TABLE.models['gpt-5-mini']);
    // A name must end at a dash: gpt-4o is not gpt-4's, claude-sonnet-4-50 is not claude-sonnet-4-5's.
    expect(priceFor('claude-sonnet-4-50', PRICE_TABLE.models, DEFAULT_PRICE)!.price).toEqual(PRICE_TABLE.models['claude-sonnet-4']);
    expect(priceFor('some-local-model', PRICE_TABLE.models, DEFAULT_PRICE)).toEqual({ price: DEFAULT_PRICE, confidence: 'estimated' });
    expect(PRICE_TABLE.as_of).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    for (const [name, p] of Object.entries(PRICE_TABLE.models)) for (const v of Object.values(p)) expect(v, name).toBeGreaterThan(0);
  });

  it("a user's table is checked field by field", () => {
    const good = { source: 'our contract', as_of: '2026-11-30', models: { m: { input: 1, output: 2, cache_write: 1, cache_read: 0.1 } } };
    expect(parsePriceTable(good)).toMatchObject({ ok: true });
    expect(parsePriceTable({ ...good, as_of: 'last week' })).toMatchObject({ ok: false, field: 'as_of' });
    expect(parsePriceTable({ ...good, source: '' })).toMatchObject({ ok: false, field: 'source' });
    expect(parsePriceTable({ ...good, models: { m: { ...good.models.m, output: -1 } } })).toMatchObject({ ok: false, field: 'models.m.output' });
    expect(parsePriceTable({ ...good, models: { m: { ...good.models.m, cached: 1 } } })).toMatchObject({ ok: false, field: 'models.m.cached' });
  });
});

let rig: Rig;
let provider: FakeModel;
beforeEach(async () => {
  rig = new Rig();
  calculatorTask(rig.dir);
  provider = await startFakeModel(
    { turns: [{ text: 'done', usage: { input_tokens: 1_000_000, output_tokens: 100_000, cache_read_input_tokens: 200_000 } }] },
    { port: 0 },
  );
});
afterEach(async () => {
  await provider.close();
  rig.cleanup();
});

/** One request of `model` to the provider, from the user's command, through the gateway. */
function config(model: string, prices = ''): string {
  const request = JSON.stringify({
    model,
    max_tokens: 100,
    stream: false,
    tools: [{ name: 't', input_schema: { type: 'object' } }],
    messages: [{ role: 'user', content: 'hi' }],
  });
  const agent = `node -e 'fetch(process.env.PAIRBENCH_MODEL_URL + "/v1/messages", {method: "POST", headers: {"content-type": "application/json"}, body: process.argv[1]}).then(r => process.exit(r.ok ? 0 : 3))' '${request}'`;
  return `steps:
  materialize: { kind: materialize, matrix: { task: [fix-add] } }
  attempts:
    kind: run
    needs: [materialize]
    matrix: { task: [fix-add], arm: [control], rep: 1 }
    agent: { adapter: command, command: ${JSON.stringify(agent)} }
    arms: { control: {} }
    sandbox: { backend: local, egress: open }
    model: { upstream: "${provider.url}"${prices ? `, prices: ${prices}` : ''} }
`;
}

async function result(): Promise<{ cost_usd: number | null; cost_confidence: string; price_table: { source: string; as_of: string } }> {
  const r = await rig.cli('run', 'attempts');
  expect(r.code, r.stderr).toBe(0);
  return rig.outputJson('attempts/fix-add/control/1', 'result.json');
}

describe('an attempt is costed at the table', () => {
  it("a model in the shipped table is exact, with the table's source and date on the record; a user's table replaces its price; an unknown model is estimated", async () => {
    rig.write('bench.config.yaml', config('claude-haiku-4-5-20251001'));
    const haiku = PRICE_TABLE.models['claude-haiku-4-5']!;
    // 1M input (cache reads are separate on Anthropic's wire), 0.1M output, 0.2M cache reads.
    expect(await result()).toMatchObject({
      cost_usd: expect.closeTo(haiku.input + 0.1 * haiku.output + 0.2 * haiku.cache_read, 9),
      cost_confidence: 'exact',
      price_table: { source: PRICE_TABLE.source, as_of: PRICE_TABLE.as_of },
    });

    writeFileSync(
      join(rig.dir, 'prices.json'),
      JSON.stringify({
        source: 'our negotiated rate',
        as_of: '2026-11-30',
        models: { 'claude-haiku-4-5': { input: 0.5, output: 2.5, cache_write: 0.6, cache_read: 0.05 } },
      }),
    );
    rig.write('bench.config.yaml', config('claude-haiku-4-5-20251001', 'prices.json'));
    expect(await result()).toMatchObject({ cost_usd: expect.closeTo(0.5 + 0.25 + 0.01, 9), cost_confidence: 'exact', price_table: { as_of: '2026-11-30' } });
    expect((await result()).price_table.source).toContain('our negotiated rate');

    rig.write('bench.config.yaml', config('a-model-nobody-priced'));
    expect(await result()).toMatchObject({
      cost_usd: expect.closeTo(DEFAULT_PRICE.input + 0.1 * DEFAULT_PRICE.output + 0.2 * DEFAULT_PRICE.cache_read, 9),
      cost_confidence: 'estimated',
    });
  });

  it('a price file that is wrong is named with its field before anything runs', async () => {
    writeFileSync(
      join(rig.dir, 'prices.json'),
      JSON.stringify({ source: 'x', as_of: '2026-11-30', models: { m: { input: 'cheap', output: 1, cache_write: 1, cache_read: 1 } } }),
    );
    rig.write('bench.config.yaml', config('m', 'prices.json'));
    const r = await rig.cli('run', 'attempts');
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('steps.attempts.model.prices');
    expect(r.stderr).toContain('prices.json: models.m.input: expected a number of USD per million tokens');
    expect(provider.requests).toEqual([]);
  });
});
