/**
 * The config an agent's own tests run the calculator task (test/fixtures.ts calculatorTask) with:
 * a control arm and a treatment arm that delivers `instructions` (fixtures/<instructions>), the
 * real agent against its scripted model, each attempt verified.
 */
export interface FixAddConfig {
  adapter: string;
  model: string;
  /** The instruction file the treatment delivers, read from fixtures/. */
  instructions: string;
  /** The fake model's script (a file of the project). */
  script: string;
  /** local (egress open) or a sandbox backend (egress none), unless `sandbox` says otherwise. */
  backend: string;
  sandbox?: string;
  /** The arms as YAML flow maps, when not the plain control and the `instructions` treatment. */
  control?: string;
  treatment?: string;
  turns?: number;
  wallSeconds?: number;
}

export function fixAddConfig(o: FixAddConfig): string {
  const sandbox = o.sandbox ?? (o.backend === 'local' ? '{ backend: local, egress: open }' : `{ backend: ${o.backend}, egress: none }`);
  return `steps:
  materialize: { kind: materialize, matrix: { task: [fix-add] } }
  attempts:
    kind: run
    needs: [materialize]
    matrix: { task: [fix-add], arm: [control, treatment], rep: 1 }
    agent: { adapter: ${o.adapter}, model: ${o.model} }
    arms:
      control: ${o.control ?? '{}'}
      treatment: ${o.treatment ?? `{ files: { ${o.instructions}: fixtures/${o.instructions} } }`}
    limits: { turns: ${o.turns ?? 6}, wall_seconds: ${o.wallSeconds ?? 180} }
    sandbox: ${sandbox}
    model: { fake_script: ${o.script} }
  verify:
    kind: verify
    needs: [materialize, attempts]
    matrix: { task: [fix-add], arm: [control, treatment], rep: 1 }
    sandbox: ${sandbox}
`;
}
