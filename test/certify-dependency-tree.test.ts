/**
 * certify on a checkout with its dependencies installed: ten thousand third-party files full of
 * benchmark words, the verifier's test name and the package's own name. certify accepts it, reads
 * the tree on threads (every object verified), and Ctrl-C during the read stops it at once.
 */
import { chmodSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CorruptBlobError } from '../pipeline/store/cas.js';
import { Store } from '../pipeline/store/store.js';
import { VENDORED_PACKAGE_DIR } from '../steps/certify/vendored.js';
import { TREE } from '../steps/materialize.js';
import type { Sha256 } from '../pipeline/digest.js';
import { installDependencies } from '../bench/dependency-tree.js';
import { calculatorTask, git } from './fixtures.js';
import { Rig } from './rig.js';

let rig: Rig;
const dirs: Rig[] = [];
afterAll(() => dirs.forEach((r) => r.cleanup()));

function project(): Rig {
  const r = new Rig();
  dirs.push(r);
  const { repo } = calculatorTask(r.dir);
  installDependencies(repo, { packages: 1000, packageName: 'calc', testName: 'add_works' });
  git(repo, 'add', '-A');
  git(repo, 'commit', '-qm', 'npm install');
  const commit = git(repo, 'rev-parse', 'HEAD');
  r.write('tasks/fix-add/task.yaml', r.read('tasks/fix-add/task.yaml').replace(/commit: [0-9a-f]{40}/, `commit: ${commit}`));
  r.write(
    'bench.config.yaml',
    `steps:
  materialize: { kind: materialize, matrix: { task: [fix-add] } }
  certify:
    kind: certify
    needs: [materialize]
    matrix: { task: [fix-add] }
    sandbox: { backend: local, egress: open }
`,
  );
  return r;
}

describe('certify on a tree with 10,000 installed files', () => {
  beforeAll(() => {
    rig = project();
  }, 120_000);

  it('SIGINT while it reads the tree: exit 130 within 2 s, no scratch left, and the rerun certifies it', async () => {
    // Materialized first: the interrupt then lands in certify.
    expect((await rig.cli('run', 'materialize/fix-add')).code).toBe(0);
    const child = rig.spawn('run', '--progress', 'plain');
    let seen = '';
    await new Promise<void>((resolve) =>
      child.stderr!.on('data', (d) => {
        seen += d;
        if (seen.includes('certify/fix-add')) resolve();
      }),
    );
    const sent = performance.now();
    child.kill('SIGINT');
    const r = await child.done;
    const took = performance.now() - sent;
    expect(r.code, r.stderr).toBe(130);
    expect(took).toBeLessThan(2000);
    expect(readdirSync(join(rig.dir, '.pairbench', 'tmp'))).toEqual([]);

    const again = await rig.cli('run');
    expect(again.code, again.stderr).toBe(0);
    const c = await rig.outputJson('certify/fix-add', 'certification.json');
    // Benchmark words, "canary", the test name and the package's name in 10,000 installed files: no finding.
    expect(c).toMatchObject({ verdict: 'certified', reasons: [], findings: [] });
  }, 120_000);

  it('every object of the tree is verified as the threads read it: a changed or missing blob is named', async () => {
    const store = new Store(join(rig.dir, '.pairbench'));
    const ex = JSON.parse((await rig.cli('explain', 'materialize/fix-add', '--json')).stdout) as {
      record: { outputs: Record<string, { digest: Sha256; size: number }> };
    };
    const tree = ex.record.outputs[TREE.name]!;
    const o = { sniff: 8192, maxSize: 1 << 20, filterBelow: VENDORED_PACKAGE_DIR, keepIf: [[Buffer.from('add_works_3')]] };
    const files = await store.cas.readTreeFiles(tree.digest, o);
    expect(files.filter((f) => f.filtered)).toHaveLength(10_000);
    // Only the files holding the anchor keep their bytes.
    expect(files.filter((f) => f.filtered && f.bytes).every((f) => f.path.endsWith('lib/part-3.js'))).toBe(true);

    // Aborted while the threads read: rejects with the abort's reason, and the next read is whole.
    const ac = new AbortController();
    const reading = store.cas.readTreeFiles(tree.digest, { ...o, signal: ac.signal });
    ac.abort(new Error('interrupted'));
    await expect(reading).rejects.toThrow('interrupted');
    expect(await store.cas.readTreeFiles(tree.digest, o)).toEqual(files);

    const victim = files.find((f) => f.path === 'node_modules/dep-777/lib/part-2.js')!;
    const path = store.cas.pathOf(victim.digest);
    chmodSync(path, 0o644);
    const original = readFileSync(path);
    // A read stopped by a corrupt object leaves no thread whose late answer the next read takes for its own.
    for (let i = 0; i < 5; i++) {
      writeFileSync(path, 'exports.part2 = 1;\n');
      await expect(store.cas.readTreeFiles(tree.digest, o)).rejects.toThrow(CorruptBlobError);
      writeFileSync(path, original);
      expect(await store.cas.readTreeFiles(tree.digest, o)).toEqual(files);
    }
    writeFileSync(path, 'exports.part2 = 1;\n');
    try {
      await expect(store.cas.readTreeFiles(tree.digest, o)).rejects.toThrow(new CorruptBlobError(victim.digest, 'content does not match its digest'));
    } finally {
      store.cas.remove(victim.digest);
    }
    await expect(store.cas.readTreeFiles(tree.digest, o)).rejects.toThrow(new CorruptBlobError(victim.digest, 'missing'));
  }, 60_000);
});
