import { appendFileSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { calculatorTask } from './fixtures.js';
import { Rig } from './rig.js';

// The whole pipeline on the local backend: materialize, certify, run, verify,
// audit, analyze, export; then the bundle written out and re-checked.
let rig: Rig;
beforeEach(() => {
  rig = new Rig();
  calculatorTask(rig.dir);
  rig.write('fixtures/CLAUDE.md', 'Always use + in add(): the project adds numbers.\n');
});
afterEach(() => rig.cleanup());

function config(): string {
  const once = join(rig.dir, 'infra-once');
  // The first attempt to run calls its model, whose upstream is down: an infrastructure fault.
  const agent = `if [ -f CLAUDE.md ]; then sed -i "s/a - b/a + b/" src/add.mjs; fi; if mkdir ${once} 2>/dev/null; then node -e "fetch(process.env.PAIRBENCH_MODEL_URL + '/v1/messages', {method: 'POST', body: '{}'}).then(r => process.exit(r.status >= 500 ? 3 : 0), () => process.exit(4))"; exit $?; fi`;
  return `concurrency: { global: 1 }
steps:
  materialize: { kind: materialize, matrix: { task: [fix-add] } }
  certify:
    kind: certify
    needs: [materialize]
    matrix: { task: [fix-add] }
    sandbox: { backend: local, egress: open }
    policy: { repeats: 1 }
  attempts:
    kind: run
    needs: [materialize, certify]
    matrix: { task: [fix-add], arm: [control, treatment], rep: 3 }
    agent: { adapter: command, command: '${agent.replace(/'/g, "''")}' }
    arms:
      control: {}
      treatment: { files: { CLAUDE.md: fixtures/CLAUDE.md } }
    sandbox: { backend: local, egress: open }
    model: { upstream: "http://127.0.0.1:9" }
  verify:
    kind: verify
    needs: [materialize, attempts]
    matrix: { task: [fix-add], arm: [control, treatment], rep: 3 }
    sandbox: { backend: local, egress: open }
  audit:
    kind: audit
    needs: [attempts, verify]
    matrix: { task: [fix-add], arm: [control, treatment], rep: 3 }
  analyze:
    kind: analyze
    needs: [audit]
    control: control
    treatments: [treatment]
    bootstrap: { resamples: 1000, seed: 7 }
    # One infrastructure fault in three attempts must not refuse this small fixture.
    validity_floor: 0.5
    infra_error_threshold: 0.5
  export:
    kind: export
    needs: [materialize, certify, attempts, verify, audit, analyze]
    cohort: calculator
    fixture_note: results on fixtures prove the machinery, not any product
`;
}

describe('audit, analyze, export', () => {
  it('excludes an infrastructure fault (kept in the bundle, not in the estimate), and the bundle verifies', async () => {
    rig.write('bench.config.yaml', config());
    const r = await rig.cli('run', '--json');
    expect(r.code, r.stderr).toBe(0);
    const nodes = JSON.parse(r.stdout).nodes as { node: string; status: string; key?: string }[];
    const key = (id: string) => nodes.find((n) => n.node === id)!.key!;

    const attempts = rig.recordOutputJson(key('analyze'), 'attempts.json') as { node: string; admission: string; reason_code: string; pass: boolean | null }[];
    expect(attempts).toHaveLength(6);
    const excluded = attempts.filter((a) => a.admission === 'excluded');
    expect(excluded).toHaveLength(1);
    expect(excluded[0]).toMatchObject({ reason_code: 'infra-provider', pass: null });
    const analysis = rig.recordOutputJson(key('analyze'), 'analysis.json');
    expect(analysis.schema_version).toBe(1);
    // Not in the estimate: its pair is dropped from the paired statistics, and the arm's infra-error rate says so.
    expect(analysis.comparisons[0].pairs).toMatchObject({ valid: 2, excluded: 1 });
    // Mechanism claims, kept apart: the command agent never calls a model, so nothing was delivered through
    // the gateway, yet the outcome changed in both valid pairs.
    expect(analysis.comparisons[0].mechanism).toEqual({ pairs: 2, delivered: 0, used: 0, changed: 2, delivered_and_changed: 0 });
    const arm = excluded[0]!.node.split('/')[2]!;
    expect(analysis.arms.find((a: { arm: string }) => a.arm === arm)).toMatchObject({ n_excluded: 1, n_infra_errors: 1 });

    // The bundle of this run: the excluded attempt is in it.
    const out = join(rig.dir, 'bundle');
    const exp = await rig.cli('export', '--out', out, '--progress', 'plain');
    expect(exp.code, exp.stderr).toBe(0);
    // Asked for, progress is shown whatever the size: a line per tenth of the bytes, ending at 100%.
    expect(exp.stderr.trim().split('\n').at(-1)).toMatch(/^writing export: 100% \(\d+\.\d of \d+\.\d MB\)$/);
    const ok = await rig.cli('verify-bundle', out);
    expect(ok.code, ok.stdout).toBe(0);
    expect(ok.stderr).toBe(''); // auto: no bar for a small bundle, nor off a terminal
    // The excluded attempt is in the bundle.
    expect(readFileSync(join(out, 'attempts.csv'), 'utf8')).toContain('infra-provider');
    expect(readFileSync(join(out, 'report.md'), 'utf8')).toContain('fixtures prove the machinery');
    // What failed is named in the report, in the provider's (here: the connection's) own words.
    expect(readFileSync(join(out, 'report.md'), 'utf8')).toMatch(
      /^ {2}- 1 x `model provider: unreachable or broke off: connect ECONNREFUSED 127\.0\.0\.1:9`$/m,
    );
    expect(readFileSync(join(out, 'report.html'), 'utf8')).toContain(
      '1 x <code>model provider: unreachable or broke off: connect ECONNREFUSED 127.0.0.1:9</code>',
    );
    // No host path or key leaks into the bundle.
    const gatewayLog = readFileSync(join(out, `nodes/${excluded[0]!.node.replace(/^audit/, 'attempts')}/gateway.jsonl`), 'utf8');
    expect(gatewayLog).not.toContain(rig.dir);

    // One changed byte, one deleted file, one added file: each is named.
    const report = join(out, 'report.md');
    writeFileSync(report, readFileSync(report, 'utf8').replace(/.$/s, 'X'));
    rmSync(join(out, 'attempts.csv'));
    appendFileSync(join(out, 'extra.txt'), 'not in the manifest\n');
    const bad = await rig.cli('verify-bundle', out, '--json');
    expect(bad.code).toBe(1);
    expect(JSON.parse(bad.stdout)).toMatchObject({ ok: false, differs: ['report.md'], missing: ['attempts.csv'], extra: ['extra.txt'] });

    // The infrastructure fault was not cached: the next run retries it (and now it succeeds).
    const again = await rig.cli('run', '--json');
    const retried = JSON.parse(again.stdout).nodes as { node: string; status: string; key?: string }[];
    expect(retried.filter((n) => n.status === 'executed').map((n) => n.node)).toContain(excluded[0]!.node.replace(/^audit/, 'attempts'));
    const after = rig.recordOutputJson(retried.find((n) => n.node === 'analyze')!.key!, 'attempts.json') as { admission: string }[];
    expect(after.filter((a) => a.admission === 'excluded')).toHaveLength(0);
  });
});
