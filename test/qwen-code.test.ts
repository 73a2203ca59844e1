import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { qwenCli } from '../agents/qwen-code.js';
import { calculatorTask } from './fixtures.js';
import { withFaults } from './provider-faults.js';
import { Rig } from './rig.js';
import { fixAddConfig } from './fix-add-config.js';

// What only Qwen Code does, the REAL CLI (npm optional dependency, run by this Node) against
// the scripted fake model (OpenAI Chat Completions): a broken stream, which it does not retry. What every adapter must do is test/agent-adapters.test.ts.
let rig: Rig;
beforeEach(() => {
  rig = new Rig();
  calculatorTask(rig.dir);
  rig.write('fixtures/QWEN.md', 'Convention 3e8a: arithmetic helpers use the obvious operator.\n');
  rig.write(
    'fixtures/qwen.script.json',
    JSON.stringify({
      turns: [
        {
          tool_calls: [{ name: 'run_shell_command', input: { command: "sed -i 's/a - b/a + b/' src/add.mjs", description: 'fix add' } }],
          usage: { input_tokens: 800, output_tokens: 30, cache_read_input_tokens: 100 },
        },
        { text: 'Fixed.', usage: { input_tokens: 1000, output_tokens: 5 } },
      ],
    }),
  );
});
afterEach(() => rig.cleanup());

const config = (backend: string, script = 'fixtures/qwen.script.json') =>
  fixAddConfig({ adapter: 'qwen-code', model: 'qwen-fake', instructions: 'QWEN.md', script, backend });

const AUDIT = `  audit:
    kind: audit
    needs: [attempts, verify]
    matrix: { task: [fix-add], arm: [control, treatment], rep: 1 }
`;

describe.skipIf(!existsSync(qwenCli()))('Qwen Code end to end', () => {
  it('a stream broken by an error event, which Qwen Code does not retry (it says "[API Error ...]" and exits 0): the provider failed, not the agent', async () => {
    rig.write(
      'fixtures/faults.script.json',
      withFaults(readFileSync(join(rig.dir, 'fixtures/qwen.script.json'), 'utf8'), [{ request: 1, stream_error: 'overloaded_error' }]),
    );
    rig.write('bench.config.yaml', config('local', 'fixtures/faults.script.json') + AUDIT);
    const r = await rig.cli('run', 'audit/fix-add/control', '--json');
    expect(r.code, r.stderr).toBe(0);
    const key = (JSON.parse(r.stdout).nodes as { node: string; key: string }[]).find((n) => n.node === 'audit/fix-add/control/1')!.key;
    const audit = rig.recordOutputJson(key, 'audit.json');
    expect(audit).toMatchObject({ admission: 'excluded', reason_code: 'infra-provider', infra_error: true });
    expect(audit.infra_cause).toBe('model provider: HTTP 200: error event mid-stream: server_error: overloaded_error (scripted, mid-stream)');
  });
});
