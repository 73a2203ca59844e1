// What a kind adds to its nodes' keys from outside the config (StepKind.annotate), checked on
// the graph itself: every node that starts a sandbox from a per-task image template carries the
// image it resolves to, whatever its kind (a step's own nodes and the checkpoints it adds,
// such as verify's canary calibrations). A new sandboxed kind without the hook fails here.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadProject } from '../cli/project.js';
import { anySpecOf } from '../steps/step-spec.js';
import { calculatorTask } from './fixtures.js';
import { Rig } from './rig.js';

let rig: Rig;
beforeAll(() => {
  rig = new Rig();
  calculatorTask(rig.dir);
});
afterAll(() => rig.cleanup());

const SANDBOX = '{ backend: docker, egress: none, image: "pairbench-none.{task}" }';

describe('image templates in the key', () => {
  // With certify (verify reads its calibrations) and without it (verify adds a calibrate checkpoint per task).
  for (const withCertify of [true, false]) {
    it(`every sandboxed node whose step names a templated image is annotated with it (${withCertify ? 'with' : 'without'} a certify step)`, async () => {
      rig.write(
        'bench.config.yaml',
        `steps:
  materialize: { kind: materialize, tasks: tasks, matrix: { task: [fix-add] } }
${withCertify ? `  certify: { kind: certify, tasks: tasks, needs: [materialize], matrix: { task: [fix-add] }, sandbox: ${SANDBOX} }\n` : ''}  attempts: { kind: run, tasks: tasks, needs: [materialize], matrix: &a { task: [fix-add], arm: [only], rep: 1 }, agent: { adapter: oracle }, arms: { only: {} }, sandbox: ${SANDBOX} }
  verify: { kind: verify, tasks: tasks, needs: [materialize, attempts], matrix: *a, sandbox: ${SANDBOX} }
`,
      );
      const loaded = await loadProject(`${rig.dir}/bench.config.yaml`, `${rig.dir}/.pairbench`, { PATH: process.env['PATH'] });
      if (!loaded.ok) throw new Error(loaded.error.map((d) => d.message).join('; '));
      const sandboxed = loaded.value.graph.nodes.filter((n) => n.kind.sandboxed);
      const kinds = new Set(sandboxed.map((n) => n.kind.name));
      expect(kinds).toContain('verify');
      if (!withCertify) expect(kinds).toContain('calibrate');
      const templated = sandboxed.filter((n) => {
        const spec = anySpecOf(n.step);
        return 'sandbox' in spec && spec.sandbox?.image?.includes('{');
      });
      expect(templated.length).toBe(sandboxed.length);
      const missing = templated.filter((n) => (n.annotation as { image?: { name?: string } } | undefined)?.image?.name !== 'pairbench-none.fix-add');
      expect(missing.map((n) => `${n.id} (${n.kind.name})`)).toEqual([]);
    });
  }
});
