import { existsSync, mkdirSync, readdirSync, readFileSync, watch, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeRepo } from './fixtures.js';
import { Rig } from './rig.js';
import { cliOutputProblems } from './cli-schema.js';

// `pairbench generate` writes tasks that the real pipeline then certifies.
let rig: Rig;
beforeEach(() => (rig = new Rig()));
afterEach(() => rig.cleanup());

function library(): string {
  const [commit] = makeRepo(join(rig.dir, 'repos', 'lib'), [
    {
      'package.json': '{ "type": "module" }\n',
      'src/math.mjs':
        '/** Sum of two numbers. */\nexport function add(a, b) {\n  return a + b;\n}\n\n/** Product of two numbers. */\nexport function mul(a, b) {\n  let r = 0;\n  for (let i = 0; i < b; i++) r = add(r, a);\n  return r;\n}\n',
      'test/math.test.mjs':
        "import { test } from 'node:test';\nimport assert from 'node:assert/strict';\nimport { add, mul } from '../src/math.mjs';\ntest('add adds', () => assert.equal(add(2, 3), 5));\ntest('mul multiplies', () => assert.equal(mul(4, 3), 12));\n",
    },
  ]);
  return commit!;
}

describe('pairbench generate', () => {
  it('writes stub_function tasks that certify through the pipeline; the same seed writes the same files', async () => {
    const commit = library();
    const gen = (out: string, ...more: string[]) =>
      rig.cli(
        'generate',
        'stub_function',
        '--repo',
        join(rig.dir, 'repos', 'lib'),
        '--commit',
        commit,
        '--out',
        join(rig.dir, out),
        '--count',
        '2',
        '--seed',
        '7',
        ...more,
      );
    const r = await gen('tasks');
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('2 tasks written');
    const ids = readdirSync(join(rig.dir, 'tasks')).sort();
    expect(ids).toHaveLength(2);
    expect((await gen('tasks-again')).code).toBe(0);
    // --json: the tasks written, as published (schemas/cli-output.schema.json).
    const asJson = await gen('tasks-json', '--json');
    expect(asJson.code, asJson.stderr).toBe(0);
    expect(JSON.parse(asJson.stdout).tasks).toHaveLength(2);
    expect(cliOutputProblems('#/definitions/generate', JSON.parse(asJson.stdout))).toBe('');
    for (const id of ids) {
      for (const f of ['task.yaml', 'setup.patch', 'solution.patch']) {
        expect(readFileSync(join(rig.dir, 'tasks-again', id, f), 'utf8')).toBe(readFileSync(join(rig.dir, 'tasks', id, f), 'utf8'));
      }
    }
    rig.write(
      'bench.config.yaml',
      `steps:
  materialize: { kind: materialize, matrix: { task: [${ids.join(', ')}] } }
  certify:
    kind: certify
    needs: [materialize]
    matrix: { task: [${ids.join(', ')}] }
    sandbox: { backend: local, egress: open }
`,
    );
    const run = await rig.cli('run');
    expect(run.code, run.stderr).toBe(0);
    for (const id of ids) {
      const c = await rig.outputJson(`certify/${id}`, 'certification.json');
      expect(c.verdict, JSON.stringify(c.reasons)).toBe('certified');
      expect(c.checks).toMatchObject({ nop: [false, false, false], oracle: [true, true, true] });
    }
  });

  it('--count is an upper bound: writes what it found, says so and what was dropped; --commit takes a revision', async () => {
    const commit = library();
    const r = await rig.cli(
      'generate',
      'stub_function',
      '--repo',
      join(rig.dir, 'repos', 'lib'),
      '--commit',
      'HEAD',
      '--out',
      join(rig.dir, 'tasks'),
      '--count',
      '5',
    );
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`HEAD is commit ${commit} (the tasks are pinned to it)`);
    expect(r.stdout).toMatch(/^2 tasks written \(up to 5 asked for\), \d+ candidates dropped$/m);
    expect(r.stdout).toMatch(/^next: add the task ids to your config's task matrix/m);
    for (const dir of readdirSync(join(rig.dir, 'tasks')))
      expect(readFileSync(join(rig.dir, 'tasks', dir, 'task.yaml'), 'utf8')).toContain(`commit: ${commit}`);
    const usage = await rig.cli('generate', 'stub_function', '--repo', join(rig.dir, 'repos', 'lib'), '--commit', 'no-such-branch', '--out', 'x');
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('--commit no-such-branch: ');
    expect(usage.stderr).toContain('has no such revision');
  });
});

describe('pairbench generate, interrupted', () => {
  // Two retries: under CI's load the held test process sometimes went on unsignalled (it wrote
  // "finished"), or ended without its handler running (neither file); not reproduced in 13 loaded
  // runs (issue 61) nor in 2 more beside a clean-clone run (issue 63), where one run failed both of
  // its two tries. Cause not found: open in issue 63's closing note. A generate that never stops
  // its test processes fails all three tries.
  it.each(['SIGINT', 'SIGTERM'] as const)(
    '%s mid-run stops the test processes it started and leaves no scratch directory behind',
    { retry: 2 },
    async (signal) => {
      // The suite's one test waits for a file the test writes only once generate has ended: generate
      // is mid-run when signalled. Its process says how it ended: stopped by a signal, or finished.
      const hold = join(rig.dir, 'never');
      const stopped = join(rig.dir, 'stopped');
      const finished = join(rig.dir, 'finished');
      const [commit] = makeRepo(join(rig.dir, 'repos', 'held'), [
        {
          'package.json': '{ "type": "module" }\n',
          'src/math.mjs': 'export function add(a, b) {\n  return a + b;\n}\n',
          'test/math.test.mjs': [
            "import { test } from 'node:test';",
            "import { existsSync, writeFileSync } from 'node:fs';",
            "import { add } from '../src/math.mjs';",
            `process.on('SIGTERM', () => { writeFileSync(${JSON.stringify(stopped)}, ''); process.exit(1); });`,
            "test('add', async () => {",
            `  writeFileSync(${JSON.stringify(join(rig.dir, 'started'))}, String(process.pid));`,
            `  while (!existsSync(${JSON.stringify(hold)})) await new Promise((r) => setTimeout(r, 50));`,
            `  writeFileSync(${JSON.stringify(finished)}, '');`,
            "  if (add(2, 3) !== 5) throw new Error('no');",
            '});',
            '',
          ].join('\n'),
        },
      ]);
      const tmp = join(rig.dir, 'tmp');
      mkdirSync(tmp);
      rig.env = { TMPDIR: tmp };
      // The file run by node itself (no runner process between): nothing but generate can stop it.
      const child = rig.spawn(
        'generate',
        'stub_function',
        '--repo',
        join(rig.dir, 'repos', 'held'),
        '--commit',
        commit!,
        '--out',
        join(rig.dir, 'out'),
        '--test-command',
        'node --test-reporter=tap test/math.test.mjs',
      );
      // Signalled once the suite's test runs (its handler set).
      await fileAppears(rig.dir, (names) => names.includes('started'));
      expect(readdirSync(tmp).filter((d) => d.startsWith('pairbench-gen-'))).not.toEqual([]);
      child.kill(signal);
      await child.done;
      expect(child.signalCode ?? child.exitCode).toBe(signal);
      expect(readdirSync(tmp).filter((d) => d.startsWith('pairbench-gen-'))).toEqual([]);
      // Released now: a test process generate left running finishes; one it stopped has said so (one
      // killed before its handler ran says nothing: then its end is what is awaited, and the check fails).
      writeFileSync(hold, '');
      const pid = Number(readFileSync(join(rig.dir, 'started'), 'utf8'));
      await Promise.race([fileAppears(rig.dir, (names) => names.includes('stopped') || names.includes('finished')), processEnds(pid)]);
      expect({ stopped: existsSync(stopped), finished: existsSync(finished) }).toEqual({ stopped: true, finished: false });
    },
  );
});

/** Resolves once process `pid` is gone (asked every 100 ms: a process's end raises no event here), with a moment for its last write. */
function processEnds(pid: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setInterval(() => {
      try {
        process.kill(pid, 0);
      } catch {
        clearInterval(timer);
        setTimeout(resolve, 200);
      }
    }, 100);
  });
}

/** Resolves once a name in `dir` satisfies `seen`, woken by the directory's events. */
function fileAppears(dir: string, seen: (names: string[]) => boolean): Promise<void> {
  return new Promise((resolve) => {
    const check = () => {
      if (!seen(readdirSync(dir))) return false;
      watcher.close();
      resolve();
      return true;
    };
    const watcher = watch(dir, check);
    check();
  });
}
