import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { calculatorTask, git } from './fixtures.js';
import { Rig } from './rig.js';

// The AGENTS.md study's arms: NONE (redacted, as every control), LLM (a generated file),
// HUMAN (the repository's own instruction files, restored byte for byte in that arm only).
let rig: Rig;
let repo: string;
let commit: string;
beforeEach(() => {
  rig = new Rig();
  ({ repo, commit } = calculatorTask(rig.dir));
  rig.write('fixtures/llm.md', 'Generated: this is a calculator.\n');
});
afterEach(() => rig.cleanup());

const OWN = ['CLAUDE.md', '.claude/settings.json', 'docs/AGENTS.md'];
// Stands in for an agent: it records what its workspace holds of the repository's own files.
const LOOK = `for f in ${OWN.join(' ')} README.md; do if [ -f "$f" ]; then sha256sum "$f"; else echo "absent $f"; fi; done > src/seen.txt`;

function config(extra = ''): string {
  const m = 'matrix: { task: [fix-add], arm: [none, llm, human], rep: 1 }';
  return `steps:
  materialize:
    kind: materialize
    matrix: { task: [fix-add] }${extra}
  certify:
    kind: certify
    needs: [materialize]
    matrix: { task: [fix-add] }
    sandbox: { backend: local, egress: open }
    policy: { repeats: 1 }
  attempts:
    kind: run
    needs: [materialize, certify]
    ${m}
    agent: { adapter: command, command: '${LOOK}' }
    arms:
      none: {}
      llm: { files: { CLAUDE.md: fixtures/llm.md } }
      human: { restore: redacted }
    sandbox: { backend: local, egress: open }
`;
}

const sha = (bytes: string) => createHash('sha256').update(bytes).digest('hex');
const seen = async (arm: string) => (await rig.cli('show', `attempts/fix-add/${arm}/1`, 'changed/src/seen.txt')).stdout;

describe("the repository's own context files as an arm (restore: redacted)", () => {
  it("the HUMAN arm holds the commit's own files byte for byte; NONE and LLM do not; the receipts say so", async () => {
    rig.write('bench.config.yaml', config());
    const r = await rig.cli('run', '--json');
    expect(r.code, r.stderr + r.stdout).toBe(0);
    const own = Object.fromEntries(OWN.map((p) => [p, sha(git(repo, 'show', `${commit}:${p}`) + '\n')]));

    const human = await seen('human');
    for (const p of OWN) expect(human).toContain(`${own[p]}  ${p}`);
    expect(await seen('none')).toBe(
      `${OWN.map((p) => `absent ${p}`).join('\n')}\nabsent README.md\n`.replace('absent README.md', `${sha('# calc\n')}  README.md`),
    );
    const llm = await seen('llm');
    expect(llm).toContain(`${sha('Generated: this is a calculator.\n')}  CLAUDE.md`);
    expect(llm).toContain('absent docs/AGENTS.md');

    // The materialize receipt lists what it removed (for every arm); the HUMAN attempt's receipt lists what it got back.
    const receipt = JSON.parse(await rig.outputText('materialize/fix-add', 'redaction.json'));
    expect(Object.fromEntries(receipt.removed.map((x: { path: string; sha256: string }) => [x.path, x.sha256]))).toEqual(own);
    const got = JSON.parse(await rig.outputText('attempts/fix-add/human/1', 'result.json'));
    expect(got.restored).toEqual(
      OWN.slice()
        .sort()
        .map((p) => ({ path: p, sha256: own[p] })),
    );
    expect(JSON.parse(await rig.outputText('attempts/fix-add/none/1', 'result.json')).restored).toBeUndefined();
    // What the arm received is not what it changed.
    expect(Object.keys(JSON.parse(await rig.outputText('attempts/fix-add/human/1', 'changes.json')).written)).toEqual(['src/seen.txt']);
  });

  it('documentation removal applies to every arm, is receipted, and is never restored', async () => {
    rig.write('bench.config.yaml', config('\n    remove_documentation: true'));
    const r = await rig.cli('run', '--json');
    expect(r.code, r.stderr + r.stdout).toBe(0);
    for (const arm of ['none', 'llm', 'human']) expect(await seen(arm)).toContain('absent README.md');
    expect(await seen('human')).toContain('  docs/AGENTS.md');
    const receipt = JSON.parse(await rig.outputText('materialize/fix-add', 'redaction.json'));
    expect(receipt.removed.map((x: { path: string; class: string }) => [x.path, x.class])).toEqual([
      ['.claude/settings.json', 'instructions'],
      ['CLAUDE.md', 'instructions'],
      ['README.md', 'documentation'],
      ['docs/AGENTS.md', 'instructions'],
    ]);
    expect(receipt.documentation_policy).toContain('**/README*');

    // The LLM arm's generator sees the repository as the arms do: no instruction files, and no documentation in this variant.
    rig.write('generator.json', JSON.stringify({ turns: [], completions: [{ text: 'generated\n' }] }));
    rig.write(
      'bench.config.yaml',
      config('\n    remove_documentation: true') +
        `  init:\n    kind: context\n    repo: repos/calc\n    commit: ${commit}\n    prompt: Write a CLAUDE.md.\n    remove_documentation: true\n    model: { name: m, fake_script: generator.json }\n`,
    );
    expect((await rig.cli('run', 'init')).code).toBe(0);
    const request = await rig.outputText('init', 'request.md');
    expect(request).toContain('## src/add.mjs');
    for (const hidden of ['README.md', 'CLAUDE.md', 'docs/AGENTS.md', '.claude/settings.json']) expect(request).not.toContain(`## ${hidden}`);
  });

  it('the report names each arm by its own name and role: HUMAN is the restored files, NONE the control', async () => {
    const m = 'matrix: { task: [fix-add], arm: [none, llm, human], rep: 1 }';
    rig.write(
      'bench.config.yaml',
      config() +
        `  verify: { kind: verify, needs: [materialize, attempts], ${m}, sandbox: { backend: local, egress: open } }
  audit: { kind: audit, needs: [attempts, verify], ${m} }
  study: { kind: analyze, needs: [audit], control: none, treatments: [llm, human], bootstrap: { resamples: 200, seed: 1 } }
  export: { kind: export, needs: [materialize, certify, attempts, verify, audit, study] }
`,
    );
    expect((await rig.cli('run')).code).toBe(0);
    const out = join(rig.dir, 'bundle');
    expect((await rig.cli('export', '--out', out)).code).toBe(0);
    const md = readFileSync(join(out, 'report.md'), 'utf8');
    expect(md).toMatch(/\| none \| nothing added \(control\) \|/);
    expect(md).toMatch(/\| human \| the repository's own instruction files, restored \(materialize redacts them from every other arm\) \|/);
    expect(md).toMatch(/\| llm \| CLAUDE\.md from fixtures\/llm\.md \|/);
    expect(md).not.toMatch(/\| human \| none/);
  });

  it('an arm that restores needs a materialize step', async () => {
    rig.write('bench.config.yaml', config().replace('needs: [materialize, certify]', 'needs: [certify]'));
    const r = await rig.cli('plan');
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('arm "human" restores the repository\'s own instruction files, which only a materialize step keeps');
  });
});
