/**
 * The bench's timings (bench/measure.ts): a child's CPU is what it used, whatever its wall time,
 * so a paired ratio says how much more work one side did under the same load.
 */
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { pairedRatios, spread, timed } from '../bench/measure.js';

describe('bench timings', () => {
  it("a child's CPU is counted apart from its wall time: a child that burns 300 ms of CPU shows them, a sleeping one none", () => {
    // Burns CPU, not wall time: on a loaded machine it takes longer, and uses the same.
    const burn = 'const t = process.cpuUsage(); for (;;) { const u = process.cpuUsage(t); if (u.user + u.system >= 300e3) break; }';
    const busy = timed(() => spawnSync(process.execPath, ['-e', burn]));
    const idle = timed(() => spawnSync('sleep', ['0.3']));
    expect(busy.timing.cpuMs).toBeGreaterThanOrEqual(290);
    expect(idle.timing.wallMs).toBeGreaterThanOrEqual(300);
    expect(idle.timing.cpuMs).toBeLessThan(100);
  });

  it('paired ratios divide each A by the B measured beside it; spread is min/median/max', () => {
    const a = [100, 200, 300].map((w) => ({ wallMs: w, cpuMs: w / 2 }));
    const b = [50, 50, 100].map((w) => ({ wallMs: w, cpuMs: 0 }));
    const r = pairedRatios(a, b);
    expect(r.wall).toEqual([2, 4, 3]);
    // A CPU anchor under a clock tick counts as one tick (10 ms).
    expect(r.cpu).toEqual([5, 10, 15]);
    expect(spread(r.wall, 1)).toBe('2.0/3.0/4.0');
  });
});
