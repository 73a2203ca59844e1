import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Rig } from './rig.js';

let rig: Rig;
beforeEach(() => (rig = new Rig()));
afterEach(() => rig.cleanup());

const step = (content: string) => `steps:
  gen:
    kind: command
    matrix: { i: 3 }
    cmd: head -c 20000 /dev/zero | tr '\\0' '${content}' > big; echo $PAIRBENCH_MATRIX_I >> big
    outs: [big]
`;

describe('gc', () => {
  it('removes least-recently-used entries down to the cap, never what the config reaches; --dry-run removes nothing', async () => {
    rig.write('bench.config.yaml', step('a'));
    await rig.cli('run');
    await new Promise((r) => setTimeout(r, 20));
    rig.write('bench.config.yaml', step('b'));
    await rig.cli('run');
    await new Promise((r) => setTimeout(r, 20));
    rig.write('bench.config.yaml', step('c'));
    await rig.cli('run');

    const dry = JSON.parse((await rig.cli('gc', '--max-size', '70KB', '--keep-newer-than', '0s', '--dry-run', '--json')).stdout);
    expect(dry.dry_run).toBe(true);
    expect(dry.records_total).toBe(9);
    expect(dry.records_reachable).toBe(3);
    // The oldest generation ("a") goes first.
    expect(dry.removed_records.length).toBeGreaterThanOrEqual(3);
    const first = await rig.cli('explain', 'gen/1', '--json');
    expect(JSON.parse(first.stdout).status).toBe('cached');

    // Nothing was removed by the dry run: going back to "a" is still cached.
    rig.write('bench.config.yaml', step('a'));
    expect((await rig.cli('plan')).stdout).toContain('nothing to run');
    rig.write('bench.config.yaml', step('c'));

    const real = JSON.parse((await rig.cli('gc', '--max-size', '70KB', '--keep-newer-than', '0s', '--json')).stdout);
    expect(real.bytes_after).toBeLessThanOrEqual(70_000);
    // The current config is intact...
    expect((await rig.cli('plan')).stdout).toContain('nothing to run');
    // ...and the least recently used generation is gone.
    rig.write('bench.config.yaml', step('a'));
    const plan = JSON.parse((await rig.cli('plan', '--json')).stdout);
    expect(plan.to_run).toBe(3);
  });
});
