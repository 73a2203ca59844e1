import { existsSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { codexBinary } from '../agents/codex.js';
import { calculatorTask } from './fixtures.js';
import { Rig } from './rig.js';

// What only Codex does, the REAL CLI against the scripted fake model (OpenAI Responses API)
// through the recording gateway: its egress. What every adapter must do is test/agent-adapters.test.ts.
let rig: Rig;
beforeEach(() => {
  rig = new Rig();
  calculatorTask(rig.dir);
  rig.write('fixtures/AGENTS.md', 'Convention 51bd: arithmetic helpers use the obvious operator.\n');
  rig.write(
    'fixtures/codex.script.json',
    JSON.stringify({
      turns: [
        {
          tool_calls: [{ name: 'exec_command', input: { cmd: "sed -i 's/a - b/a + b/' src/add.mjs" } }],
          usage: { input_tokens: 900, output_tokens: 30, cache_read_input_tokens: 100 },
        },
        { text: 'Fixed.', usage: { input_tokens: 1000, output_tokens: 5 } },
      ],
    }),
  );
});
afterEach(() => rig.cleanup());

function config(backend: string, sandbox = backend === 'local' ? '{ backend: local, egress: open }' : `{ backend: ${backend}, egress: none }`): string {
  return `steps:
  materialize: { kind: materialize, matrix: { task: [fix-add] } }
  attempts:
    kind: run
    needs: [materialize]
    matrix: { task: [fix-add], arm: [control, treatment], rep: 1 }
    agent: { adapter: codex, model: gpt-fake }
    arms:
      control: {}
      treatment: { files: { AGENTS.md: fixtures/AGENTS.md } }
    limits: { turns: 6, wall_seconds: 120 }
    sandbox: ${sandbox}
    model: { fake_script: fixtures/codex.script.json }
  verify:
    kind: verify
    needs: [materialize, attempts]
    matrix: { task: [fix-add], arm: [control, treatment], rep: 1 }
    sandbox: ${sandbox}
`;
}

describe.skipIf(!existsSync(codexBinary()))('Codex end to end', () => {
  it('calls out to nothing but the model: under an allowlist its egress log is empty (no metrics flush to OpenAI at exit)', async () => {
    // The proxy logs every connection the sandbox tries. A release build of Codex flushes usage
    // metrics to OpenAI when it exits; with egress none that flush waits ~5 s for nothing.
    rig.write('bench.config.yaml', config('bubblewrap', '{ backend: bubblewrap, egress: allowlist, allow: ["example.invalid:443"] }'));
    const r = await rig.cli('run');
    expect(r.code, r.stderr).toBe(0);
    for (const arm of ['control', 'treatment']) {
      const result = JSON.parse(await rig.outputText(`attempts/fix-add/${arm}/1`, 'result.json'));
      expect(result.exit_reason).toBe('done');
      expect(result.sandbox.egress_mode).toBe('allowlist');
      expect(result.sandbox.egress_log).toEqual([]);
    }
  });
});
