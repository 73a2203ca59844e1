import { existsSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { codexBinary } from '../agents/codex.js';
import { calculatorTask } from './fixtures.js';
import { Rig } from './rig.js';
import { fixAddConfig } from './fix-add-config.js';

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

const config = (backend: string, sandbox?: string) =>
  fixAddConfig({
    adapter: 'codex',
    model: 'gpt-fake',
    instructions: 'AGENTS.md',
    script: 'fixtures/codex.script.json',
    backend,
    wallSeconds: 120,
    ...(sandbox ? { sandbox } : {}),
  });

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
