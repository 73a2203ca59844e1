import { chmodSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Sha256 } from '../pipeline/digest.js';
import { Store } from '../pipeline/store/store.js';
import { Rig } from './rig.js';

let rig: Rig;
beforeEach(() => {
  rig = new Rig();
  rig.write('in.txt', 'payload\n');
  rig.write(
    'bench.config.yaml',
    `steps:
  make:
    kind: command
    deps: [in.txt]
    cmd: echo "$PAIRBENCH_NODE" >> ${rig.execLog}; mkdir -p out/sub; cp in.txt out/sub/copy.txt; echo extra > out/extra.txt
    outs: [out]
  use:
    kind: command
    needs: [make]
    cmd: echo "$PAIRBENCH_NODE" >> ${rig.execLog}; cat "$PAIRBENCH_IN/make/out/sub/copy.txt" > used.txt
    outs: [used.txt]
`,
  );
});
afterEach(() => rig.cleanup());

function blobs(): string[] {
  const cas = join(rig.dir, '.pairbench', 'cas');
  return readdirSync(cas).flatMap((s) => readdirSync(join(cas, s)).map((n) => join(cas, s, n)));
}

function flipByte(path: string): void {
  chmodSync(path, 0o644);
  const bytes = readFileSync(path);
  bytes[0] = bytes[0]! ^ 0x01;
  writeFileSync(path, bytes);
}

describe('store integrity', () => {
  it('directories are stored as Merkle trees and restored downstream', async () => {
    expect((await rig.cli('run')).code).toBe(0);
    const ex = JSON.parse((await rig.cli('explain', 'use', '--json')).stdout);
    expect(ex.record.outputs['used.txt'].size).toBe('payload\n'.length);
    const make = JSON.parse((await rig.cli('explain', 'make', '--json')).stdout);
    expect(make.record.outputs.out).toMatchObject({ type: 'dir', size: 'payload\n'.length + 'extra\n'.length });
  });

  it('a flipped byte in a stored blob is detected, dropped with a warning, and rebuilt', async () => {
    await rig.cli('run');
    rig.clearExecutions();
    const copy = blobs().find((p) => readFileSync(p, 'utf8') === 'payload\n' && !p.includes('"entries"'))!;
    // The blob of used.txt and of out/sub/copy.txt are the same content (stored once).
    flipByte(copy);
    // Whatever reads the blob through the store (a downstream step's restore, show, export) is
    // refused the changed bytes: each read checks the blob against its name itself.
    expect(() => new Store(join(rig.dir, '.pairbench')).cas.read(basename(copy) as Sha256)).toThrow(/content does not match its digest/);
    const plan = await rig.cli('plan');
    expect(plan.stdout).toMatch(/to run {2}make\n {10}stored output blob [0-9a-f]{12} is missing or does not match its digest: it will be dropped and rebuilt/);
    const r = await rig.cli('run');
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/warning: make: stored output blob [0-9a-f]{12} is missing or does not match its digest; dropped the entry, rebuilding/);
    expect(rig.executions()).toContain('make');
    // After the rebuild the store is whole again: nothing to run.
    rig.clearExecutions();
    expect((await rig.cli('plan')).stdout).toContain('nothing to run');
    expect(readFileSync(copy, 'utf8')).toBe('payload\n');
  });

  it('a truncated action record is dropped and the node rebuilt', async () => {
    await rig.cli('run');
    rig.clearExecutions();
    const key = JSON.parse((await rig.cli('explain', 'use', '--json')).stdout).key as string;
    const record = join(rig.dir, '.pairbench', 'ac', key.slice(0, 2), `${key}.json`);
    writeFileSync(record, readFileSync(record, 'utf8').slice(0, 50));
    const r = await rig.cli('run');
    expect(r.code).toBe(0);
    expect(r.stderr).toContain('warning: use: unreadable record');
    expect(rig.executions()).toEqual(['use']);
  });
});

describe('failures', () => {
  it('a failing node fails only its downstream; every other result is kept', async () => {
    rig.write(
      'bench.config.yaml',
      `steps:
  good:
    kind: command
    cmd: echo "$PAIRBENCH_NODE" >> ${rig.execLog}; echo ok > good.txt
    outs: [good.txt]
  bad:
    kind: command
    cmd: echo "$PAIRBENCH_NODE" >> ${rig.execLog}; echo "compiler says no" >&2; exit 3
    outs: [bad.txt]
  after-bad:
    kind: command
    needs: [bad]
    cmd: echo "$PAIRBENCH_NODE" >> ${rig.execLog}; touch x
    outs: [x]
  after-good:
    kind: command
    needs: [good]
    cmd: echo "$PAIRBENCH_NODE" >> ${rig.execLog}; cp "$PAIRBENCH_IN/good/good.txt" y
    outs: [y]
  lazy:
    kind: command
    cmd: echo "$PAIRBENCH_NODE" >> ${rig.execLog}; echo forgot
    outs: [never.txt]
`,
    );
    const r = await rig.cli('run');
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('FAILED  bad: command exited with code 3\n    | compiler says no');
    expect(r.stderr).toContain('FAILED  lazy: declared output "never.txt" was not produced (the command exited 0)');
    expect(r.stderr).toContain('skipped after-bad: upstream bad did not complete');
    expect(rig.executions().sort()).toEqual(['after-good', 'bad', 'good', 'lazy']);
    const status = await rig.cli('status');
    expect(status.stdout).toMatch(/failed {2}bad \(.*\): command exited with code 3/);
    const statusJson = JSON.parse((await rig.cli('status', '--json')).stdout);
    expect(statusJson.steps['good']).toEqual({ nodes: 1, cached: 1, to_run: 0, failed_last: 0 });
    expect(statusJson.steps['bad'].failed_last).toBe(1);
    rig.clearExecutions();
    const again = await rig.cli('run');
    expect(again.code).toBe(1);
    expect(rig.executions().sort()).toEqual(['bad', 'lazy']);
    expect((await rig.cli('plan')).stdout).toContain('to run  bad\n          failed last time: command exited with code 3');
  });

  it('a command over its timeout is killed with everything it started', async () => {
    rig.write(
      'bench.config.yaml',
      `steps:
  slow:
    kind: command
    timeout: 0.5
    cmd: sleep 30 & sleep 30; touch done
    outs: [done]
`,
    );
    const t = Date.now();
    const r = await rig.cli('run');
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('FAILED  slow: command timed out after 0.5 s');
    // Killed with its children: not the 30 s they would have slept.
    expect(Date.now() - t).toBeLessThan(30_000);
  });

  it('a process left in the background does not hold the node after the command exits', async () => {
    rig.write(
      'bench.config.yaml',
      `steps:
  bg:
    kind: command
    cmd: (sleep 30; echo late > ${rig.dir}/late) & echo ok > o
    outs: [o]
`,
    );
    const t = Date.now();
    expect((await rig.cli('run')).code).toBe(0);
    // Not held for the 30 s the background process sleeps.
    expect(Date.now() - t).toBeLessThan(30_000);
    await new Promise((r) => setTimeout(r, 200));
    expect(rig.exists('late')).toBe(false);
  });
});

describe('concurrency limits', () => {
  it('never runs more nodes of a kind at once than its limit', async () => {
    const probe = join(rig.dir, 'probe');
    rig.write(
      'bench.config.yaml',
      `concurrency:
  global: 8
  kinds: { command: 2 }
steps:
  work:
    kind: command
    matrix: { i: 6 }
    cmd: >-
      mkdir -p ${probe}; touch ${probe}/$PAIRBENCH_MATRIX_I; ls ${probe} | wc -l >> ${rig.dir}/widths; sleep 0.3; rm ${probe}/$PAIRBENCH_MATRIX_I; echo > o
    outs: [o]
`,
    );
    expect((await rig.cli('run')).code).toBe(0);
    const widths = rig.read('widths').split('\n').filter(Boolean).map(Number);
    expect(widths).toHaveLength(6);
    expect(Math.max(...widths)).toBe(2);
  });
});
