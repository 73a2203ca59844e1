// A failure carries its reason's data (an exit code, the missing output, the corrupt blob), and
// keeps it across the queue: a worker's failure is checked case by case before the coordinator
// believes it. The samples are one per reason, typed so that a new reason without one does not
// compile; the command step's own failures are made by really running commands.
import { describe, expect, it } from 'vitest';
import { isOwnFailure, parseStepFailure, type FailureReason, type StepFailure } from '../pipeline/step-failure.js';
import { Rig } from './rig.js';

const SAMPLES: { [R in FailureReason]: Extract<StepFailure, { reason: R }> } = {
  'exit-non-zero': { reason: 'exit-non-zero', message: 'command exited with code 3', exit_code: 3, signal: null },
  timeout: { reason: 'timeout', message: 'command timed out after 2 s', after_seconds: 2 },
  'missing-output': { reason: 'missing-output', message: 'declared output "a.txt" was not produced', output: 'a.txt', upstream: null },
  'spawn-error': { reason: 'spawn-error', message: 'command could not start' },
  killed: { reason: 'killed', message: 'interrupted' },
  'input-changed': { reason: 'input-changed', message: 'input x changed after it was hashed; run again', input: 'x' },
  'corrupt-blob': { reason: 'corrupt-blob', message: 'blob does not match its digest', digest: 'a'.repeat(64) as never },
  'store-error': { reason: 'store-error', message: 'cannot read the record' },
  infra: { reason: 'infra', message: 'the provider failed' },
  refused: { reason: 'refused', message: 'not allowed' },
  internal: { reason: 'internal', message: 'bug' },
};

describe('step failures', () => {
  it.each(Object.values(SAMPLES))('$reason survives the trip through JSON with its data, and nothing but its data', (f) => {
    const sent: unknown = JSON.parse(JSON.stringify({ ...f, injected: 'ignored' }));
    expect(parseStepFailure(sent)).toEqual({ ok: true, value: f });
  });

  it.each(Object.values(SAMPLES).filter((f) => Object.keys(f).length > 2))('$reason without its data is refused, naming what it needs', (f) => {
    const r = parseStepFailure({ reason: f.reason, message: f.message });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error).toMatch(new RegExp(`^a ${f.reason} failure needs `));
  });

  it('an unknown reason, or no message, is not a failure', () => {
    expect(parseStepFailure({ reason: 'exploded', message: 'x' })).toEqual({ ok: false, error: 'unknown failure reason "exploded"' });
    expect(parseStepFailure({ reason: 'infra' }).ok).toBe(false);
    expect(parseStepFailure('infra').ok).toBe(false);
    expect(parseStepFailure({ ...SAMPLES['corrupt-blob'], digest: '../../etc/passwd' }).ok).toBe(false);
  });

  it("a corrupt blob (its producer's) and an interrupt (nobody's) are not the node's own failure; every other reason is", () => {
    const own = Object.values(SAMPLES)
      .filter(isOwnFailure)
      .map((f) => f.reason);
    expect(own.sort()).toEqual(
      Object.keys(SAMPLES)
        .filter((r) => r !== 'corrupt-blob' && r !== 'killed')
        .sort(),
    );
  });

  it("run --json reports a command's exit code, its timeout, and the output it did not write", async () => {
    const rig = new Rig();
    try {
      rig.write(
        'bench.config.yaml',
        `steps:
  exits: { kind: command, cmd: 'exit 3' }
  slow: { kind: command, cmd: 'sleep 30', timeout: 1 }
  silent: { kind: command, cmd: 'true', outs: [never.txt] }
`,
      );
      const r = await rig.cli('run', '--json');
      const nodes = (JSON.parse(r.stdout) as { nodes: { node: string; failure?: StepFailure }[] }).nodes;
      const failure = (n: string) => nodes.find((x) => x.node === n)?.failure;
      expect(failure('exits')).toMatchObject({ reason: 'exit-non-zero', exit_code: 3, signal: null });
      expect(failure('slow')).toMatchObject({ reason: 'timeout', after_seconds: 1 });
      expect(failure('silent')).toMatchObject({ reason: 'missing-output', output: 'never.txt', upstream: null });
    } finally {
      rig.cleanup();
    }
  });
});
