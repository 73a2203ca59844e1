/**
 * Every JSON output one step reads from another holds its producer's declared type, and a
 * forged one is refused by the node that reads it. Derived, not listed: the descriptors are
 * the typed JSON outputs each kind declares, in a real cohort of every local kind; each one
 * some node reads is forged in the store in turn, and the run must fail that reader naming the
 * producer and the output, never score from it. A new JSON output with a reader is covered here without a new test.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadProject } from '../cli/project.js';
import { isJsonArtifact, parseJsonArtifact, type JsonArtifact } from '../pipeline/artifact.js';
import { plan } from '../pipeline/engine.js';
import { lookup } from '../pipeline/caching/local-cache.js';
import type { GraphNode } from '../pipeline/step-kind.js';
import { outputsDigest, type ActionRecord } from '../pipeline/store/action-cache.js';
import type { Store } from '../pipeline/store/store.js';
import { calculatorTask, everyLocalKindConfig } from './fixtures.js';
import { Rig } from './rig.js';

const ENV = { PATH: process.env['PATH'] ?? '' };

/** The descriptor of `node`'s output `name` when its kind declares it a typed JSON file. */
function declared(node: GraphNode, name: string): JsonArtifact<unknown> | undefined {
  const d = node.kind.outputs(node.step).find((a) => a.name === name);
  return d && isJsonArtifact(d) ? d : undefined;
}

/** Whether `consumer` reads `name` of its upstream `producer`: selects it, or takes all of its outputs (as export does, into the bundle). */
function reads(consumer: GraphNode, producer: GraphNode, name: string): boolean {
  if (!consumer.upstream.includes(producer)) return false;
  const wanted = consumer.kind.selectUpstream?.(consumer, producer);
  return wanted === undefined || wanted.includes(name) || wanted.includes(`${name}?`);
}

/** Puts `record` back with output `name` replaced by `bytes` (what an edit of the store would do). */
function forge(store: Store, record: ActionRecord, name: string, bytes: string): void {
  const digest = store.cas.putBytes(Buffer.from(bytes));
  const outputs = { ...record.outputs, [name]: { type: 'file' as const, digest, size: Buffer.byteLength(bytes), executable: false } };
  store.actions.put({ ...record, outputs, outputs_digest: outputsDigest(outputs), stamps: { ...record.stamps, [digest]: store.cas.stamp(digest)! } });
}

describe('JSON outputs between steps', () => {
  let rig: Rig;
  beforeAll(async () => {
    rig = new Rig();
    const { commit } = calculatorTask(rig.dir);
    rig.write('generator.json', JSON.stringify({ turns: [], completions: [{ text: 'use +\n' }] }));
    rig.write('judge.json', JSON.stringify({ turns: [], completions: [{ text: '(a) Arm B fixed add().' }] }));
    rig.write('bench.config.yaml', everyLocalKindConfig(commit));
    const first = await rig.cli('run');
    expect(first.code, first.stdout + first.stderr).toBe(0);
  });
  afterAll(() => rig.cleanup());

  async function records() {
    const loaded = await loadProject(join(rig.dir, 'bench.config.yaml'), join(rig.dir, '.pairbench'), ENV);
    if (!loaded.ok) throw new Error(loaded.error.map((d) => d.message).join('; '));
    const { ctx, inputs, graph } = loaded.value;
    const byNode = new Map<GraphNode, ActionRecord>();
    for (const e of plan(ctx, inputs, graph.nodes, ENV)) {
      expect(e.status, e.node).toBe('cached');
      const found = e.status === 'cached' ? lookup(ctx.store, e.key) : undefined;
      if (found?.status === 'hit') byNode.set(graph.byId.get(e.node)!, found.record);
    }
    return { store: ctx.store, nodes: graph.nodes, byNode };
  }

  it('what each producer wrote is what its descriptor accepts, and each forged one read by a step fails that step, naming it', async () => {
    const { store, nodes, byNode } = await records();
    // Producer node, descriptor, a node that reads it: the first found per descriptor.
    const targets = new Map<JsonArtifact<unknown>, { producer: GraphNode; record: ActionRecord; reader: GraphNode }>();
    const checked = new Set<string>();
    for (const [node, record] of byNode) {
      for (const name of Object.keys(record.outputs)) {
        const d = declared(node, name);
        if (!d) continue;
        const parsed = parseJsonArtifact(d, store.cas.read(record.outputs[name]!.digest).toString('utf8'), node.id);
        expect(parsed, `${node.id}'s ${name}`).toMatchObject({ ok: true });
        checked.add(`${node.kind.name}:${name}`);
        const reader = nodes.find((c) => reads(c, node, name));
        if (reader && !targets.has(d)) targets.set(d, { producer: node, record, reader });
      }
    }
    // The cohort holds the outputs the admission decision rests on; the property covers whatever else it holds.
    expect([...checked]).toEqual(
      expect.arrayContaining(['run:result.json', 'run:trajectory.json', 'verify:verdict.json', 'audit:audit.json', 'certify:verdict.json']),
    );
    expect([...targets.keys()].map((d) => d.name)).toEqual(
      expect.arrayContaining(['result.json', 'verdict.json', 'trajectory.json', 'canary.json', 'audit.json', 'redaction.json']),
    );

    for (const [d, { producer, record, reader }] of targets) {
      forge(store, record, d.name, JSON.stringify({ forged: true }) + '\n');
      const r = await rig.cli('run', '--jobs', '1');
      forge(store, record, d.name, store.cas.read(record.outputs[d.name]!.digest).toString('utf8'));
      const out = r.stdout + r.stderr;
      expect(r.code, `forged ${producer.id}'s ${d.name} (read by ${reader.id}):\n${out}`).not.toBe(0);
      expect(out, `forged ${producer.id}'s ${d.name}`).toContain(`${producer.id}'s ${d.name} is not`);
    }
  });
});
