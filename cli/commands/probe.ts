import { CONFIG_ERROR, defineCommand } from '../command.js';

export const probeCommand = defineCommand({
  name: 'probe',
  synopsis: 'probe [NODE]',
  summary: 'one attempt, no verifier: real token counts priced over the whole cohort',
  usage: 'pairbench probe [NODE] [options]',
  about: `Runs ONE attempt (the first of the run step, or NODE) with no verifier and no
certification, reads its real token counts from the gateway, and prints the
projected tokens, weighted cost, cost in USD (with its confidence) and wall time of
the whole cohort (tasks x arms x reps), before you fund it. Nothing is recorded as
an attempt.`,
  options: [],
  operands: { min: 0, max: 1, message: 'probe takes at most one NODE (a run node)' },
  config: true,
  usesStore: true,
  exits: `0 the attempt ran and the cohort is projected; 1 the attempt failed; ${CONFIG_ERROR}, or NODE is not a run node.`,
  async run({ io, json, operands, project }) {
    const controller = new AbortController();
    const onSignal = () => controller.abort(new Error('interrupted'));
    process.on('SIGINT', onSignal);
    try {
      const { runProbe } = await import('../probe.js');
      return await runProbe(project, io, json, operands[0], { signal: controller.signal });
    } finally {
      process.off('SIGINT', onSignal);
    }
  },
});
