import { describe, expect, it } from 'vitest';
import { ListrReporter } from '../pipeline/reporters/listr.js';
import { PlainReporter } from '../pipeline/reporters/plain.js';
import type { CacheKey } from '../pipeline/digest.js';

const key = 'k'.repeat(64) as CacheKey;

describe('reporters', () => {
  it('listr2 progress finishes even when a step settles before listr starts its task', async () => {
    let out = '';
    const r = new ListrReporter({ write: (s: string) => (out += s) });
    r.event({
      type: 'start',
      total: 3,
      steps: [
        { name: 'a', nodes: 2 },
        { name: 'b', nodes: 1 },
      ],
    });
    r.event({ type: 'cached', node: 'a/1', key, builtElsewhere: false });
    r.event({ type: 'running', node: 'a/2' });
    r.event({ type: 'failed', node: 'a/2', failure: { reason: 'exit-non-zero', message: 'command exited with code 1' }, logTail: 'boom' });
    r.event({ type: 'skipped', node: 'b', because: 'upstream a/2 did not complete' });
    r.event({ type: 'end', summary: { total: 3, cached: 1, executed: 0, failed: 1, skipped: 1, durationMs: 5 } });
    await r.close();
    expect(out).toContain('FAILED  a/2: command exited with code 1\n    | boom');
    expect(out).toContain('3 nodes: 0 ran, 1 cached, 1 failed, 1 skipped');
  });

  it('plain output lists executed nodes, counts cached ones, and uses no colour when asked', () => {
    let out = '';
    const r = new PlainReporter({ write: (s: string) => (out += s), isTTY: true }, { color: false });
    r.event({ type: 'cached', node: 'a/1', key, builtElsewhere: false });
    r.event({ type: 'done', node: 'a/2', key, durationMs: 1500, recorded: true });
    expect(out).toBe('done    a/2 (1.50 s)\n');
  });
});
