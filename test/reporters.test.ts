import { stripVTControlCharacters } from 'node:util';
import { describe, expect, it } from 'vitest';
import { ListrReporter } from '../pipeline/reporters/listr.js';
import { PlainReporter } from '../pipeline/reporters/plain.js';
import type { CacheKey } from '../pipeline/digest.js';
import { Elapsed } from '../pipeline/hooks.js';

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
    r.event({
      type: 'failed',
      node: 'a/2',
      failure: { reason: 'exit-non-zero', message: 'command exited with code 1', exit_code: 1, signal: null },
      logTail: 'boom',
    });
    r.event({ type: 'skipped', node: 'b', because: 'upstream a/2 did not complete' });
    r.event({ type: 'end', summary: { total: 3, cached: 1, executed: 0, failed: 1, interrupted: 0, skipped: 1, elapsed: new Elapsed(5) } });
    await r.close();
    // The live display is a terminal's: its lines are coloured.
    expect(stripVTControlCharacters(out)).toContain('FAILED  a/2: command exited with code 1\n    | boom');
    expect(stripVTControlCharacters(out)).toContain('3 nodes: 0 ran, 1 cached, 1 failed, 1 skipped');
  });

  it('plain output lists executed nodes, counts cached ones, and uses no colour when asked (and colour when asked, whatever process.stdout is)', () => {
    const printed = (color: boolean) => {
      let out = '';
      const r = new PlainReporter({ write: (s: string) => (out += s), isTTY: true }, { color });
      r.event({ type: 'cached', node: 'a/1', key, builtElsewhere: false });
      r.event({ type: 'done', node: 'a/2', key, durationMs: 1500, recorded: true });
      r.event({
        type: 'failed',
        node: 'a/3',
        failure: { reason: 'exit-non-zero', message: 'command exited with code 1', exit_code: 1, signal: null },
        logTail: '',
      });
      return out;
    };
    expect(printed(false)).toBe('done    a/2 (1.50 s)\nFAILED  a/3: command exited with code 1\n');
    // The same lines coloured (green, red) on a terminal that asked for colour: the lines checked above are ones colour would reach.
    expect(printed(true)).toBe('\x1b[32mdone    a/2 (1.50 s)\x1b[39m\n\x1b[31mFAILED  a/3: command exited with code 1\x1b[39m\n');
  });
});

describe('signs of life on long work', () => {
  it('a plain log ends each built line with its step and an ETA from the nodes that finished, and names what still runs', () => {
    let t = 0;
    let out = '';
    const r = new PlainReporter({ write: (s: string) => (out += s) }, { color: false, heartbeatMs: 0, now: () => t });
    r.event({ type: 'start', total: 4, steps: [{ name: 'certify', nodes: 4 }] });
    r.event({ type: 'running', node: 'certify/a' });
    r.event({ type: 'running', node: 'certify/b' });
    expect(r.heartbeat()).toBe('still running: certify/a (1s), certify/b (1s); 2 queued · certify 0/4');
    t = 60_000;
    r.event({ type: 'done', node: 'certify/a', key, durationMs: 60_000, recorded: true });
    // b has run 60 s of a 60 s mean; c and d wait: 2 x 60 s over the one still running.
    expect(out.split('\n').at(-2)).toBe('done    certify/a (60.00 s) · certify 1/4, ETA ~2m00s');
    t = 90_000;
    expect(r.heartbeat()).toBe('still running: certify/b (1m30s); 2 queued · certify 1/4, ETA ~2m00s');
    r.event({ type: 'done', node: 'certify/b', key, durationMs: 90_000, recorded: true });
    expect(r.heartbeat()).toBeUndefined();
  });

  it('the heartbeat is written on its own while a node runs, and stops at the end', async () => {
    const lines: string[] = [];
    let seen!: () => void;
    const beat = new Promise<void>((resolve) => (seen = resolve));
    const r = new PlainReporter(
      {
        write: (s: string) => {
          lines.push(s);
          if (s.startsWith('still running: slow/1')) seen();
        },
      },
      { color: false, heartbeatMs: 20 },
    );
    r.event({ type: 'start', total: 1, steps: [{ name: 'slow', nodes: 1 }] });
    r.event({ type: 'running', node: 'slow/1' });
    await beat;
    r.event({ type: 'end', summary: { total: 1, cached: 0, executed: 1, failed: 0, interrupted: 0, skipped: 0, elapsed: new Elapsed(1) } });
    const after = lines.length;
    await new Promise((resolve) => setImmediate(resolve));
    expect(lines.length).toBe(after);
  });
});
