// The store against what a hostile agent or an unlucky machine does to it: a blob
// corrupted without changing its size or mtime, concurrent runs racing for a lock
// and for the cohort registry, huge sparse files, gc across configs sharing a store.
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, closeSync, existsSync, ftruncateSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sha256File } from '../pipeline/digest.js';
import { Rig } from './rig.js';
import { calculatorTask, makeRepo } from './fixtures.js';

let rig: Rig;
beforeEach(() => (rig = new Rig()));
afterEach(() => rig.cleanup());

function allBlobs(): string[] {
  const cas = join(rig.dir, '.pairbench', 'cas');
  return readdirSync(cas).flatMap((s) => readdirSync(join(cas, s)).map((n) => join(cas, s, n)));
}

/** Flips one byte, keeping the size and the mtime (to the nanosecond): the fast check (size, mtime) cannot see it. */
function corruptQuietly(path: string): void {
  const mtime = execFileSync('stat', ['--format=%.9Y', path], { encoding: 'utf8' }).trim();
  chmodSync(path, 0o644);
  const bytes = readFileSync(path);
  bytes[bytes.length - 2] = bytes[bytes.length - 2]! ^ 0x20;
  writeFileSync(path, bytes);
  chmodSync(path, 0o444);
  execFileSync('touch', ['-m', '-d', `@${mtime}`, path]);
  expect(execFileSync('stat', ['--format=%.9Y', path], { encoding: 'utf8' }).trim()).toBe(mtime);
}

const BUNDLE_CONFIG = (rigDir: string, log: string) => `steps:
  make:
    kind: command
    cmd: echo "$PAIRBENCH_NODE" >> ${log}; echo "the payload of the bundle" > payload.txt
    outs: [payload.txt]
  export:
    kind: command
    needs: [make]
    cmd: echo "$PAIRBENCH_NODE" >> ${log}; mkdir bundle; cp "$PAIRBENCH_IN/make/payload.txt" bundle/; echo report > bundle/report.md
    outs: [bundle]
`;

/** A whole cohort on the local backend with the oracle agent: fast, and ends in an export. */
const LOCAL_COHORT = `steps:
  materialize: { kind: materialize, matrix: { task: [fix-add] } }
  attempts:
    kind: run
    needs: [materialize]
    matrix: { task: [fix-add], arm: [control, treatment], rep: 1 }
    agent: { adapter: oracle }
    arms: { control: {}, treatment: {} }
    sandbox: { backend: local, egress: open }
  verify:
    kind: verify
    needs: [materialize, attempts]
    matrix: { task: [fix-add], arm: [control, treatment], rep: 1 }
    sandbox: { backend: local, egress: open }
  audit: { kind: audit, needs: [attempts, verify], matrix: { task: [fix-add], arm: [control, treatment], rep: 1 } }
  cohort: { kind: analyze, version: 1, needs: [audit], control: control, treatments: [treatment] }
  export: { kind: export, needs: [materialize, attempts, verify, audit, cohort] }
`;

describe('a blob corrupted with the same size and mtime', () => {
  it('fsck finds it; fsck --repair drops it with the records that need it; the next run rebuilds', async () => {
    rig.write('bench.config.yaml', BUNDLE_CONFIG(rig.dir, rig.execLog));
    expect((await rig.cli('run')).code).toBe(0);
    const victim = allBlobs().find((p) => readFileSync(p, 'utf8') === 'the payload of the bundle\n')!;
    corruptQuietly(victim);
    expect((await rig.cli('plan')).stdout).toContain('nothing to run'); // the fast path cannot tell
    const found = await rig.cli('fsck', '--json');
    expect(found.code).toBe(1);
    const report = JSON.parse(found.stdout);
    expect(report.corrupt_blobs).toEqual([victim.split('/').pop()]);
    expect(report.broken_records.map((r: { node: string }) => r.node).sort()).toEqual(['export', 'make']);
    const human = await rig.cli('fsck', '--repair');
    expect(human.code).toBe(1);
    expect(human.stdout).toContain(`dropped corrupt blob ${victim.split('/').pop()}`);
    expect(human.stdout).toContain("repaired: the next 'pairbench run' rebuilds what was dropped");
    rig.clearExecutions();
    expect((await rig.cli('run')).code).toBe(0);
    expect(rig.executions()).toEqual(['make', 'export']);
    expect((await rig.cli('fsck')).code).toBe(0);
  });

  it('a node that reads it finds it, drops it and rebuilds its producer in the same run', async () => {
    rig.write('bench.config.yaml', BUNDLE_CONFIG(rig.dir, rig.execLog));
    expect((await rig.cli('run')).code).toBe(0);
    corruptQuietly(allBlobs().find((p) => readFileSync(p, 'utf8') === 'the payload of the bundle\n')!);
    // A change downstream makes export run again; it reads the corrupt blob.
    rig.write('bench.config.yaml', BUNDLE_CONFIG(rig.dir, rig.execLog).replace('echo report', 'echo report v2'));
    rig.clearExecutions();
    const r = await rig.cli('run');
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(
      /warning: export: stored blob [0-9a-f]{12} is corrupt \(content does not match its digest\); dropped it and the records of (export, )?make; rebuilding make/,
    );
    // export failed while staging its inputs (before its command), then ran once make was rebuilt.
    expect(rig.executions()).toEqual(['make', 'export']);
    expect(r.stderr).not.toMatch(/CorruptBlobError|\n\s+at /);
  });

  it('export finds it: no stack trace, no half-written bundle; after a run, export works', async () => {
    calculatorTask(rig.dir);
    rig.write('bench.config.yaml', LOCAL_COHORT);
    expect((await rig.cli('run')).code).toBe(0);
    const ex = JSON.parse((await rig.cli('explain', 'export', '--json')).stdout);
    const { Cas } = await import('../pipeline/store/cas.js');
    const cas = new Cas(join(rig.dir, '.pairbench', 'cas'), join(rig.dir, '.pairbench', 'tmp'));
    const tree = cas.readTree(ex.record.outputs.bundle.digest);
    const report = tree.entries.find((e) => e.name === 'report.md')!;
    corruptQuietly(cas.pathOf((report as { digest: string }).digest as never));
    const out = join(rig.dir, 'out', 'bundle');
    const r = await rig.cli('export', '--out', out);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /export: stored blob [0-9a-f]{12} is corrupt \(content does not match its digest\): nothing was written; the blob was dropped, with the records of export/,
    );
    expect(r.stderr).not.toMatch(/\n\s+at /);
    expect(existsSync(out)).toBe(false);
    expect(readdirSync(join(rig.dir, 'out'))).toEqual([]);
    expect((await rig.cli('run')).code).toBe(0);
    expect((await rig.cli('export', '--out', out)).code).toBe(0);
    expect((await rig.cli('verify-bundle', out)).code).toBe(0);
  });
});

describe('concurrent runs', () => {
  it('two runs over a large workspace whose reading blocks the main thread execute the attempt once', async () => {
    // 10,000 files: materializing and snapshotting them holds the main thread for longer than
    // the lock's staleness (lowered to 250 ms here); heartbeats run on their own thread. (With
    // the heartbeat on the main thread instead, the second run takes the lock over and the
    // attempt runs twice: measured when these sizes were chosen.)
    const files: Record<string, string> = { 'src/add.mjs': 'export const add = (a, b) => a - b;\n' };
    for (let i = 0; i < 10_000; i++) files[`data/d${i % 100}/f${i}.txt`] = `${i}\n`;
    const [commit] = makeRepo(join(rig.dir, 'repos', 'big'), [files]);
    rig.write(
      'tasks/big/task.yaml',
      `id: big\nrepo: { path: ../../repos/big, commit: ${commit} }\nprompt: fix add\nallowed_paths: ["src/**"]\nverifier: { command: "true" }\n`,
    );
    rig.write(
      'bench.config.yaml',
      `steps:
  materialize: { kind: materialize, matrix: { task: [big] } }
  attempts:
    kind: run
    needs: [materialize]
    matrix: { task: [big], arm: [control], rep: 1 }
    agent: { adapter: command, command: 'echo ran >> ${rig.execLog}; sleep 1' }
    arms: { control: {} }
    sandbox: { backend: local, egress: open }
`,
    );
    const materialized = await rig.cli('run', 'materialize');
    expect(materialized.code, materialized.stderr).toBe(0);
    rig.env = { PAIRBENCH_LOCK_STALE_MS: '250' };
    const [a, b] = [rig.spawn('run'), rig.spawn('run')];
    const [ra, rb] = await Promise.all([a.done, b.done]);
    expect(ra.code, ra.stderr).toBe(0);
    expect(rb.code, rb.stderr).toBe(0);
    expect(rig.executions()).toEqual(['ran']);
  });

  it('concurrent updates of the cohort registry lose no entry', async () => {
    rig.write('bench.config.yaml', 'steps:\n  noop: { kind: command, cmd: "true" }\n');
    const store = join(rig.dir, '.pairbench');
    const script = `
      const { Store } = await import(${JSON.stringify(join(process.cwd(), 'dist/pipeline/store/store.js'))});
      const s = new Store(process.argv[1]); s.init();
      for (let i = 0; i < 15; i++) await s.updateDocument('cohort-x', (d) => ({ entries: [...(d?.entries ?? []), process.argv[2] + '-' + i] }));`;
    const writers = Array.from(
      { length: 6 },
      (_, w) =>
        new Promise<number>((resolve) =>
          spawn(process.execPath, ['--input-type=module', '-e', script, store, `w${w}`], { stdio: 'inherit' }).on('close', (c) => resolve(c ?? 1)),
        ),
    );
    expect(await Promise.all(writers)).toEqual([0, 0, 0, 0, 0, 0]);
    const doc = JSON.parse(readFileSync(join(store, 'registry', 'cohort-x.json'), 'utf8'));
    expect(doc.entries).toHaveLength(90);
  });
});

describe('huge files in a workspace', () => {
  it('a sparse file of 3 GiB is refused as the attempt left it, recorded, and cached like any result', async () => {
    calculatorTask(rig.dir);
    rig.write(
      'bench.config.yaml',
      `steps:
  materialize: { kind: materialize, matrix: { task: [fix-add] } }
  attempts:
    kind: run
    needs: [materialize]
    matrix: { task: [fix-add], arm: [control], rep: 1 }
    agent: { adapter: command, command: 'truncate -s 3G huge.bin; sed -i "s/a - b/a + b/" src/add.mjs' }
    arms: { control: {} }
    limits: { max_file_mb: 512 }
    sandbox: { backend: local, egress: open }
  verify:
    kind: verify
    needs: [materialize, attempts]
    matrix: { task: [fix-add], arm: [control], rep: 1 }
    sandbox: { backend: local, egress: open }
`,
    );
    const r = await rig.cli('run');
    expect(r.code, r.stderr).toBe(0);
    const changes = await rig.outputJson('attempts/fix-add/control/1', 'changes.json');
    expect(changes.refused).toEqual([{ path: 'huge.bin', reason: `file of ${3 * 1024 ** 3} bytes is over the limit of ${512 * 1024 * 1024} bytes` }]);
    expect(Object.keys(changes.written)).toEqual(['src/add.mjs']);
    expect((await rig.outputJson('verify/fix-add/control/1', 'verdict.json')).pass).toBe(true);
    expect((await rig.cli('plan')).stdout).toContain('nothing to run');
  });

  it('four sparse files of 500 MB (each under max_file_mb): the attempt fails on its budget, and the store grows by its receipt', async () => {
    calculatorTask(rig.dir);
    const attempt = (command: string, limits: string) => `steps:
  materialize: { kind: materialize, matrix: { task: [fix-add] } }
  attempts:
    kind: run
    needs: [materialize]
    matrix: { task: [fix-add], arm: [control], rep: 1 }
    agent: { adapter: command, command: '${command}' }
    arms: { control: {} }
    limits: ${limits}
    sandbox: { backend: local, egress: open }
  verify:
    kind: verify
    needs: [materialize, attempts]
    matrix: { task: [fix-add], arm: [control], rep: 1 }
    sandbox: { backend: local, egress: open }
  audit: { kind: audit, needs: [attempts, verify], matrix: { task: [fix-add], arm: [control], rep: 1 } }
`;
    rig.write(
      'bench.config.yaml',
      attempt('for i in 1 2 3 4; do truncate -s 500M big$i.bin; done; sed -i "s/a - b/a + b/" src/add.mjs', '{ max_file_mb: 512 }'),
    );
    const storeBytes = () => Number(execFileSync('du', ['-sb', join(rig.dir, '.pairbench')], { encoding: 'utf8' }).split('\t')[0]);
    const r = await rig.cli('run');
    expect(r.code, r.stderr).toBe(0);
    // The default budget is 1024 MB: the store holds the receipt, not 2 GB of zeros.
    expect(storeBytes()).toBeLessThan(64 * 1024 * 1024);
    const result = await rig.outputJson('attempts/fix-add/control/1', 'result.json');
    expect(result).toMatchObject({ exit_reason: 'output-budget', files_changed: 0 });
    expect(result.over_budget).toMatch(/max_output_mb \(1024 MB\)/);
    expect(await rig.outputJson('audit/fix-add/control/1', 'audit.json')).toMatchObject({ admission: 'accepted', reason_code: 'output-budget', pass: false });
    // Cached like any result: the next run executes nothing.
    expect((await rig.cli('plan')).stdout).toContain('nothing to run');

    // Too many files is the same failure, by count.
    rig.write('bench.config.yaml', attempt('for i in $(seq 1 50); do echo $i > f$i.txt; done', '{ max_output_files: 20 }'));
    expect((await rig.cli('run')).code).toBe(0);
    expect((await rig.outputJson('attempts/fix-add/control/1', 'result.json')).over_budget).toMatch(/max_output_files \(20\)/);
  });

  it('hashing streams: a file over 2 GiB has a digest (sparse, read back as zeros)', () => {
    const path = join(rig.dir, 'sparse.bin');
    const fd = openSync(path, 'w');
    ftruncateSync(fd, 2 ** 31 + 4096);
    closeSync(fd);
    const { digest, size } = sha256File(path);
    expect(size).toBe(2 ** 31 + 4096);
    expect(digest).toBe(execFileSync('sha256sum', [path], { encoding: 'utf8' }).split(' ')[0]);
    rmSync(path);
  });
});

describe('gc across configs sharing one store', () => {
  /** Config A: a cohort whose attempts wait until the test says go; config B: one command node. */
  const liveRunSetup = () => {
    calculatorTask(rig.dir);
    const go = join(rig.dir, 'go');
    const started = join(rig.dir, 'attempt-started');
    const agent = `touch ${started}; while [ ! -e ${go} ]; do sleep 0.05; done; sed -i "s/a - b/a + b/" src/add.mjs`;
    rig.write('a.yaml', LOCAL_COHORT.replace('agent: { adapter: oracle }', `agent: { adapter: command, command: ${JSON.stringify(agent)} }`));
    rig.write('b.yaml', `steps:\n  gen-b:\n    kind: command\n    cmd: head -c 30000 /dev/zero > big\n    outs: [big]\n`);
    return { go, started, a: join(rig.dir, 'a.yaml'), b: join(rig.dir, 'b.yaml') };
  };
  /** Resolves once `path` exists (made by another process): an event, with a generous bound. */
  const appeared = async (path: string) => {
    for (let i = 0; i < 6000 && !existsSync(path); i++) await new Promise((r) => setTimeout(r, 20));
    expect(existsSync(path), path).toBe(true);
  };
  /** Resolves once the child has printed a line matching `pattern` (or has ended). */
  const printed = async (child: ReturnType<Rig['spawn']>, pattern: RegExp) => {
    let text = '';
    await new Promise<void>((resolve) => {
      const look = (d: Buffer) => {
        text += d.toString();
        if (pattern.test(text)) resolve();
      };
      child.stderr!.on('data', look);
      child.stdout!.on('data', look);
      child.on('close', () => resolve());
    });
    expect(text).toMatch(pattern);
  };

  it("gc while another config's first run is under way waits for it: the run exits 0, and its rerun executes nothing", async () => {
    const { go, started, a, b } = liveRunSetup();
    expect((await rig.cli('run', '--config', b)).code).toBe(0);
    const run = rig.spawn('run', '--config', a);
    await appeared(started);
    // --if-idle says who uses the store, and collects nothing.
    const busy = await rig.cli('gc', '--config', b, '--max-size', '1KB', '--keep-newer-than', '0s', '--if-idle');
    expect(busy.code).toBe(1);
    expect(busy.stderr).toMatch(/the store is in use: pairbench run --config \S*a\.yaml/);
    const gc = rig.spawn('gc', '--config', b, '--max-size', '1KB', '--keep-newer-than', '0s', '--json');
    await printed(gc, /waiting for what is using the store to end: pairbench run --config \S*a\.yaml/);
    // The attempts go on and the run ends; only then does gc collect.
    writeFileSync(go, '');
    const ran = await run.done;
    expect(ran.code, ran.stderr + ran.stdout).toBe(0);
    const collected = await gc.done;
    expect(collected.code, collected.stderr).toBe(0);
    // What A's run reached is A's root now: gc kept all of it.
    expect(JSON.parse(collected.stdout).removed_records).toEqual([]);
    const again = await rig.cli('run', '--config', a, '--json');
    expect(again.code, again.stderr).toBe(0);
    expect((JSON.parse(again.stdout).nodes as { status: string }[]).filter((n) => n.status !== 'cached')).toEqual([]);
  });

  it('a run killed before it finished: gc keeps what it wrote (the grace period), and the next run resumes from it', async () => {
    const { go, started, a, b } = liveRunSetup();
    expect((await rig.cli('run', '--config', b)).code).toBe(0);
    const run = rig.spawn('run', '--config', a);
    await appeared(started);
    process.kill(run.pid!, 'SIGKILL');
    await run.done;
    // Its live mark is stale now (the holder is gone): gc does not wait, and keeps what is recent.
    const gc = await rig.cli('gc', '--config', b, '--max-size', '1KB', '--json');
    expect(gc.code, gc.stderr).toBe(0);
    expect(JSON.parse(gc.stdout).removed_records).toEqual([]);
    expect(JSON.parse(gc.stdout).records_recent).toBeGreaterThan(0);
    writeFileSync(go, '');
    const resumed = await rig.cli('run', '--config', a, '--json');
    expect(resumed.code, resumed.stderr).toBe(0);
    expect((JSON.parse(resumed.stdout).nodes as { node: string; status: string }[]).find((n) => n.node === 'materialize/fix-add')?.status).toBe('cached');
  });

  it('gc under one config never removes what another config reached; a size needs its unit', async () => {
    const store = join(rig.dir, 'shared-store');
    const config = (name: string, text: string) => {
      rig.write(`${name}.yaml`, `steps:\n  gen-${name}:\n    kind: command\n    cmd: head -c 30000 /dev/zero | tr '\\\\0' '${text}' > big\n    outs: [big]\n`);
      return join(rig.dir, `${name}.yaml`);
    };
    const { main } = await import('../cli/main.js');
    const cli = async (...args: string[]) => {
      let out = '';
      let errText = '';
      const code = await main(args, {
        stdout: { write: (s: string) => (out += s) },
        stderr: { write: (s: string) => (errText += s) },
        env: { PATH: process.env['PATH'] },
      });
      return { code, out, err: errText };
    };
    const a = config('a', 'a');
    const b = config('b', 'b');
    expect((await cli('run', '--config', a, '--store', store)).code).toBe(0);
    expect((await cli('run', '--config', b, '--store', store)).code).toBe(0);
    const gc = await cli('gc', '--config', a, '--store', store, '--max-size', '1KB', '--json');
    expect(gc.code).toBe(0);
    expect(JSON.parse(gc.out).removed_records).toEqual([]);
    expect((await cli('plan', '--config', b, '--store', store)).out).toContain('nothing to run');
    const bare = await cli('gc', '--config', a, '--store', store, '--max-size', '100');
    expect(bare.code).toBe(2);
    expect(bare.err).toContain('--max-size takes a size with its unit, such as 500MB, 2GiB or 4096B, not "100"');
    // A config whose file is gone no longer holds anything.
    rmSync(b);
    const after = JSON.parse((await cli('gc', '--config', a, '--store', store, '--max-size', '1KB', '--keep-newer-than', '0s', '--json')).out);
    expect(after.removed_roots).toEqual([`config ${b}`]);
    expect(after.removed_records.length).toBe(1);
  });
});

describe('bundle authenticity', () => {
  it('results.json and manifest.json edited consistently pass the manifest check, and fail --root and --key', async () => {
    calculatorTask(rig.dir);
    rig.write('bench.config.yaml', LOCAL_COHORT);
    expect((await rig.cli('run')).code).toBe(0);
    const keys = join(rig.dir, 'keys');
    execFileSync('mkdir', ['-p', keys]);
    execFileSync('openssl', ['genpkey', '-algorithm', 'ed25519', '-out', join(keys, 'key.pem')]);
    execFileSync('openssl', ['pkey', '-in', join(keys, 'key.pem'), '-pubout', '-out', join(keys, 'pub.pem')]);
    const out = join(rig.dir, 'bundle');
    const exported = await rig.cli('export', '--out', out, '--sign', join(keys, 'key.pem'));
    expect(exported.code, exported.stderr).toBe(0);
    const root = /root digest sha256:([0-9a-f]{64}) \(signed, Ed25519 key [0-9a-f]{16}\)/.exec(exported.stdout)?.[1];
    expect(root).toBeDefined();
    expect((await rig.cli('verify-bundle', out, '--root', `sha256:${root}`, '--key', join(keys, 'pub.pem'))).code).toBe(0);

    // The forgery: a better result, and a manifest rewritten to match it.
    const results = JSON.parse(readFileSync(join(out, 'results.json'), 'utf8'));
    results.forged = 'POSITIVE +100 pp';
    const text = JSON.stringify(results);
    writeFileSync(join(out, 'results.json'), text);
    const manifest = JSON.parse(readFileSync(join(out, 'manifest.json'), 'utf8'));
    manifest.files['results.json'] = { sha256: sha256File(join(out, 'results.json')).digest, bytes: Buffer.byteLength(text) };
    const { canonicalJson } = await import('../pipeline/canonical-json.js');
    writeFileSync(join(out, 'manifest.json'), canonicalJson(manifest) + '\n');

    expect((await rig.cli('verify-bundle', out)).code).toBe(0); // the manifest alone cannot tell
    const byRoot = await rig.cli('verify-bundle', out, '--root', `sha256:${root}`);
    expect(byRoot.code).toBe(1);
    expect(byRoot.stdout).toContain('NOT the published bundle: root digest');
    const byKey = await rig.cli('verify-bundle', out, '--key', join(keys, 'pub.pem'));
    expect(byKey.code).toBe(1);
    expect(byKey.stdout).toContain('signature NOT valid: the signature does not match manifest.json: the manifest was changed after it was signed');
    const other = join(keys, 'other.pem');
    execFileSync('openssl', ['genpkey', '-algorithm', 'ed25519', '-out', other]);
    execFileSync('openssl', ['pkey', '-in', other, '-pubout', '-out', `${other}.pub`]);
    expect((await rig.cli('verify-bundle', out, '--key', `${other}.pub`)).stdout).toMatch(
      /signature NOT valid: manifest\.sig\.json was made with key [0-9a-f]{16}, not with this key/,
    );
  });

  it('verify-bundle of a directory that does not exist says so', async () => {
    rig.write('bench.config.yaml', 'steps:\n  noop: { kind: command, cmd: "true" }\n');
    const r = await rig.cli('verify-bundle', join(rig.dir, 'nope'));
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`${join(rig.dir, 'nope')} does not exist`);
  });
});
