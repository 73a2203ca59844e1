import { existsSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { claudeBinary } from '../agents/claude-code.js';
import { codexBinary } from '../agents/codex.js';
import { calculatorTask } from './fixtures.js';
import { Rig } from './rig.js';

// An agent x model matrix: one run step per cell, each with its own comparison; a
// comparison across cells (another agent and model) is refused, with the reason, unless the
// analysis says the agent is a factor (by: agent).
let rig: Rig;
beforeEach(() => {
  rig = new Rig();
  calculatorTask(rig.dir);
  rig.write('fixtures/CLAUDE.md', 'Rule 5e1f: add() sums.\n');
  rig.write('fixtures/AGENTS.md', 'Rule 5e1f: add() sums.\n');
  rig.write(
    'fixtures/claude.json',
    JSON.stringify({
      turns: [{ tool_calls: [{ name: 'Bash', input: { command: "sed -i 's/a - b/a + b/' src/add.mjs", description: 'fix' } }] }, { text: 'done' }],
    }),
  );
  rig.write(
    'fixtures/codex.json',
    JSON.stringify({ turns: [{ tool_calls: [{ name: 'exec_command', input: { cmd: "sed -i 's/a - b/a + b/' src/add.mjs" } }] }, { text: 'done' }] }),
  );
});
afterEach(() => rig.cleanup());

function cell(name: string, adapter: string, model: string, file: string, script: string): string {
  const m = `{ task: [fix-add], arm: [control, treatment], rep: 1 }`;
  return `  run-${name}:
    kind: run
    needs: [materialize]
    matrix: ${m}
    agent: { adapter: ${adapter}, model: ${model} }
    arms: { control: {}, treatment: { files: { ${file}: fixtures/${file} } } }
    sandbox: { backend: local, egress: open }
    model: { fake_script: fixtures/${script} }
  verify-${name}:
    kind: verify
    needs: [materialize, run-${name}]
    matrix: ${m}
    sandbox: { backend: local, egress: open }
  audit-${name}:
    kind: audit
    needs: [run-${name}, verify-${name}]
    matrix: ${m}
  cell-${name}:
    kind: analyze
    needs: [audit-${name}]
    control: control
    treatments: [treatment]
    bootstrap: { resamples: 200, seed: 1 }
`;
}

describe.skipIf(!existsSync(claudeBinary()) || !existsSync(codexBinary()))('agent x model matrix', () => {
  it('compares within each cell; a delta across models is refused; with by: agent, within each agent and the interaction', async () => {
    rig.write(
      'bench.config.yaml',
      `steps:
  materialize: { kind: materialize, matrix: { task: [fix-add] } }
${cell('claude', 'claude-code', 'claude-fake-1', 'CLAUDE.md', 'claude.json')}${cell('codex', 'codex', 'gpt-fake', 'AGENTS.md', 'codex.json')}  across:
    kind: analyze
    needs: [audit-claude, audit-codex]
    control: control
    treatments: [treatment]
    bootstrap: { resamples: 200, seed: 1 }
  by-agent:
    kind: analyze
    needs: [audit-claude, audit-codex]
    control: control
    treatments: [treatment]
    by: agent
    bootstrap: { resamples: 200, seed: 1 }
`,
    );
    const r = await rig.cli('run', '--json');
    expect(r.code, r.stderr).toBe(0);
    const nodes = JSON.parse(r.stdout).nodes as { node: string; key: string }[];
    const analysis = (id: string) => rig.recordOutputJson(nodes.find((n) => n.node === id)!.key, 'analysis.json');
    for (const c of ['cell-claude', 'cell-codex']) expect(analysis(c).comparisons[0].verdict).not.toBe('refused');
    const across = analysis('across').comparisons[0];
    expect(across.verdict).toBe('refused');
    expect(across.delta).toBeNull();
    expect(JSON.stringify(across.problems)).toMatch(/model|adapter|mixed/);
    // The same attempts with the agent as a factor: compared within each agent, and the interaction across them, refusing nothing.
    const byAgent = analysis('by-agent');
    expect(byAgent.comparisons.map((c: { treatment: string; control: string }) => [c.treatment, c.control])).toEqual([
      ['treatment @ claude-code', 'control @ claude-code'],
      ['treatment @ codex', 'control @ codex'],
    ]);
    for (const c of byAgent.comparisons) {
      expect(c.verdict).not.toBe('refused');
      expect(c.problems.filter((p: { reason: string }) => p.reason === 'config-mismatch' || p.reason === 'mixed-config')).toEqual([]);
    }
    expect(byAgent.crossed).toMatchObject({
      by: 'agent',
      levels: ['claude-code', 'codex'],
      designs: [{ treatment: 'treatment', level: 'codex', base_level: 'claude-code', status: 'ok' }],
    });
    // Both agents fix the task in both arms: no effect in either, and no interaction.
    expect(byAgent.crossed.designs[0].interaction.estimate).toBe(0);
  });
});
