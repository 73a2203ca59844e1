/**
 * The provider faults every agent adapter must survive, and what its record must show after:
 * shared by each adapter's end-to-end test, so an adapter added later is held to the same.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import type { FakeFault } from '../gateway/fake-script.js';
import type { Rig } from './rig.js';

/** The first turn's request is rate limited (retry after 1 s), then overloaded, then its stream breaks with an error event. */
export const PROVIDER_FAULTS: FakeFault[] = [
  { request: 1, status: 429, retry_after_seconds: 1 },
  { request: 2, status: 529 },
  { request: 3, stream_error: 'overloaded_error' },
];

/** The script with the faults added (its turns unchanged: a retry is answered with the same turn). */
export function withFaults(script: string, faults: readonly FakeFault[] = PROVIDER_FAULTS): string {
  return JSON.stringify({ ...(JSON.parse(script) as object), faults });
}

/**
 * Runs the control arm's attempt of `config` (an adapter test's one-task config) with its
 * scripted model `script` given the faults, then checks what its record must show.
 */
export async function survivesProviderFaults(
  rig: Rig,
  config: string,
  script: string,
  firstTurnInput: number,
  faults: readonly FakeFault[] = PROVIDER_FAULTS,
): Promise<void> {
  rig.write('fixtures/faults.script.json', withFaults(readFileSync(join(rig.dir, script), 'utf8'), faults));
  rig.write('bench.config.yaml', config.replaceAll(script, 'fixtures/faults.script.json'));
  const r = await rig.cli('run', 'verify/fix-add/control');
  expect(r.code, r.stderr).toBe(0);
  await expectFaultsSurvived(rig, 'attempts/fix-add/control/1', 'verify/fix-add/control/1', firstTurnInput);
}

/**
 * The attempt finished as the agent's own (done, the verifier passes); every try is on its
 * record with the provider's status; the broken stream's input is billed on top of the
 * script's usage; and its wall time includes the wait the provider asked for.
 */
async function expectFaultsSurvived(rig: Rig, attempt: string, verify: string, firstTurnInput: number): Promise<void> {
  const result = await rig.outputJson(attempt, 'result.json');
  expect(result.exit_reason, await rig.outputText(attempt, 'agent.log')).toBe('done');
  expect(result.infra_error).toBeNull();
  expect(result.provider_statuses).toMatchObject({ '429': 1, '529': 1 });
  expect(result.provider_statuses['200']).toBeGreaterThanOrEqual(2);
  expect(result.wall_ms).toBeGreaterThanOrEqual(1000);
  // In the order they came: the 429 and the 529, then the third request (the broken stream, if scripted) and the rest.
  const exchanges = (await rig.outputText(attempt, 'gateway.jsonl'))
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { status: number; request_body: { tools?: unknown[] } | null; usage: { input_tokens: number } | null });
  const turns = exchanges.filter((e) => e.request_body?.tools?.length);
  expect(turns.slice(0, 4).map((e) => e.status)).toEqual([429, 529, 200, 200]);
  // The third request billed its input (a broken stream too): it is in the attempt's usage.
  expect(turns[2]!.usage?.input_tokens).toBe(firstTurnInput);
  expect((await rig.outputJson(verify, 'verdict.json')).pass).toBe(true);
}
