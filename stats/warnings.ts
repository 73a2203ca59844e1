/** The report's headline warnings: what a reader must see before any verdict. */
import type { ArmMetrics, AttemptRecord, HeadlineWarning } from './types.js';
import { infraCauses } from './arm-metrics.js';

/** Providers whose agents talk to a model: an accepted attempt of theirs without tokens did not really run. */
const MODEL_PROVIDERS = new Set(['anthropic', 'openai']);

export function headlineWarnings(arms: readonly ArmMetrics[], byArm: ReadonlyMap<string, readonly AttemptRecord[]>): HeadlineWarning[] {
  const out: HeadlineWarning[] = [];
  const total = arms.reduce((n, a) => n + a.n_attempts, 0);
  const scripted = arms.reduce((n, a) => n + a.n_scripted, 0);
  if (scripted > 0) {
    out.push({
      kind: 'scripted',
      arm: null,
      message:
        `the outcomes were scripted: ${scripted} of ${total} attempts got their model replies from pairbench's scripted fake model, not from a model. ` +
        'The verdicts prove the machinery, not any agent or context; nothing was priced.',
    });
  }
  for (const a of arms) {
    const attempts = byArm.get(a.arm) ?? [];
    // An arm that restores the repository's own context files, on a task that has none, is the control there.
    const bare = [...new Set(attempts.filter((r) => r.restored === 0).map((r) => r.task))].sort();
    if (bare.length) {
      out.push({
        kind: 'no-own-files',
        arm: a.arm,
        message: `arm "${a.arm}" restores the repository's own context files, but ${bare.length} task(s) have none (${bare.slice(0, 5).join(', ')}${bare.length > 5 ? ', ...' : ''}): there the arm equals the control`,
      });
    }
    if (a.n_infra_errors > 0) {
      const causes = infraCauses(a);
      const [cause, n] = causes[0]!;
      out.push({
        kind: 'infra',
        arm: a.arm,
        message:
          `arm "${a.arm}": ${a.n_infra_errors} of ${a.n_tries} tries were infrastructure faults (excluded, never scored): ${cause}` +
          `${causes.length > 1 || n < a.n_infra_errors ? ` (${n} of them; ${causes.length - 1} other cause${causes.length === 2 ? '' : 's'})` : ''}`,
      });
    }
    if (a.n_agent_crashes > 0) {
      out.push({
        kind: 'agent-crash',
        arm: a.arm,
        message: `arm "${a.arm}": the agent crashed in ${a.n_agent_crashes} of ${a.n_accepted} accepted attempts (each scored 0)`,
      });
    }
    const modelDriven = attempts.some((r) => MODEL_PROVIDERS.has(r.agent.provider));
    if (modelDriven && a.n_without_tokens > 0) {
      out.push({
        kind: 'no-tokens',
        arm: a.arm,
        message: `arm "${a.arm}": ${a.n_without_tokens} of ${a.n_accepted} accepted attempts recorded no tokens: did the agent reach its model?`,
      });
    }
    const withTreatment = a.n_attempts - a.mechanism.unknown_delivered;
    if (withTreatment > 0 && a.mechanism.delivered === 0) {
      out.push({
        kind: 'no-delivery',
        arm: a.arm,
        message: `arm "${a.arm}": its treatment reached the model in none of its ${withTreatment} attempts: the arm did not test what it claims`,
      });
    }
  }
  return out;
}
