import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RecordPack } from '../pipeline/store/record-pack.js';
import type { ActionRecord } from '../pipeline/store/action-cache.js';
import { Store } from '../pipeline/store/store.js';
import { bareRecord } from './bare-record.js';
import { BIN, logged, Rig } from './rig.js';

// The records of a run that executed more than the loose threshold (64) end up in one sealed pack.
const NODES = 70;

let rig: Rig;
beforeEach(() => {
  rig = new Rig();
});
afterEach(() => rig.cleanup());

function config(cmd = 'echo "$PAIRBENCH_NODE" > o'): string {
  return `steps:
  work:
    kind: command
    matrix: { task: ${NODES} }
    cmd: ${JSON.stringify(logged(rig, cmd))}
    outs: [o]
`;
}

function spawnCli(...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { env: { PATH: process.env['PATH'], CI: '1' } }, (e, stdout, stderr) =>
      resolve({ code: e ? (e.code as number) : 0, stdout, stderr }),
    );
  });
}

const ac = () => join(rig.dir, '.pairbench', 'ac');
const looseRecords = () => readdirSync(ac(), { recursive: true }).filter((f) => String(f).endsWith('.json'));
const packOnDisk = () => RecordPack.open(join(ac(), 'pack'));

describe('the record pack', () => {
  it("packs a run's records into one sealed file; a no-op run reads it and runs nothing", async () => {
    rig.write('bench.config.yaml', config());
    expect((await rig.cli('run')).code).toBe(0);
    expect(rig.executions()).toHaveLength(NODES);
    expect(looseRecords()).toEqual([]);
    expect(packOnDisk()!.count).toBe(NODES);
    // A successful node leaves no per-node file: its latest build is one journal line.
    const nodes = readdirSync(join(rig.dir, '.pairbench', 'nodes'));
    expect(nodes).toEqual(['built']);

    rig.clearExecutions();
    const again = await rig.cli('run');
    expect(again.code).toBe(0);
    expect(again.stderr).toContain(`${NODES} nodes: 0 ran, ${NODES} cached`);
    expect(rig.executions()).toEqual([]);
    const ex = JSON.parse((await rig.cli('explain', 'work/7', '--json')).stdout);
    expect(ex.status).toBe('cached');
    expect(ex.record.outputs.o.size).toBe('work/7\n'.length);
    expect(ex.latest_build.key).toBe(ex.key);

    // An edited command: plan explains each node from the packed record of its last build.
    rig.write('bench.config.yaml', config('echo "$PAIRBENCH_NODE" changed > o'));
    const plan = JSON.parse((await rig.cli('plan', '--json')).stdout);
    expect(plan.to_run).toBe(NODES);
    expect(JSON.stringify(plan)).toContain('cmd');
  });

  it("a cached node's blob stamps are read from the head of its packed entry, and a pack in the earlier field order reads the same", async () => {
    // An output named "stamps": the head of the entry, not a search for the word, is what is read.
    rig.write('bench.config.yaml', config().replace('> o', '> stamps').replace('outs: [o]', 'outs: [stamps]'));
    expect((await rig.cli('run')).code).toBe(0);
    const pack = packOnDisk()!;
    for (let i = 0; i < pack.count; i++) expect(pack.body(i).rest.startsWith('{"stamps":{"')).toBe(true);
    const blobOf = async (node: string) => {
      const digest = JSON.parse((await rig.cli('explain', node, '--json')).stdout).record.outputs.stamps.digest as string;
      return join(rig.dir, '.pairbench', 'cas', digest.slice(0, 2), digest);
    };
    // A blob gone from the store: the record that names it in its stamps is no hit, and its node runs again.
    const removeAndRun = async (node: string) => {
      rmSync(await blobOf(node), { force: true });
      rig.clearExecutions();
      const r = await rig.cli('run');
      expect(r.code).toBe(0);
      expect(rig.executions()).toEqual([node]);
    };
    await removeAndRun('work/7');

    // The same pack with each entry's fields in the order packs were written before (stamps after outputs).
    const now = packOnDisk()!;
    const earlier = [...now.entries()].map((e) => {
      const { stamps, ...others } = JSON.parse(e.rest) as Record<string, unknown>;
      return { ...e, rest: JSON.stringify({ ...others, stamps }) };
    });
    expect(earlier.every((e) => !e.rest.startsWith('{"stamps"'))).toBe(true);
    writeFileSync(join(ac(), 'pack'), RecordPack.build(earlier));
    rig.clearExecutions();
    expect((await rig.cli('run')).stderr).toContain(`${NODES} nodes: 0 ran, ${NODES} cached`);
    await removeAndRun('work/12');

    // Stamps first, but not in the exact form the pack writes (spaces JSON allows): read whole, the same answer.
    const spaced = [...packOnDisk()!.entries()].map((e) => {
      const { stamps, ...others } = JSON.parse(e.rest) as { stamps: Record<string, string> };
      const text = Object.entries(stamps)
        .map(([d, st]) => `"${d}" : "${st}"`)
        .join(' , ');
      return { ...e, rest: `{"stamps":{${text}},${JSON.stringify(others).slice(1)}` };
    });
    expect(spaced.every((e) => e.rest.startsWith('{"stamps":{"') && e.rest.includes('" : "'))).toBe(true);
    writeFileSync(join(ac(), 'pack'), RecordPack.build(spaced));
    rig.clearExecutions();
    expect((await rig.cli('run')).stderr).toContain(`${NODES} nodes: 0 ran, ${NODES} cached`);
    await removeAndRun('work/21');
  });

  it('records read from a remote cache are not lost when the pack cannot be rewritten: they are written loose', () => {
    const store = new Store(join(rig.dir, '.pairbench'));
    store.init();
    // Records as the remote tier hands them over (verified: each pre-image hashes to its key).
    const records: ActionRecord[] = Array.from({ length: NODES }, (_, i) => bareRecord(`{"n":${i}}`, `work/${i}`));
    for (const r of records) store.actions.putFetched(r);
    // A directory where the pack belongs: the file system refuses to read or replace it.
    mkdirSync(join(ac(), 'pack'), { recursive: true });
    expect(() => store.actions.packLoose()).toThrow(/EISDIR/);
    const later = new Store(join(rig.dir, '.pairbench'));
    for (const r of records) expect(later.actions.get(r.key).status, r.node).toBe('hit');
    expect(looseRecords()).toHaveLength(NODES);
  });

  it('a pack that does not match its seal is set aside and reported, and its nodes rebuild', async () => {
    rig.write('bench.config.yaml', config());
    await rig.cli('run');
    const pack = join(ac(), 'pack');
    const bytes = readFileSync(pack);
    const mid = Math.floor(bytes.length / 2);
    bytes[mid] = bytes[mid]! ^ 0x20;
    writeFileSync(pack, bytes);

    const fsck = await rig.cli('fsck');
    expect(fsck.code).not.toBe(0);
    expect(fsck.stdout).toMatch(/record pack .* was not whole \(record pack does not match its seal\) and was set aside/);
    expect(readdirSync(ac()).filter((f) => f.startsWith('pack.corrupt-'))).toHaveLength(1);

    rig.clearExecutions();
    const r = await rig.cli('run');
    expect(r.code).toBe(0);
    expect(rig.executions()).toHaveLength(NODES);
    expect(packOnDisk()!.count).toBe(NODES);
    rig.clearExecutions();
    expect((await rig.cli('run')).code).toBe(0);
    expect(rig.executions()).toEqual([]);
  });

  it('a pack the file system cannot read is left as it is, never rewritten without its records', async () => {
    rig.write('bench.config.yaml', config());
    await rig.cli('run');
    // The pack made unreadable (a directory where the file should be: reads fail with EISDIR).
    const pack = join(ac(), 'pack');
    renameSync(pack, `${pack}.saved`);
    mkdirSync(pack);
    rig.write('bench.config.yaml', config('echo "$PAIRBENCH_NODE" other > o'));
    const r = await rig.cli('run');
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/could not pack the action records \(they stay loose, as valid\)/);
    expect(looseRecords()).toHaveLength(NODES);
    expect(statSync(pack).isDirectory()).toBe(true);
    // Readable again: every record of the first config is still there.
    rmdirSync(pack);
    renameSync(`${pack}.saved`, pack);
    rig.write('bench.config.yaml', config());
    rig.clearExecutions();
    expect((await rig.cli('run')).code).toBe(0);
    expect(rig.executions()).toEqual([]);
  });

  it('gc removes records from the pack and keeps what the config reaches', async () => {
    rig.write('bench.config.yaml', config('echo "$PAIRBENCH_NODE" old > o'));
    await rig.cli('run');
    rig.write('bench.config.yaml', config());
    await rig.cli('run');
    expect(packOnDisk()!.count).toBe(2 * NODES);
    const gc = JSON.parse((await rig.cli('gc', '--max-size', '1B', '--keep-newer-than', '0s', '--json')).stdout);
    expect(gc.removed_records).toHaveLength(NODES);
    expect(packOnDisk()!.count).toBe(NODES);
    rig.clearExecutions();
    expect((await rig.cli('run')).code).toBe(0);
    expect(rig.executions()).toEqual([]);
  });

  it('two runs that pack into one store at the same time lose no record', async () => {
    const store = join(rig.dir, 'shared-store');
    rig.write('a/bench.config.yaml', config('echo a "$PAIRBENCH_NODE" > o'));
    rig.write('b/bench.config.yaml', config('echo b "$PAIRBENCH_NODE" > o'));
    // Two processes (the CLI as a user starts it), each packing its 70 records under the pack's lock.
    const [a, b] = await Promise.all(['a', 'b'].map((d) => spawnCli('run', '--config', join(rig.dir, d, 'bench.config.yaml'), '--store', store)));
    expect(a!.code, a!.stderr).toBe(0);
    expect(b!.code).toBe(0);
    const packed = RecordPack.open(join(store, 'ac', 'pack'));
    const loose = readdirSync(join(store, 'ac'), { recursive: true }).filter((f) => String(f).endsWith('.json'));
    expect((packed?.count ?? 0) + loose.length).toBe(2 * NODES);
    for (const d of ['a', 'b']) {
      const plan = JSON.parse((await spawnCli('plan', '--config', join(rig.dir, d, 'bench.config.yaml'), '--store', store, '--json')).stdout);
      expect(plan.to_run, d).toBe(0);
    }
  });
});

describe('RecordPack', () => {
  const rec = (i: number) => ({
    key: i.toString(16).padStart(64, '0'),
    preimage: `{"n":${i}}`,
    rest: `{"node":"n/${i}"}`,
    outputsDigest: (i + 7).toString(16).padStart(64, 'a'),
  });

  it('finds every record by key, with its pre-image, fields and outputs digest', () => {
    const pack = RecordPack.fromBytes(RecordPack.build([3, 1, 2, 1].map(rec)));
    expect(pack.count).toBe(3);
    for (const i of [1, 2, 3]) {
      const at = pack.indexOf(rec(i).key);
      expect(pack.entry(at)).toEqual(rec(i));
      expect(pack.body(at)).toEqual({ preimage: `{"n":${i}}`, rest: `{"node":"n/${i}"}` });
      expect(pack.outputsDigest(at)).toBe(rec(i).outputsDigest);
    }
    expect(pack.indexOf(rec(9).key)).toBe(-1);
  });

  it("hands over an entry's rest only when its pre-image is exactly the caller's bytes", () => {
    const multibyte = { ...rec(4), preimage: '{"n":"é ✓ 𝄞"}' };
    const pack = RecordPack.fromBytes(RecordPack.build([rec(1), multibyte]));
    const at = pack.indexOf(multibyte.key);
    expect(pack.restIfPreimage(at, '{"n":"é ✓ 𝄞"}')?.toString()).toBe(multibyte.rest);
    // The same length in UTF-16 and in bytes, one character different; a shorter and a longer one.
    expect(pack.restIfPreimage(at, '{"n":"é ✓ 𝄟"}')).toBeUndefined();
    expect(pack.restIfPreimage(at, '{"n":"e ✓ 𝄞"}')).toBeUndefined();
    expect(pack.restIfPreimage(at, '{"n":"é ✓ 𝄞"} ')).toBeUndefined();
    expect(pack.restIfPreimage(pack.indexOf(rec(1).key), '{"n":1}')?.toString()).toBe(rec(1).rest);
  });

  it('refuses a pack that is cut short or altered', () => {
    const bytes = RecordPack.build([1, 2].map(rec));
    expect(() => RecordPack.fromBytes(bytes.subarray(0, bytes.length - 1))).toThrow(/seal|truncated/);
    const altered = Buffer.from(bytes);
    altered[altered.length - 40] = altered[altered.length - 40]! ^ 1;
    expect(() => RecordPack.fromBytes(altered)).toThrow(/does not match its seal/);
    expect(() => RecordPack.fromBytes(Buffer.from('not a pack at all, not at all......................'))).toThrow(/bad magic/);
  });
});

it('the store directory has no pack until enough records are loose', async () => {
  rig.write('bench.config.yaml', 'steps:\n  a: { kind: command, cmd: "echo hi > o", outs: [o] }\n');
  await rig.cli('run');
  expect(existsSync(join(ac(), 'pack'))).toBe(false);
  expect(looseRecords()).toHaveLength(1);
});
