import { existsSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { generateKeyPairSync, sign as cryptoSign } from 'node:crypto';
import { canonicalJson } from '../pipeline/canonical-json.js';
import { sha256 } from '../pipeline/digest.js';
import { recordKey } from '../pipeline/store/record-key.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { calculatorTask } from './fixtures.js';
import { Rig } from './rig.js';

let rig: Rig;
beforeEach(() => {
  rig = new Rig();
  calculatorTask(rig.dir);
  rig.write('fixtures/CLAUDE.md', 'Always use + in add().\n');
});
afterEach(() => rig.cleanup());

interface Options {
  version?: number;
  /** Lines added to the analyze step. */
  analysis?: string;
  /** The audit step's policy. */
  policy?: string;
  /** The treatment arm. */
  treatment?: string;
  /** Steps added before the run step (and what it needs besides materialize). */
  before?: { steps: string; needs: string[] };
  agent?: string;
  rep?: number;
}

const FIX = 'if [ -f CLAUDE.md ]; then sed -i "s/a - b/a + b/" src/add.mjs; fi';
/** Fixes the task half the time, in either arm. */
const COIN = '[ "$(od -An -N1 -tu1 /dev/urandom)" -lt 128 ] && sed -i "s/a - b/a + b/" src/add.mjs; true';

function config(o: Options = {}): string {
  const rep = o.rep ?? 2;
  return `steps:
  materialize: { kind: materialize, matrix: { task: [fix-add] } }
${o.before?.steps ?? ''}  attempts:
    kind: run
    needs: [materialize${o.before ? `, ${o.before.needs.join(', ')}` : ''}]
    matrix: { task: [fix-add], arm: [control, treatment], rep: ${rep} }
    agent: { adapter: command, command: '${(o.agent ?? FIX).replace(/'/g, "''")}' }
    arms:
      control: {}
      treatment: ${o.treatment ?? '{ files: { CLAUDE.md: fixtures/CLAUDE.md } }'}
    sandbox: { backend: local, egress: open }
  verify:
    kind: verify
    needs: [materialize, attempts]
    matrix: { task: [fix-add], arm: [control, treatment], rep: ${rep} }
    sandbox: { backend: local, egress: open }
  audit:
    kind: audit
    needs: [attempts, verify]
    matrix: { task: [fix-add], arm: [control, treatment], rep: ${rep} }
${o.policy ? `    policy: ${o.policy}\n` : ''}  context-file:
    kind: analyze
    version: ${o.version ?? 1}
    needs: [audit]
    control: control
    treatments: [treatment]
    bootstrap: { resamples: 200, seed: 1 }
${o.analysis ?? ''}  export:
    kind: export
    needs: [materialize, attempts, verify, audit, context-file]
`;
}

async function run(...args: string[]) {
  return rig.cli('run', ...args);
}

function expectRefused(r: { code: number; stderr: string }, ...fields: RegExp[]) {
  expect(r.code, r.stderr).toBe(2);
  expect(r.stderr).toContain('cohort context-file version 1 is frozen');
  for (const f of fields) expect(r.stderr).toMatch(f);
  expect(r.stderr).toContain('bump `version` in steps.context-file');
}

describe('preregistration: the freeze is derived from the graph', () => {
  it('refuses a changed verifier and a changed analysis after a run, naming step and field; a new version runs and reuses what is valid', async () => {
    rig.write('bench.config.yaml', config());
    const first = await run();
    expect(first.code, first.stderr).toBe(0);
    expect(first.stderr).toContain('cohort context-file version 1 registered');
    expect(first.stderr).toContain('its first registration in this store');

    rig.write('tasks/fix-add/verifier/test_add.mjs', "const { add } = await import(process.cwd() + '/src/add.mjs');\nif (add(2, 2) !== 4) process.exit(1);\n");
    expectRefused(await run(), /verify: input tasks\/fix-add\/verifier\/: [0-9a-f]{12} -> [0-9a-f]{12}/);

    rig.write(
      'tasks/fix-add/verifier/test_add.mjs',
      "const { add } = await import(process.cwd() + '/src/add.mjs');\nif (add(2, 3) !== 5) { process.exit(1); }\nconsole.log('ok');\n",
    );
    const weights = '    weights: { input: 1, cache_write: 1, cache_read: 1, output: 1 }\n';
    rig.write('bench.config.yaml', config({ analysis: weights }));
    expectRefused(await run(), /context-file: spec\.weights\.cache_read: 0\.1 -> 1/);

    rig.clearExecutions();
    rig.write('bench.config.yaml', config({ version: 2, analysis: weights }));
    const second = await run();
    expect(second.code, second.stderr).toBe(0);
    expect(second.stderr).toContain('cohort context-file version 2 registered');
    expect(second.stderr).toContain('cohort context-file version 2: reused 4 attempt(s) first produced by version 1');

    const history = await rig.cli('history');
    expect(history.stdout).toMatch(/version 1 {2}freeze [0-9a-f]{12} {2}frozen \S+ {2}bound \S+ by attempt attempts\/fix-add\/\w+\/\d {2}attempts executed 4/);
    expect(history.stdout).toMatch(/version 2 {2}freeze [0-9a-f]{12} {2}frozen \S+ {2}bound \S+ by observation \S+ {2}attempts executed 0/);
    expect(history.stdout).toContain('4 reused from version 1');
    const json = JSON.parse((await rig.cli('history', '--json')).stdout);
    expect(json.cohorts[0].versions.map((v: { version: number }) => v.version)).toEqual([1, 2]);
  });

  it('1. the admission policy switched after the verdict is refused, naming the audit step and the field', async () => {
    rig.write('bench.config.yaml', config({ policy: '{ out_of_bounds: score-zero }' }));
    expect((await run()).code).toBe(0);
    rig.write('bench.config.yaml', config({ policy: '{ out_of_bounds: flag }' }));
    expectRefused(await run(), /audit: policy\.out_of_bounds: "score-zero" -> "flag"/);
  });

  it('2. a treatment made by a command step is frozen by what makes it: a changed pass_env value is refused', async () => {
    const before = {
      steps: `  ctx:
    kind: command
    cmd: 'printf "%s\\n" "$CTX_TEXT" > CLAUDE.md'
    outs: [CLAUDE.md]
    pass_env: [CTX_TEXT]
`,
      needs: ['ctx'],
    };
    rig.write('bench.config.yaml', config({ before, treatment: '{ files: { CLAUDE.md: { from: ctx, out: CLAUDE.md } } }' }));
    rig.env = { CTX_TEXT: 'plain' };
    const first = await run();
    expect(first.code, first.stderr).toBe(0);
    rig.env = { CTX_TEXT: 'WIN' };
    expectRefused(await run(), /ctx: pass_env\.CTX_TEXT: [0-9a-f]{12} -> [0-9a-f]{12}/);
  });

  it('3. a version that only reuses attempts is bound at its first observation: its analysis is frozen from then on', async () => {
    rig.write('bench.config.yaml', config());
    expect((await run()).code).toBe(0);
    rig.write('bench.config.yaml', config({ version: 2 }));
    const reused = await run();
    expect(reused.code, reused.stderr).toBe(0);
    expect(reused.stderr).toContain('version 2: reused 4 attempt(s) first produced by version 1');
    rig.write('bench.config.yaml', config({ version: 2, analysis: '    stopping: { rule: confidence-sequence }\n' }));
    const refused = await run();
    expect(refused.code, refused.stderr).toBe(2);
    expect(refused.stderr).toContain('cohort context-file version 2 is frozen');
    expect(refused.stderr).toMatch(/bound \S+ by observation context-file/);
    expect(refused.stderr).toMatch(/context-file: spec\.stopping/);
  });

  it('the export is downstream of the verdict: a changed export field re-exports and refuses nothing', async () => {
    rig.write('bench.config.yaml', config());
    expect((await run()).code).toBe(0);
    // The export's own fields are no part of the verdict: changing them re-exports, refuses nothing.
    rig.write(
      'bench.config.yaml',
      config().replace(
        '    needs: [materialize, attempts, verify, audit, context-file]',
        '    needs: [materialize, attempts, verify, audit, context-file]\n    fixture_note: new words',
      ),
    );
    const again = await run();
    expect(again.code, again.stderr).toBe(0);
  });
});

describe('preregistration: a tamper-evident record', () => {
  const registryDir = () => join(rig.dir, '.pairbench', 'registry');
  const logFile = () => join(registryDir(), 'context-file.chain.jsonl');

  it('4. a registry moved away is found from the store itself, refused with the count and what to do; a reset can be acknowledged, on record', async () => {
    rig.write('bench.config.yaml', config());
    expect((await run()).code).toBe(0);
    renameSync(registryDir(), join(rig.dir, 'registry.moved'));
    rig.write('bench.config.yaml', config({ analysis: '    confidence: 0.9\n' }));
    const refused = await run();
    expect(refused.code, refused.stderr).toBe(2);
    // 4 attempts, the analysis and the export were made under version 1.
    expect(refused.stderr).toMatch(
      /cohort context-file: 6 stored record\(s\) of its attempts and observations were made under version 1 \(registry entry [0-9a-f]{12}\)/,
    );
    expect(refused.stderr).toContain('restore it from a copy');
    expect(refused.stderr).toContain('pairbench freeze context-file --acknowledge-reset');
    // Nothing ran, and nothing was registered.
    expect(existsSync(logFile())).toBe(false);

    // Acknowledged: on record, and version 1 cannot be registered again with another freeze.
    const ack = await rig.cli('freeze', '--acknowledge-reset');
    expect(ack.code).toBe(2);
    expect(ack.stderr).toContain('registry reset acknowledged (6 record(s) of version 1)');
    expect(ack.stderr).toContain('bump `version` in steps.context-file to 2 or more');
    rig.write('bench.config.yaml', config({ version: 2, analysis: '    confidence: 0.9\n' }));
    const bumped = await run();
    expect(bumped.code, bumped.stderr).toBe(0);
    expect((await rig.cli('history')).stdout).toMatch(/registry reset acknowledged at \S+: 6 record\(s\) of version 1 \(entry [0-9a-f]{12}\) predate this log/);
    const out = join(rig.dir, 'bundle');
    expect((await rig.cli('export', '--out', out)).code).toBe(0);
    expect(readFileSync(join(out, 'report.md'), 'utf8')).toMatch(/registry reset acknowledged \S+: 6 record\(s\) of version 1/);
    expect(JSON.parse(readFileSync(join(out, 'config', 'freeze.json'), 'utf8')).registry_resets).toHaveLength(1);
  });

  it('a registry cut short (its binding lost) still refuses a change: the records name the registration', async () => {
    rig.write('bench.config.yaml', config());
    expect((await run()).code).toBe(0);
    const lines = readFileSync(logFile(), 'utf8').split('\n');
    expect(lines.filter(Boolean).map((l) => JSON.parse(l).type)).toEqual(expect.arrayContaining(['register', 'bind', 'draw', 'observe']));
    writeFileSync(logFile(), lines[0] + '\n'); // only the registration is left
    rig.write('bench.config.yaml', config({ analysis: '    confidence: 0.9\n' }));
    const refused = await run();
    expect(refused.code, refused.stderr).toBe(2);
    expect(refused.stderr).toContain('cohort context-file version 1 is frozen (bound by the records in this store)');
    expect(refused.stderr).toContain('context-file: spec.confidence: 0.95 -> 0.9');
  });

  it('an edited registry entry breaks the chain: refused, naming the line', async () => {
    rig.write('bench.config.yaml', config());
    expect((await run()).code).toBe(0);
    const text = readFileSync(logFile(), 'utf8');
    writeFileSync(logFile(), text.replace('"within-noise"', '"positive"').replace('"insufficient-n"', '"positive"'));
    expect(readFileSync(logFile(), 'utf8')).not.toBe(text);
    const r = await run();
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/its registry log is broken: \S+context-file\.chain\.jsonl:\d+ does not match its own hash: it was edited/);
    const h = await rig.cli('history');
    expect(h.code).toBe(1);
    expect(h.stderr).toContain('does not match its own hash');
  });

  /** The attack of issue 61: entries dropped, the chain re-hashed as anyone can (seq, prev, hash), signed by `sign` or not at all. */
  function rewrite(keep: (e: { type: string }) => boolean, sign?: (hash: string) => unknown): void {
    const entries = readFileSync(logFile(), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown> & { type: string });
    let prev: string | null = null;
    const out = entries.filter(keep).map((e, i) => {
      const base = { seq: i + 1, at: e['at'], prev, type: e.type, data: e['data'] };
      const hash = sha256(canonicalJson(base as never));
      prev = hash;
      return JSON.stringify({ ...base, hash, ...(sign ? { sig: sign(hash) } : {}) });
    });
    writeFileSync(logFile(), out.join('\n') + '\n');
  }

  it('a record rewritten without the key (entries dropped, the chain re-hashed) is found by run and fsck; re-signed with another key, fsck names the key', async () => {
    rig.write('bench.config.yaml', config());
    expect((await run()).code).toBe(0);
    const original = readFileSync(logFile(), 'utf8');
    for (const [sign, problem] of [
      [undefined, 'is not signed: it was written without the record key'],
      [(hash: string) => ({ ...(JSON.parse(original.split('\n')[0]!) as { sig: object }).sig, hash }), 'signature does not hold'],
    ] as const) {
      rewrite((e) => e.type !== 'observe', sign as never);
      const r = await run();
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toContain(problem);
      const f = await rig.cli('fsck');
      expect(f.code).toBe(1);
      expect(f.stdout).toMatch(new RegExp(`registry log context-file is broken: .*${problem}`));
      writeFileSync(logFile(), original);
    }
    expect((await rig.cli('fsck')).code).toBe(0);
    // Re-signed whole with a key of the attacker's own: the chain holds, and fsck names the stranger.
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    const raw = publicKey.export({ type: 'spki', format: 'der' }).subarray(-32);
    rewrite(
      (e) => e.type !== 'observe',
      (hash) => ({ key: sha256(raw).slice(0, 16), pub: raw.toString('base64'), sig: cryptoSign(null, Buffer.from(hash), privateKey).toString('base64') }),
    );
    const f = await rig.cli('fsck');
    expect(f.stdout).toContain(`is signed by key(s) ${sha256(raw).slice(0, 16)}, not this machine's record key`);
  });

  it('a record key that cannot be read stops the run, saying which file and how to make one (the real CLI, whose environment names the key)', async () => {
    rig.write('bench.config.yaml', config());
    rig.env = { PAIRBENCH_RECORD_KEY: join(rig.dir, 'no-such-key.pem') };
    const r = await rig.spawn('run').done;
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`the record key ${join(rig.dir, 'no-such-key.pem')} cannot be read`);
    expect(r.stderr).toContain('openssl genpkey -algorithm ed25519');
    expect(r.stderr).not.toContain('a fault in pairbench itself');
  });

  it('a committed lock anchors the record: a store cut short, rewritten and re-signed, or fresh, is refused; the report says whether a lock anchors it', async () => {
    rig.write('bench.config.yaml', config());
    expect((await run()).code).toBe(0);
    const unanchored = join(rig.dir, 'b0');
    expect((await rig.cli('export', '--out', unanchored)).code).toBe(0);
    expect(readFileSync(join(unanchored, 'report.md'), 'utf8')).toContain('not anchored outside the store (no committed lock');
    // Its verifier ran on the host (local backend): not pinned, and said so.
    expect(readFileSync(join(unanchored, 'report.md'), 'utf8')).toContain(
      '⚠ **Verifier environment not pinned: the verifier ran on the host (local), reading whatever the host holds**',
    );
    expect(readFileSync(join(unanchored, 'report.html'), 'utf8')).toContain('<span class="item unpinned"><span class="k">verifier</span>');
    const frozen = await rig.cli('freeze');
    expect(frozen.code, frozen.stderr).toBe(0);
    expect(frozen.stdout).toContain('bench.config.yaml.lock: commit it with the config');
    const lock = JSON.parse(rig.read('bench.config.yaml.lock'));
    expect(lock.cohorts['context-file']).toMatchObject({ version: 1, entries: expect.any(Number), head: expect.stringMatching(/^[0-9a-f]{64}$/) });
    expect((await run()).code).toBe(0); // the record holds the anchored prefix, and goes on from it
    const anchored = join(rig.dir, 'b1');
    expect((await rig.cli('export', '--out', anchored)).code).toBe(0);
    expect(readFileSync(join(anchored, 'report.md'), 'utf8')).toContain('anchored by bench.config.yaml.lock (version 1');
    // A fresh store would draw version 1 again.
    const fresh = await rig.cli('run', '--store', join(rig.dir, 'other-store'));
    expect(fresh.code).toBe(2);
    expect(fresh.stderr).toContain('this store holds no record of it: a run here would draw version 1 afresh');
    // A pull request's job: a fresh store beside the base's, read-only: the base's record is the anchored one.
    const beside = await rig.cli('run', '--store', join(rig.dir, 'pr-store'), '--read-store', join(rig.dir, '.pairbench'));
    expect(beside.code, beside.stderr).toBe(0);
    // Cut short below the anchor.
    const original = readFileSync(logFile(), 'utf8');
    writeFileSync(logFile(), original.split('\n').slice(0, 2).join('\n') + '\n');
    const cut = await run();
    expect(cut.code).toBe(2);
    expect(cut.stderr).toContain('it was cut short or rewritten');
    // Re-signed whole by another key, the chain intact: the lock names the keys it trusts.
    writeFileSync(logFile(), original);
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    const raw = publicKey.export({ type: 'spki', format: 'der' }).subarray(-32);
    rewrite(
      () => true,
      (hash) => ({ key: sha256(raw).slice(0, 16), pub: raw.toString('base64'), sig: cryptoSign(null, Buffer.from(hash), privateKey).toString('base64') }),
    );
    const resigned = await run();
    expect(resigned.code).toBe(2);
    expect(resigned.stderr).toContain('written with a key the lock does not name');
    // Re-anchored on purpose: freeze --relock writes the lock from this store's record, and the change is in the lock's text.
    const before = rig.read('bench.config.yaml.lock');
    expect((await rig.cli('freeze')).code).toBe(2); // without --relock, the disagreement stands
    const relocked = await rig.cli('freeze', '--relock');
    expect(relocked.code, relocked.stderr).toBe(0);
    expect(rig.read('bench.config.yaml.lock')).not.toBe(before);
    // It names the record's signer and this machine's key, which signs what is appended from here on: two runs go on.
    expect(JSON.parse(rig.read('bench.config.yaml.lock')).cohorts['context-file'].signers).toEqual([sha256(raw).slice(0, 16), recordKey().id]);
    expect((await run()).code).toBe(0);
    expect((await run()).code).toBe(0);
  });

  it('deleting records re-rolls nothing: each draw is restored from the record; with its blobs gone it is refused; --redraw draws again, on record as a re-draw', async () => {
    // A coin-flip agent: any re-draw would change the outcomes.
    rig.write('bench.config.yaml', config({ agent: COIN }));
    expect((await run()).code).toBe(0);
    const analysis = async () => JSON.parse((await rig.cli('explain', 'context-file', '--json')).stdout).record.outputs_digest as string;
    const history = async () => (await rig.cli('history')).stdout;
    const first = await analysis();
    // The records are lost (not the registry, nor the blobs): every draw comes back as it was.
    for (const d of ['ac', 'nodes']) renameSync(join(rig.dir, '.pairbench', d), join(rig.dir, `${d}.lost`));
    rig.clearExecutions();
    const again = await run();
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toContain("is restored from the cohort's record, not drawn again");
    expect(rig.executions().filter((n) => n.startsWith('attempts/') || n.startsWith('verify/'))).toEqual([]);
    expect(await analysis()).toBe(first);
    const observed = async () => (await history()).split('\n').filter((l) => l.includes('observed at') && l.includes('by context-file:'));
    expect(await observed()).toHaveLength(1);
    // The blobs go too: a draw that cannot be restored is refused, saying what to do.
    for (const d of ['ac', 'nodes', 'cas']) rmSync(join(rig.dir, '.pairbench', d), { recursive: true, force: true });
    const refused = await run();
    expect(refused.code, refused.stderr).toBe(1);
    expect(refused.stderr).toMatch(/attempts\/fix-add\/(control|treatment)\/1 was drawn before under this key/);
    expect(refused.stderr).toContain('pairbench run --redraw');
    // On record: drawn again, each a re-draw in history, the bundle and the report's status bar.
    const redrawn = await run('--redraw');
    expect(redrawn.code, redrawn.stderr).toBe(0);
    // The run's own bundle was built again with its re-draws (a second pass): nothing is left to build.
    expect((await rig.cli('plan')).stdout).toMatch(/^nothing to run: all \d+ nodes are cached$/m);
    const h = await history();
    expect(h.match(/re-draw: draw 2 of attempts\//g)).toHaveLength(4);
    expect((await observed()).at(-1)).toContain('4 re-drawn');
    expect(h).not.toContain('an upstream produced different bytes');
    const out = join(rig.dir, 'bundle');
    expect((await rig.cli('export', '--out', out)).code).toBe(0);
    const freeze = JSON.parse(readFileSync(join(out, 'config', 'freeze.json'), 'utf8'));
    expect(freeze.redraws.filter((d: { n: number; attempt?: boolean }) => d.n === 2 && d.attempt)).toHaveLength(4);
    expect(readFileSync(join(out, 'report.md'), 'utf8')).toMatch(/⚠ \*\*Record: version 1, first registration in this store · \d+ re-draw\(s\) · not anchored/);
    expect(readFileSync(join(out, 'report.html'), 'utf8')).toMatch(/<span class="k">record<\/span><span class="v">⚠ version 1[^<]* · \d+ re-draw\(s\)/);
  });

  it('a second cohort over attempts another cohort analysed first says so, in its bundle and status bar', async () => {
    rig.write('bench.config.yaml', config({ agent: COIN }));
    expect((await run()).code).toBe(0);
    // Chosen after the look: a second analysis of the same stored attempts, exported.
    rig.write(
      'bench.config.yaml',
      config({ agent: COIN }) +
        `  picked:
    kind: analyze
    needs: [audit]
    control: control
    treatments: [treatment]
    bootstrap: { resamples: 200, seed: 1 }
  export-picked:
    kind: export
    cohort: picked
    needs: [materialize, attempts, verify, audit, picked]
`,
    );
    const r = await run();
    expect(r.code, r.stderr).toBe(0);
    const out = join(rig.dir, 'picked-bundle');
    expect((await rig.cli('export', 'export-picked', '--out', out)).code).toBe(0);
    const freeze = JSON.parse(readFileSync(join(out, 'config', 'freeze.json'), 'utf8'));
    expect(freeze.prior_analyses).toEqual([expect.objectContaining({ cohort: 'context-file', version: 1, shared: 4, of: 4 })]);
    const md = readFileSync(join(out, 'report.md'), 'utf8');
    expect(md).toContain('4 of these 4 attempts were analysed before, by cohort context-file version 1');
    expect(md).toContain('analysed first by 1 other cohort version(s)');
    // The first cohort's own bundle is unchanged by the later look.
    const own = join(rig.dir, 'own-bundle');
    expect((await rig.cli('export', 'export', '--out', own)).code).toBe(0);
    expect(JSON.parse(readFileSync(join(own, 'config', 'freeze.json'), 'utf8')).prior_analyses).toEqual([]);
  });

  it('a look at an outcome outside a run, before the analysis, is on record: history, the bundle and its status bar', async () => {
    rig.write('bench.config.yaml', config({ agent: COIN }));
    expect((await rig.cli('freeze')).code).toBe(0); // registered; nothing observed yet
    expect((await run('verify')).code).toBe(0); // the attempts and their verdicts, no analysis
    const peek = await rig.cli('show', 'verify/fix-add/treatment/1', 'verdict.json');
    expect(peek.code, peek.stderr).toBe(0);
    expect((await run()).code).toBe(0);
    // A look after the analysis is no peek before it.
    expect((await rig.cli('show', 'verify/fix-add/control/1', 'verdict.json')).code).toBe(0);
    const h = (await rig.cli('history')).stdout;
    expect(h.match(/peeked at .*: show verify\/fix-add\/treatment\/1 \(before the version's first analysis\)/g)).toHaveLength(1);
    expect(h).not.toContain('show verify/fix-add/control/1');
    const out = join(rig.dir, 'peeked');
    expect((await rig.cli('export', '--out', out)).code).toBe(0);
    expect(JSON.parse(readFileSync(join(out, 'config', 'freeze.json'), 'utf8')).peeks).toEqual([
      expect.objectContaining({ node: 'verify/fix-add/treatment/1', by: 'show' }),
    ]);
    const md = readFileSync(join(out, 'report.md'), 'utf8');
    expect(md).toContain('1 peek(s) at outcomes before the analysis');
    expect(md).toContain('outcome looked at outside a run: show verify/fix-add/treatment/1 at');
  });

  it('a second store starting the cohort from scratch is allowed, and its bundle says it is the first registration there', async () => {
    rig.write('bench.config.yaml', config());
    expect((await run()).code).toBe(0);
    const other = join(rig.dir, 'other-store');
    const r = await rig.cli('run', '--store', other);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain('its first registration in this store');
    const out = join(rig.dir, 'b2');
    expect((await rig.cli('export', '--store', other, '--out', out)).code).toBe(0);
    expect(readFileSync(join(out, 'report.md'), 'utf8')).toContain('Version 1 is the first registration of this cohort in the store that built this bundle');
    expect(JSON.parse(readFileSync(join(out, 'config', 'freeze.json'), 'utf8')).first_registration_in_store).toBe(true);
  });
});

describe('preregistration: what is published tells the whole history', () => {
  it('a v2 bundle names v1, what v1 observed, and which attempts v2 reused; its time stamps say what they are', async () => {
    rig.write('bench.config.yaml', config());
    expect((await run()).code).toBe(0);
    rig.write('bench.config.yaml', config({ version: 2, analysis: '    confidence: 0.9\n' }));
    expect((await run()).code).toBe(0);
    const out = join(rig.dir, 'v2');
    expect((await rig.cli('export', '--out', out)).code).toBe(0);
    expect((await rig.cli('verify-bundle', out)).code).toBe(0);
    const freeze = JSON.parse(readFileSync(join(out, 'config', 'freeze.json'), 'utf8'));
    expect(freeze.version).toBe(2);
    expect(freeze.first_registration_in_store).toBe(false);
    expect(freeze.earlier_versions).toHaveLength(1);
    expect(freeze.earlier_versions[0]).toMatchObject({ version: 1, attempts_executed: 4 });
    expect(freeze.earlier_versions[0].observations[0].verdicts['treatment vs control']).toBeTruthy();
    expect(freeze.earlier_versions[0].changes_to_next).toEqual(['context-file: spec.confidence: 0.95 -> 0.9']);
    expect(Object.values(freeze.reused_attempts)).toEqual(['1', '1', '1', '1']);
    const md = readFileSync(join(out, 'report.md'), 'utf8');
    expect(md).toContain('## Preregistration history');
    expect(md).toMatch(/\*\*version 1\*\* \(freeze `[0-9a-f]{12}`, frozen \S+, bound \S+\)/);
    expect(md).toMatch(/observed \S+ by `context-file`: 4 attempts; treatment vs control: \S+/);
    expect(md).toContain('version 2 reused 4 attempt(s) version 1 executed');
    expect(md).toMatch(/Exported \S+ · attempts from \S+ to \S+/);
    expect(md).not.toContain('Generated');
    const html = readFileSync(join(out, 'report.html'), 'utf8');
    expect(html).toContain('<h2>Preregistration history</h2>');
    // The exported-at stamp is when the bundle was built, after every attempt ended.
    const exported = /Exported (\S+) · attempts from \S+ to (\S+)/.exec(md)!;
    expect(exported[1]! > exported[2]!).toBe(true);
    // Arms by name and role: the control is the one the analysis names.
    expect(md).toMatch(/\| control \| nothing added \(control\) \|/);
    expect(md).toMatch(/\| treatment \| CLAUDE\.md from fixtures\/CLAUDE\.md \|/);
  });

  it('the verifier raises the zero-(c) red flag without a judge', async () => {
    rig.write('bench.config.yaml', config());
    const r = await run();
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/warning: context-file: the verifier found no task \(c\) hurt \(treatment vs control: 1 helped, 0 no difference, 0 hurt\)/);
  });

  it('freeze records the digest before any observation; a change before it re-freezes', async () => {
    rig.write('bench.config.yaml', config());
    const f = await rig.cli('freeze');
    expect(f.code).toBe(0);
    expect(f.stdout).toMatch(/cohort context-file version 1: freeze [0-9a-f]{64}/);
    rig.write('bench.config.yaml', config({ rep: 3 }));
    const again = await rig.cli('freeze');
    expect(again.stdout).toContain('had no observation yet: re-frozen (4 field(s) changed)');
    expect(readdirSync(join(rig.dir, '.pairbench', 'registry'))).toEqual(['context-file.chain.jsonl']);
  });
});
