/**
 * A dataset at scale without typing its ids: `task: {from: tasks, select: ...}` draws the matrix
 * from the step's own task source, and the freeze, the keys and the plan hold the drawn list.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { selectIds } from '../steps/task-selection.js';
import { FIX_ADD_PATCH, makeRepo, newFilePatch } from './fixtures.js';
import { Rig } from './rig.js';
import { dockerBackend } from '../sandboxes/docker.js';
import { ensureTestImage } from './docker-image.js';

describe('selectIds', () => {
  const ids = Array.from({ length: 40 }, (_, i) => `acme__calc-${i + 1}`);

  it('all is every id, sorted; globs keep the ids any of them matches', () => {
    expect(selectIds([...ids].reverse(), 'all', 'x')).toEqual({ ok: true, value: [...ids].sort() });
    expect(selectIds(ids, ['acme__calc-1?', 'acme__calc-4'], 'x')).toEqual({
      ok: true,
      value: [
        'acme__calc-10',
        'acme__calc-11',
        'acme__calc-12',
        'acme__calc-13',
        'acme__calc-14',
        'acme__calc-15',
        'acme__calc-16',
        'acme__calc-17',
        'acme__calc-18',
        'acme__calc-19',
        'acme__calc-4',
      ],
    });
  });

  it('a sample is the same for the same seed whatever the order of the source, differs by seed, and never repeats an id', () => {
    const a = selectIds(ids, { sample: 10, seed: 1 }, 'x');
    const b = selectIds([...ids].reverse(), { sample: 10, seed: 1 }, 'x');
    const c = selectIds(ids, { sample: 10, seed: 2 }, 'x');
    if (!a.ok || !b.ok || !c.ok) throw new Error('no sample');
    expect(a.value).toEqual(b.value);
    expect(a.value).not.toEqual(c.value);
    expect(new Set(a.value).size).toBe(10);
    expect(a.value).toEqual([...a.value].sort());
    // Among those a glob matches only.
    const m = selectIds(ids, { sample: 3, seed: 1, match: ['acme__calc-2?'] }, 'x');
    expect(m.ok && m.value.every((id) => /^acme__calc-2\d$/.test(id))).toBe(true);
  });

  it('a select.match that matches nothing says so, with ids it could match, never "sample at most 0"', () => {
    const r = selectIds(ids, { sample: 3, seed: 1, match: ['calc-*'] }, 'instances.jsonl');
    expect(r.ok).toBe(false);
    const d = r.ok ? undefined : r.error[0]!;
    expect(d?.message).toBe('select.match (calc-*) matches none of the 40 tasks of instances.jsonl');
    expect(d?.hint).toContain(JSON.stringify([...ids].sort()[0]));
    expect(d?.hint).not.toContain('sample at most 0');
  });

  it('a sample larger than the source says how many there are', () => {
    expect(selectIds(ids, { sample: 41, seed: 1 }, 'instances.jsonl')).toMatchObject({
      ok: false,
      error: [{ message: 'select.sample is 41, but instances.jsonl has 40 tasks', hint: 'sample at most 40, or select: all' }],
    });
  });
});

let rig: Rig;
beforeEach(() => (rig = new Rig()));
afterEach(() => rig.cleanup());

/** 40 SWE-bench records on one repository: each adds one hidden test of add(), which the base breaks. Three environments: version 1.0, 2.0 and 3.0 in turn. */
const version = (n: number) => `${(n % 3) + 1}.0`;

function dataset(): string[] {
  const [base] = makeRepo(join(rig.dir, 'repos', 'calc'), [{ 'src/add.mjs': 'export const add = (a, b) => a - b;\n', 'package.json': '{"type": "module"}\n' }]);
  const ids: string[] = [];
  const lines = Array.from({ length: 40 }, (_, i) => {
    const n = i + 1;
    const id = `acme__calc-${n}`;
    ids.push(id);
    const test = newFilePatch(`test/add${n}.test.mjs`, [
      "import { test } from 'node:test';",
      "import assert from 'node:assert/strict';",
      `test('adds ${n}', async () => assert.equal((await import('../src/add.mjs')).add(${n}, 1), ${n + 1}));`,
    ]);
    return JSON.stringify({
      repo: 'acme/calc',
      instance_id: id,
      base_commit: base,
      patch: FIX_ADD_PATCH,
      test_patch: test,
      problem_statement: `add(${n}, 1) is not ${n + 1}.`,
      version: version(n),
      FAIL_TO_PASS: JSON.stringify([`adds ${n}`]),
      PASS_TO_PASS: '[]',
      environment_setup_commit: base,
    });
  });
  writeFileSync(join(rig.dir, 'instances.jsonl'), lines.join('\n') + '\n');
  return ids;
}

const CONFIG = `steps:
  materialize:
    kind: materialize
    tasks: &tasks { swebench: instances.jsonl, repos: { acme/calc: repos/calc }, test_command: "node --test --test-name-pattern={test} test/" }
    matrix: { task: &sample { from: tasks, select: { sample: 10, seed: 1 } } }
  certify:
    kind: certify
    tasks: *tasks
    needs: [materialize]
    matrix: { task: *sample }
    sandbox: { backend: local, egress: open }
    policy: { repeats: 1 }
  attempts:
    kind: run
    tasks: *tasks
    needs: [materialize, certify]
    matrix: { task: *sample, arm: [only], rep: 1 }
    agent: { adapter: oracle }
    arms: { only: {} }
    sandbox: { backend: local, egress: open }
  verify:
    kind: verify
    tasks: *tasks
    needs: [materialize, attempts]
    matrix: { task: *sample, arm: [only], rep: 1 }
    sandbox: { backend: local, egress: open }
`;

describe('a 40-instance SWE-bench dataset, sampled', () => {
  it('select: {sample: 10, seed: 1} runs 10 instances with no id in the config; each key holds its id; a second run executes nothing', async () => {
    const ids = dataset();
    rig.write('bench.config.yaml', CONFIG);
    expect(CONFIG).not.toMatch(/acme__calc-\d/);
    const drawn = selectIds(ids, { sample: 10, seed: 1 }, 'instances.jsonl');
    if (!drawn.ok) throw new Error('no sample');

    const plan = JSON.parse((await rig.cli('plan', '--json')).stdout) as { nodes: { node: string }[] };
    const of = (step: string) =>
      plan.nodes
        .filter((n) => n.node.startsWith(`${step}/`))
        .map((n) => n.node.split('/')[1]!)
        .sort();
    for (const step of ['materialize', 'certify', 'attempts', 'verify']) expect(of(step), step).toEqual(drawn.value);

    const r = await rig.cli('run', '--json');
    expect(r.code, r.stderr).toBe(0);
    for (const id of drawn.value) expect((await rig.outputJson(`verify/${id}/only/1`, 'verdict.json')).pass, id).toBe(true);
    // Each node's key holds its id, as if the list had been written out.
    const explained = JSON.parse((await rig.cli('explain', `attempts/${drawn.value[0]}/only/1`, '--json')).stdout);
    expect(JSON.stringify(explained)).toContain(`"task":"${drawn.value[0]}"`);
    const again = JSON.parse((await rig.cli('run', '--json')).stdout);
    expect(again.summary).toMatchObject({ executed: 0, failed: 0 });

    // Another seed is another list: a new plan, nothing of the first reused for the new ids.
    rig.write('bench.config.yaml', CONFIG.replace('seed: 1', 'seed: 7'));
    const other = selectIds(ids, { sample: 10, seed: 7 }, 'instances.jsonl');
    const plan7 = JSON.parse((await rig.cli('plan', '--json')).stdout) as { nodes: { node: string; status: string }[] };
    expect([...new Set(plan7.nodes.filter((n) => n.node.startsWith('materialize/')).map((n) => n.node.split('/')[1]))].sort()).toEqual(
      other.ok ? other.value : [],
    );
  });

  it('a selection that draws nothing, or more than there is, is named at its field before anything runs', async () => {
    dataset();
    rig.write('bench.config.yaml', CONFIG.replace('sample: 10', 'sample: 50'));
    const big = await rig.cli('plan');
    expect(big.code).toBe(2);
    expect(big.stderr).toContain('steps.materialize.matrix.task');
    expect(big.stderr).toContain('select.sample is 50, but instances.jsonl has 40 tasks');
    rig.write('bench.config.yaml', CONFIG.replace('{ sample: 10, seed: 1 }', '["nothing-*"]'));
    const none = await rig.cli('plan');
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('the selection draws no task');
  });
});

const dockerUp = (await dockerBackend().available()).ok;

describe.skipIf(!dockerUp && process.env['PAIRBENCH_REQUIRE_SANDBOXES'] !== '1')('SWE-bench environments from a template over a base image', () => {
  const BASE = 'pairbench-swe-base:test';
  const TEMPLATE = ['FROM {{base_image}}', 'RUN echo "{{repo}} {{version}}" > /environment.txt', 'WORKDIR /testbed', ''].join('\n');
  // The verifier also proves it ran in the instance's image: /environment.txt names the repository.
  const tasks = `{ swebench: instances.jsonl, repos: { acme/calc: repos/calc }, test_command: "grep -q '^acme/calc [0-9].0$' /environment.txt && node --test --test-name-pattern={test} test/" }`;
  const config = (baseImage: string) => `steps:
  materialize:
    kind: materialize
    tasks: &tasks ${tasks}
    matrix: { task: &sample { from: tasks, select: { sample: 10, seed: 1 } } }
  images:
    kind: environment
    tasks: *tasks
    needs: [materialize]
    matrix: { task: *sample }
    template: env.Dockerfile
    base_image: ${baseImage}
  certify:
    kind: certify
    tasks: *tasks
    needs: [materialize, images]
    matrix: { task: *sample }
    sandbox: { backend: docker, egress: none }
    policy: { repeats: 1 }
  attempts:
    kind: run
    tasks: *tasks
    needs: [materialize, images, certify]
    matrix: { task: *sample, arm: [only], rep: 1 }
    agent: { adapter: oracle }
    arms: { only: {} }
    sandbox: { backend: docker, egress: none }
  verify:
    kind: verify
    tasks: *tasks
    needs: [materialize, images, attempts]
    matrix: { task: *sample, arm: [only], rep: 1 }
    sandbox: { backend: docker, egress: none }
`;
  const built = new Set<string>();
  afterEach(async () => {
    for (const id of built) await execa('docker', ['rmi', '-f', id], { reject: false });
    await execa('docker', ['rmi', BASE], { reject: false });
  });

  it('each sampled instance runs in the image its environment builds; instances of one environment share one build; a second store finds them built', async () => {
    const ids = dataset();
    await execa('docker', ['tag', await ensureTestImage(), BASE]);
    rig.write('env.Dockerfile', TEMPLATE);
    rig.write('bench.config.yaml', config(BASE));
    const drawn = selectIds(ids, { sample: 10, seed: 1 }, 'instances.jsonl');
    if (!drawn.ok) throw new Error('no sample');

    const doctor = JSON.parse((await rig.cli('doctor', '--json', '--skip-canary')).stdout) as { checks: { name: string; ok: boolean; detail: string }[] };
    expect(doctor.checks.find((c) => c.name === `base image ${BASE} (step images's template)`)).toMatchObject({ ok: true });

    const r = await rig.cli('run', '--json');
    expect(r.code, r.stderr).toBe(0);
    const byVersion = new Map<string, Set<string>>();
    for (const id of drawn.value) {
      const image = await rig.outputJson(`images/${id}`, 'image.json');
      built.add(image.image_id);
      expect(image).toMatchObject({ workdir: '/testbed', network: 'none' });
      const v = version(Number(id.split('-').pop()));
      byVersion.set(v, (byVersion.get(v) ?? new Set()).add(image.image_id));
      expect((await rig.outputJson(`verify/${id}/only/1`, 'verdict.json')).pass, id).toBe(true);
      expect((await rig.outputJson(`certify/${id}`, 'certification.json')).verdict, id).toBe('certified');
    }
    // One image per environment among those drawn, and each is its environment.
    expect(byVersion.size).toBeGreaterThan(1);
    for (const [v, images] of byVersion) {
      expect(images.size, `version ${v}`).toBe(1);
      const shown = await execa('docker', ['run', '--rm', '--network', 'none', [...images][0]!, 'cat', '/environment.txt']);
      expect(shown.stdout.trim()).toBe(`acme/calc ${v}`);
    }
    expect(built.size).toBe(byVersion.size);
    // Built once each: no instance built its environment again (the engine's layer cache would say so).
    for (const id of drawn.value) expect(await rig.outputText(`images/${id}`, 'build.log'), id).not.toContain('Using cache');
    // The tree each instance starts from is its repository at its commit, not the image's.
    expect((await rig.cli('show', `images/${drawn.value[0]}`, 'tree/src/add.mjs')).stdout).toContain('a - b');
    expect(JSON.parse((await rig.cli('run', '--json')).stdout).summary).toMatchObject({ executed: 0, failed: 0 });

    // Another store (a CI machine with a warm engine): the environments are found by what they were built from.
    const again = await rig.cli('run', '--json', '--store', join(rig.dir, 'store-2'));
    expect(again.code, again.stderr).toBe(0);
    for (const id of drawn.value) {
      const shown = (what: string) => rig.cli('show', `images/${id}`, what, '--store', join(rig.dir, 'store-2'));
      expect(built.has((JSON.parse((await shown('image.json')).stdout) as { image_id: string }).image_id)).toBe(true);
      expect((await shown('build.log')).stdout).toMatch(/^reused sha256:[0-9a-f]{64}: built earlier for the same environment/);
    }
  });

  it('a template may name only environment fields (never the answer); a missing base image is named by doctor and by the node', async () => {
    dataset();
    rig.write('env.Dockerfile', 'FROM {{base_image}}\nRUN echo "{{patch}}" > /gold\n');
    rig.write('bench.config.yaml', config('pairbench-swe-missing:none'));
    const bad = await rig.cli('plan');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('env.Dockerfile:2: {{patch}} is not a name a template may use');

    rig.write('env.Dockerfile', TEMPLATE);
    const doctor = await rig.cli('doctor', '--skip-canary');
    expect(doctor.code).toBe(1);
    expect(doctor.stdout + doctor.stderr).toMatch(/base image pairbench-swe-missing:none \(step images's template\).*not in the engine/);
    const r = await rig.cli('run', 'images');
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('base image pairbench-swe-missing:none is not in the engine; build or load it locally');
  });
});
