// A public bundle does not leak the benchmark: the code an attempt wrote prints the hidden
// verifier at verify time (it lands in the verifier log and the evidence), and the agent's own
// diff repeats the reference solution; the public form holds no run of 41 bytes of either, and
// verifies; the private form keeps everything.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { calculatorTask } from './fixtures.js';
import { Rig } from './rig.js';
import { decodedVariants } from '../text/decode.js';

let rig: Rig;
beforeEach(() => {
  rig = new Rig();
  calculatorTask(rig.dir);
});
afterEach(() => rig.cleanup());

const files = (dir: string, rel = ''): string[] =>
  readdirSync(join(dir, rel)).flatMap((n) => {
    const p = rel ? `${rel}/${n}` : n;
    return statSync(join(dir, p)).isDirectory() ? files(dir, p) : [p];
  });

/** Every run of `n` bytes of `secret`, to look for. */
const windows = (secret: string, n: number) => {
  const b = Buffer.from(secret);
  const out = new Set<string>();
  for (let i = 0; i + n <= b.length; i++) out.add(b.subarray(i, i + n).toString('latin1'));
  return out;
};

/** The runs of 41 bytes of any secret that a bundle file holds (as written, or JSON-escaped). */
function leaks(dir: string, secrets: string[]): string[] {
  const found: string[] = [];
  const all = new Set(secrets.flatMap((s) => [...windows(s, 41), ...windows(JSON.stringify(s).slice(1, -1), 41)]));
  for (const f of files(dir)) {
    const b = readFileSync(join(dir, f)).toString('latin1');
    for (let i = 0; i + 41 <= b.length; i++)
      if (all.has(b.slice(i, i + 41))) {
        found.push(`${f}: ${JSON.stringify(b.slice(i, i + 41))}`);
        break;
      }
  }
  return found;
}

/** The cohort whose attempts write `module` as src/add.mjs (the code the verifier then runs), exported public. */
function writeConfig(module: string): void {
  rig.write(
    'bench.config.yaml',
    `steps:
  materialize: { kind: materialize, matrix: { task: [fix-add] } }
  attempts:
    kind: run
    needs: [materialize]
    matrix: { task: [fix-add], arm: [control, treatment], rep: 1 }
    agent: { adapter: command, command: 'echo ${Buffer.from(module).toString('base64')} | base64 -d > src/add.mjs' }
    arms: { control: {}, treatment: { env: { X: '1' } } }
    sandbox: { backend: local, egress: open }
  verify: { kind: verify, needs: [materialize, attempts], matrix: { task: [fix-add], arm: [control, treatment], rep: 1 }, sandbox: { backend: local, egress: open } }
  audit: { kind: audit, needs: [attempts, verify], matrix: { task: [fix-add], arm: [control, treatment], rep: 1 } }
  cohort: { kind: analyze, needs: [audit], control: control, treatments: [treatment], bootstrap: { resamples: 100, seed: 1 } }
  export: { kind: export, needs: [materialize, attempts, verify, audit, cohort], public: true }
`,
  );
}

describe('public and private bundles', () => {
  it('an agent that prints the hidden verifier: the public bundle withholds it, every quote of it and the solution, and verifies', async () => {
    // The attempt: the right fix (the reference solution's own line), plus code that prints the hidden test at import.
    const module = [
      "import { readFileSync } from 'node:fs';",
      "try { console.log(readFileSync(process.env.VERIFIER_DIR + '/test_add.mjs', 'utf8')); } catch {}",
      'export const add = (a, b) => a + b;',
      '',
    ].join('\n');
    writeConfig(module);
    const r = await rig.cli('run');
    expect(r.code, r.stderr).toBe(0);
    const verifier = rig.read('tasks/fix-add/verifier/test_add.mjs');
    // The private bundle: everything, the verifier printed in the log included.
    const priv = join(rig.dir, 'private');
    expect((await rig.cli('export', '--out', priv, '--private')).code).toBe(0);
    expect(readFileSync(join(priv, 'nodes', 'verify', 'fix-add', 'control', '1', 'verifier.log'), 'utf8')).toContain(verifier.trim());
    expect(readFileSync(join(priv, 'tasks', 'fix-add', 'verifier', 'test_add.mjs'), 'utf8')).toBe(verifier);
    expect(readFileSync(join(priv, 'report.md'), 'utf8')).toContain('Bundle: private');
    expect(leaks(priv, [verifier]).length).toBeGreaterThan(0);

    // The public bundle (the export step is marked public: the default).
    const pub = join(rig.dir, 'public');
    const e = await rig.cli('export', '--out', pub);
    expect(e.code, e.stderr).toBe(0);
    expect(e.stdout).toContain('(public)');
    expect((await rig.cli('verify-bundle', pub)).code).toBe(0);
    expect(files(pub).filter((f) => f.startsWith('tasks/fix-add/verifier/'))).toEqual([]);
    const solution = rig.read('tasks/fix-add/solution.patch');
    expect(
      leaks(pub, [
        verifier,
        solution
          .split('\n')
          .filter((l) => l.startsWith('+') && !l.startsWith('+++'))
          .map((l) => l.slice(1))
          .join('\n'),
      ]),
    ).toEqual([]);
    const withheld = JSON.parse(readFileSync(join(pub, 'withheld.json'), 'utf8'));
    expect(withheld.withheld_files).toContainEqual(
      expect.objectContaining({ path: 'tasks/fix-add/verifier/test_add.mjs', bytes: Buffer.byteLength(verifier) }),
    );
    expect(withheld.scrubbed_files.map((f: { path: string }) => f.path)).toEqual(
      expect.arrayContaining(['nodes/verify/fix-add/control/1/verifier.log', 'tasks/fix-add/task.json']),
    );
    // The verdicts stay: the results and the report are the private ones, but for the withheld quotes.
    expect(JSON.parse(readFileSync(join(pub, 'results.json'), 'utf8')).attempts).toHaveLength(2);
    const report = readFileSync(join(pub, 'report.md'), 'utf8');
    expect(report).toContain('Bundle: public: the hidden verifier, the reference solution and every quote of them');
    expect(report).not.toContain('Bundle: private');
    expect(readFileSync(join(pub, 'report.html'), 'utf8')).toContain('Bundle: public');
    // The task spec keeps its shape; the patches are digests.
    const spec = JSON.parse(readFileSync(join(pub, 'tasks', 'fix-add', 'task.json'), 'utf8'));
    expect(spec.solution.patch).toMatch(/^\[withheld: sha256 [0-9a-f]{64}\]$/);
    expect(spec.prompt).toBe(JSON.parse(readFileSync(join(priv, 'tasks', 'fix-add', 'task.json'), 'utf8')).prompt);
  });

  it('an agent that prints the verifier in base64 and in 39-byte pieces: no file of the public bundle decodes to it; those files are withheld with their digest and why', async () => {
    const module = [
      "import { readFileSync } from 'node:fs';",
      'try {',
      "  const v = readFileSync(process.env.VERIFIER_DIR + '/test_add.mjs', 'utf8');",
      "  console.log(Buffer.from(v).toString('base64'));",
      '  for (let i = 0; i < v.length; i += 39) console.log(v.slice(i, i + 39));',
      '} catch {}',
      'export const add = (a, b) => a + b;',
      '',
    ].join('\n');
    writeConfig(module);
    expect((await rig.cli('run')).code).toBe(0);
    const verifier = rig.read('tasks/fix-add/verifier/test_add.mjs');
    const priv = join(rig.dir, 'private');
    expect((await rig.cli('export', '--out', priv, '--private')).code).toBe(0);
    const log = readFileSync(join(priv, 'nodes', 'verify', 'fix-add', 'control', '1', 'verifier.log'), 'utf8');
    expect(log).toContain(Buffer.from(verifier).toString('base64'));
    const pub = join(rig.dir, 'public');
    expect((await rig.cli('export', '--out', pub)).code).toBe(0);
    expect((await rig.cli('verify-bundle', pub)).code).toBe(0);
    // Every file as certify's decoder reads it, and with its line breaks taken out: no run of 41 bytes of the verifier.
    const all = new Set([...windows(verifier, 41), ...windows(verifier.replace(/\n/g, ''), 41)]);
    const decodedLeaks = files(pub).filter((f) =>
      decodedVariants(readFileSync(join(pub, f), 'utf8')).some((v) =>
        [v.text, v.text.replace(/\r?\n/g, '')].some((t) => {
          const b = Buffer.from(t).toString('latin1');
          for (let i = 0; i + 41 <= b.length; i++) if (all.has(b.slice(i, i + 41))) return true;
          return false;
        }),
      ),
    );
    expect(decodedLeaks).toEqual([]);
    const withheld = JSON.parse(readFileSync(join(pub, 'withheld.json'), 'utf8')).withheld_files as { path: string; reason?: string }[];
    for (const arm of ['control', 'treatment'])
      expect(withheld).toContainEqual(
        expect.objectContaining({
          path: `nodes/verify/fix-add/${arm}/1/verifier.log`,
          reason: expect.stringMatching(/^a copy of the hidden verifier or the solution, /),
        }),
      );
    // The verdicts are still published.
    expect(JSON.parse(readFileSync(join(pub, 'results.json'), 'utf8')).attempts).toHaveLength(2);
  });
});
